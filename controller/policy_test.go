package controller

import (
	"reflect"
	"testing"

	"github.com/homatb/homatb/controller/p4rtclient"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

func TestDSCPPolicies(t *testing.T) {
	cs := func(qs ...uint8) map[uint8]uint8 {
		m := map[uint8]uint8{}
		for p, q := range qs {
			m[uint8(p<<3)] = q
		}
		return m
	}
	tests := []struct {
		spec    string
		want    map[uint8]uint8
		wantErr bool
	}{
		{"default", cs(0, 1, 2, 3, 4, 5, 6, 7), false},
		{"collapse:8", cs(0, 1, 2, 3, 4, 5, 6, 7), false},
		{"collapse:4", cs(0, 0, 1, 1, 2, 2, 3, 3), false},
		{"collapse:2", cs(0, 0, 0, 0, 1, 1, 1, 1), false},
		{"collapse:1", cs(0, 0, 0, 0, 0, 0, 0, 0), false},
		{"collapse:3", nil, true},
		{"46=7, 0=0, 0x0a=3", map[uint8]uint8{46: 7, 0: 0, 10: 3}, false},
		{"46=8", nil, true},
		{"64=1", nil, true},
		{"46=1,46=2", nil, true},
		{"46", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseDSCPPolicy(tt.spec)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseDSCPPolicy(%q) error = %v, want error %v", tt.spec, err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseDSCPPolicy(%q) = %v, want %v", tt.spec, got, tt.want)
			}
		})
	}
}

func TestSwitchEntriesFollowPolicy(t *testing.T) {
	topo := &Topology{Switches: []Switch{sw("s1", 1)}, Hosts: []Host{host("h1", "s1", 1, 1), host("h2", "s1", 2, 2)}}
	count := func(es []p4rtclient.Entry) map[string]int {
		m := map[string]int{}
		for _, e := range es {
			m[e.Table]++
		}
		return m
	}
	tests := []struct {
		name   string
		policy Policy
		want   map[string]int
	}{
		{"zero policy is the default", Policy{}, map[string]int{tableIPv4LPM: 2, tableDSCPToQueue: 8, tableARPProxy: 2}},
		{"ecn and no arp", Policy{ECNThresholdPkts: 30, NoARPProxy: true}, map[string]int{tableIPv4LPM: 2, tableDSCPToQueue: 8, tableECNConfig: 2}},
		{"explicit map", Policy{DSCPQueue: map[uint8]uint8{46: 7}}, map[string]int{tableIPv4LPM: 2, tableDSCPToQueue: 1, tableARPProxy: 2}},
		{"red profile", Policy{ECNRED: ECNProfile{KminPkts: 5, KmaxPkts: 40, Pmax: 0.1}}, map[string]int{tableIPv4LPM: 2, tableDSCPToQueue: 8, tableARPProxy: 2, tableECNConfig: 2}},
	}
	s := torSchema(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, err := topo.switchEntries("s1", tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			if got := count(es); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("entries per table = %v, want %v", got, tt.want)
			}
			if _, err := s.Updates(p4v1.Update_INSERT, es...); err != nil {
				t.Fatalf("entries do not encode against tor.p4: %v", err)
			}
		})
	}
	if _, err := topo.switchEntries("s1", Policy{ECNThresholdPkts: 1 << 19}); err == nil {
		t.Error("an ECN threshold wider than 19 bits was accepted")
	}
	for _, bad := range []Policy{
		{ECNThresholdPkts: 20, ECNRED: ECNProfile{KminPkts: 5, KmaxPkts: 40, Pmax: 0.1}},
		{ECNRED: ECNProfile{KminPkts: 40, KmaxPkts: 40, Pmax: 0.1}},
		{ECNRED: ECNProfile{KminPkts: 5, KmaxPkts: 40, Pmax: 1.5}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("policy %+v was accepted", bad.ECNRED)
		}
	}
}
