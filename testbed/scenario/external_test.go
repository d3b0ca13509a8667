package scenario

import (
	"errors"
	"strings"
	"testing"
)

// externalTopology puts good's four hosts on machines behind one P4 switch.
const externalTopology = `topology:
  kind: external
  external:
    certs: /etc/homatb/run1
    hosts:
      - {name: h1, address: 10.0.0.1/24, mac: "02:00:00:00:00:01", agent: "192.168.1.11:7100"}
      - {name: h2, address: 10.0.0.2/24, mac: "02:00:00:00:00:02", agent: "192.168.1.12:7100"}
      - {name: h3, address: 10.0.0.3, mac: "02:00:00:00:00:03", agent: "192.168.1.13:7100"}
      - {name: h4, address: 10.0.0.4/24, mac: "02:00:00:00:00:04", agent: "192.168.1.14:7100"}
    switches:
      - name: tor
        p4runtime: 192.168.1.2:9559
        device_id: 1
        target: stratum
        ports: {h1: 1, h2: 2, h3: 3, h4: 4}
link:
  rate: 10Gbit
`

// goodExternal is good's traffic on externalTopology.
var goodExternal = strings.Replace(good, "topology:\n  kind: star\n  hosts: 4\nlink:\n  rate: 100Mbit\n", externalTopology, 1)

func TestGoodExternalScenario(t *testing.T) {
	if !strings.Contains(goodExternal, "kind: external") {
		t.Fatal("test broken: good's topology not replaced")
	}
	src, err := Parse("ext.yaml", []byte(goodExternal))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.Base.Topology.HostNames(), " "); got != "h1 h2 h3 h4" {
		t.Errorf("hosts %q, want h1 h2 h3 h4", got)
	}
	if a, err := ParseHostAddress(plan.Base.Topology.External.Hosts[2].Address); err != nil || a.Bits() != 24 {
		t.Errorf("address without prefix: %v %v, want /24", a, err)
	}
}

// TestBadExternalScenarios breaks goodExternal in one place each and
// checks the error names the field.
func TestBadExternalScenarios(t *testing.T) {
	tests := []struct {
		name, from, to, field, msg string
	}{
		{"no section", "  external:\n", "  externals:\n", "topology.externals", "unknown field"},
		{"host name", "{name: h4,", "{name: node4,", "topology.external.hosts[3].name", "expected h1, h2"},
		{"duplicate host", "{name: h4,", "{name: h3,", "topology.external.hosts[3].name", "listed twice"},
		{"address", "address: 10.0.0.4/24", "address: fe80::1", "topology.external.hosts[3].address", "IPv4"},
		{"duplicate address", "address: 10.0.0.4/24", "address: 10.0.0.1/24", "topology.external.hosts[3].address", "already belongs to h1"},
		{"mac", `mac: "02:00:00:00:00:04"`, `mac: "zz"`, "topology.external.hosts[3].mac", "MAC"},
		{"agent", `agent: "192.168.1.14:7100"`, `agent: "192.168.1.14"`, "topology.external.hosts[3].agent", "host:port"},
		{"duplicate agent", `agent: "192.168.1.14:7100"`, `agent: "192.168.1.13:7100"`, "topology.external.hosts[3].agent", "already belongs to h3"},
		{"no certs", "    certs: /etc/homatb/run1\n", "", "topology.external.certs", "homatb certs"},
		{"target", "target: stratum", "target: tofino", "topology.external.switches[0].target", `"stratum"`},
		{"p4runtime", "p4runtime: 192.168.1.2:9559", "p4runtime: 192.168.1.2", "topology.external.switches[0].p4runtime", "host:port"},
		{"port range", "h4: 4}", "h4: 64}", "topology.external.switches[0].ports.h4", "1 to 63"},
		{"port twice", "h4: 4}", "h4: 3}", "topology.external.switches[0].ports.h4", "port 3 already belongs to h3"},
		{"port of no host", "h4: 4}", "h4: 4, h9: 9}", "topology.external.switches[0].ports.h9", "no host h9"},
		{"host without port", ", h4: 4}", "}", "topology.external.switches[0].ports", "h4 has no port"},
		{"admin socket off embedded", "target: stratum", "target: stratum\n        admin_socket: /run/s1.sock", "topology.external.switches[0].admin_socket", "embedded"},
		{"phase host", "clients: [h2-h3]", "clients: [h2-h5]", "phases[0].clients", "h5"},
		{"rate", "rate: 10Gbit", "rate: 800Gbit", "link.rate", "400Gbit"},
		{"hosts count on external", "kind: external\n", "kind: external\n  hosts: 4\n", "topology.kind", "not hosts"},
		{"external on star", "kind: external\n", "kind: star\n  hosts: 4\n", "topology.external", "belongs to kind external"},
		{"host queue", "link:\n", "host_qdisc: pacer\nlink:\n", "host_qdisc", "external topology's hosts are not"},
		{"pfabric by hand", "  - name: tcp\n", "  - name: pfabric\n", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(goodExternal, tc.from) {
				t.Fatalf("test broken: %q not in goodExternal", tc.from)
			}
			src, err := Parse("ext.yaml", []byte(strings.Replace(goodExternal, tc.from, tc.to, 1)))
			if err == nil {
				_, err = src.Plan(Options{})
			}
			if tc.field == "" {
				// pFabric behind a P4 switch is fine.
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			var e *Error
			found := false
			for _, one := range allErrors(err) {
				if errors.As(one, &e) && e.Field == tc.field && strings.Contains(e.Msg, tc.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("want an error on %s containing %q, got:\n%v", tc.field, tc.msg, err)
			}
		})
	}
}

// TestExternalWithoutSwitch: a switch set by hand has no port modes, so
// the transports that need them are refused, others run.
func TestExternalWithoutSwitch(t *testing.T) {
	noSwitch := goodExternal[:strings.Index(goodExternal, "    switches:")] + goodExternal[strings.Index(goodExternal, "link:"):]
	src, err := Parse("ext.yaml", []byte(noSwitch))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Plan(Options{}); err != nil {
		t.Fatalf("homa and tcp through a switch set by hand: %v", err)
	}
	src, err = Parse("ext.yaml", []byte(strings.Replace(noSwitch, "  - name: tcp\n", "  - name: ndp\n", 1)))
	if err == nil {
		_, err = src.Plan(Options{})
	}
	if err == nil || !strings.Contains(err.Error(), "transports[1].name") || !strings.Contains(err.Error(), "port modes") {
		t.Errorf("ndp without a P4 switch: got %v, want an error on transports[1].name", err)
	}
}

// allErrors flattens an Errors list.
func allErrors(err error) []error {
	var es Errors
	if errors.As(err, &es) {
		return es.Unwrap()
	}
	return []error{err}
}
