package testbed

import (
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/runfmt"
)

// hostRole names a host's role from whether it ran a client workload and
// whether it served.
func hostRole(client, server bool) string {
	switch {
	case client && server:
		return runfmt.RoleBoth
	case client:
		return runfmt.RoleClient
	}
	return runfmt.RoleServer
}

// hostCounters copies an agent's counters into a runfmt.HostCounters.
func hostCounters(host, role string, c *agentpb.Counters) runfmt.HostCounters {
	h := runfmt.HostCounters{Host: host, Role: role, Served: c.GetServed(), Transport: map[string]uint64{}}
	for k, v := range c.GetTransport() {
		h.Transport[k] = v
	}
	return h
}
