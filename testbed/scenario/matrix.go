package scenario

import (
	"fmt"

	"github.com/homatb/homatb/workloads"
)

// checkMatrix checks a connection-matrix phase p: its file parses (errors
// name the matrix's FILE:LINE), it has a host per node, every flow fits
// every transport, and it takes none of the client-server or collective
// keys. It returns the matrix, nil when it does not parse.
func (c *checker) checkMatrix(s *Scenario, p string, ph Phase) *workloads.Matrix {
	keys := clientKeys(ph)
	if ph.Collective != nil {
		keys = append(keys, "collective")
	}
	for _, key := range keys {
		c.errorf(p+"."+key, "a connection-matrix phase takes connection_matrix and hosts, not %s", key)
	}
	m, err := workloads.LoadMatrix(ph.ConnectionMatrix)
	if err != nil {
		c.errorf(p+".connection_matrix", "%v", err)
		return nil
	}
	if _, err := s.MatrixHosts(ph, m); err != nil {
		c.errorf(p+".hosts", "%v", err)
		return m
	}
	for _, f := range m.Flows {
		for j, t := range s.Transports {
			if limit := t.MaxMessage(); f.Size > int64(limit) {
				c.errorf(p+".connection_matrix", "%s:%d: flow %d is %d bytes, but %s (transports[%d]) carries at most %d in one message",
					m.File, f.Line, f.ID, f.Size, t.Config(), j, limit)
				return m
			}
		}
	}
	return m
}

// MatrixHosts maps a connection-matrix phase's nodes to hosts: node i is
// the i-th of the phase's hosts, or of the topology's when it names none.
func (s *Scenario) MatrixHosts(ph Phase, m *workloads.Matrix) ([]string, error) {
	all := s.Topology.HostNames()
	hosts := all
	if len(ph.Hosts) > 0 {
		var err error
		if hosts, err = distinctHosts(ph.Hosts, all, "the matrix's nodes"); err != nil {
			return nil, err
		}
	}
	out, err := m.Hosts(hosts)
	if err != nil {
		return nil, fmt.Errorf("%w (the phase's hosts map nodes to hosts in order)", err)
	}
	return out, nil
}
