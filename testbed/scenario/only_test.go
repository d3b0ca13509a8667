package scenario

import (
	"strings"
	"testing"
)

func TestOnly(t *testing.T) {
	src := `name: o
topology: {kind: star, hosts: 3}
link: {rate: 10Mbit}
switch: {ecn_threshold_pkts: 20}
transports:
  - name: homa
  - name: tcp
    tcp: {congestion: cubic}
  - name: tcp
    label: dctcp
    tcp: {congestion: dctcp}
phases:
  - {name: p, clients: [h2], servers: [h1], sizes: fixed:1000, arrivals: poisson, rate_rps: 10}
warmup: 1s
duration: 2s
`
	tests := []struct {
		names   []string
		want    []string // configurations left
		wantErr string
	}{
		{[]string{"homa"}, []string{"homa"}, ""},
		{[]string{"tcp"}, []string{"tcp-cubic", "tcp-dctcp"}, ""},
		{[]string{"homa", "tcp-dctcp"}, []string{"homa", "tcp-dctcp"}, ""},
		{[]string{"ndp"}, nil, `no configuration of this scenario is "ndp" (it has homa, tcp-cubic, tcp-dctcp)`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.names, ","), func(t *testing.T) {
			s, err := Parse("o.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.Plan(Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = p.Only(tt.names)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tr := range p.Base.Transports {
				got = append(got, tr.Config())
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("transports %v, want %v", got, tt.want)
			}
			for _, e := range p.Experiments {
				if !strings.Contains(strings.Join(tt.want, " "), e.Transport.Config()) {
					t.Errorf("experiment %s of %s kept", e.Name, e.Transport.Config())
				}
			}
			if len(p.Experiments) != len(tt.want) {
				t.Errorf("%d experiments, want %d", len(p.Experiments), len(tt.want))
			}
		})
	}
}

// TestSimulateRates: rates beyond Mininet's shaper are valid for the
// simulator only.
func TestSimulateRates(t *testing.T) {
	src := `name: r
topology: {kind: star, hosts: 3}
link: {rate: 10Gbit}
transports:
  - name: homa
phases:
  - {name: p, clients: [h2], servers: [h1], sizes: fixed:1000, arrivals: poisson, rate_rps: 10}
duration: 1s
`
	for _, tc := range []struct {
		simulate bool
		wantErr  string
	}{
		{false, "link.rate: expected a rate from 1Mbit to 1Gbit"},
		{true, ""},
	} {
		s, err := Parse("r.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Plan(Options{Simulate: tc.simulate})
		if tc.wantErr == "" && err != nil {
			t.Errorf("simulate %v: %v", tc.simulate, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("simulate %v: err %v, want %q", tc.simulate, err, tc.wantErr)
		}
	}
}

// topologyScenario is a small valid scenario whose topology line is
// {kind: KIND, UPLINK} (line 2), for tests of topology keys.
const topologyScenario = `name: u
topology: {kind: KIND, UPLINK}
link: {rate: 100Mbit}
transports:
  - name: homa
phases:
  - {name: p, clients: [h2], servers: [h1], sizes: fixed:1000, arrivals: poisson, rate_rps: 10}
duration: 1s
`

// TestUplinkRate: uplinks of their own rate on a leaf-spine only, within
// the emulation's rates unless simulated.
func TestUplinkRate(t *testing.T) {
	base := topologyScenario
	for _, tc := range []struct {
		name, kind, uplink string
		simulate           bool
		wantErr            string
	}{
		{"leaf-spine at 400Mbit", "leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2", "uplink_rate: 400Mbit", false, ""},
		{"star has no uplinks", "star, hosts: 3", "uplink_rate: 400Mbit", false, "only a leaf-spine, fat-tree or rail topology has uplinks"},
		{"beyond the emulation", "leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2", "uplink_rate: 40Gbit", false, "expected a rate from 1Mbit to 1Gbit"},
		{"simulated at 40Gbit", "leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2", "uplink_rate: 40Gbit", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.NewReplacer("KIND", tc.kind, "UPLINK", tc.uplink).Replace(base)
			s, err := Parse("u.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.Plan(Options{Simulate: tc.simulate})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if f := p.Base.Fabric(); f.Uplink() != uint64(p.Base.Topology.UplinkRate) {
					t.Errorf("fabric uplink %d, want %d", f.Uplink(), uint64(p.Base.Topology.UplinkRate))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "topology.uplink_rate") {
				t.Errorf("err %v, want topology.uplink_rate: %q", err, tc.wantErr)
			}
		})
	}
}

// TestLoadBalancing: topology.load_balancing is spray or ecmp, on a
// leaf-spine only, and errors name the file, line and field.
func TestLoadBalancing(t *testing.T) {
	for _, tc := range []struct {
		name, kind, lb, wantErr string
	}{
		{"spray", "leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2", "spray", ""},
		{"ecmp", "leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2", "ecmp", ""},
		{"unknown", "leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2", "flowlet", `lb.yaml:2: topology.load_balancing: expected "spray" (per packet, the default) or "ecmp" (per flow), got "flowlet"`},
		{"star", "star, hosts: 3", "ecmp", "lb.yaml:2: topology.load_balancing: only a leaf-spine, fat-tree or rail topology has several paths to balance, not star"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.NewReplacer("KIND", tc.kind, "UPLINK", "load_balancing: "+tc.lb).Replace(topologyScenario)
			s, err := Parse("lb.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.Plan(Options{})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := p.Base.Topology.LoadBalancing; got != tc.lb {
					t.Errorf("load_balancing %q, want %q", got, tc.lb)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}
