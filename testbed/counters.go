package testbed

import (
	"github.com/homatb/homatb/hostagent/agentpb"
)

// Host roles in an experiment, as recorded in manifest.json.
const (
	RoleClient = "client"
	RoleServer = "server"
	// RoleBoth is a host that sends RPCs and serves them (all-to-all
	// traffic): one transport instance carries both, so its counters cannot
	// be split between the two.
	RoleBoth = "client+server"
)

// HostCounters is one host's share of an experiment: its role and its
// agent's counters at the end of the measurement.
type HostCounters struct {
	Host string `json:"host"`
	Role string `json:"role"`
	// Served counts RPCs this host's servers answered.
	Served uint64 `json:"served"`
	// Transport is the host's transport counters over the experiment (the
	// agent builds a fresh transport per experiment).
	Transport map[string]uint64 `json:"transport"`
}

// hostRole names a host's role from whether it ran a client workload and
// whether it served.
func hostRole(client, server bool) string {
	switch {
	case client && server:
		return RoleBoth
	case client:
		return RoleClient
	}
	return RoleServer
}

// hostCounters copies an agent's counters into a HostCounters.
func hostCounters(host, role string, c *agentpb.Counters) HostCounters {
	h := HostCounters{Host: host, Role: role, Served: c.GetServed(), Transport: map[string]uint64{}}
	for k, v := range c.GetTransport() {
		h.Transport[k] = v
	}
	return h
}
