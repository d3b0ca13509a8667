package switches

import (
	"strings"
	"testing"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// TestControllerTopologyBMv2: with the bmv2 target every switch gets its own
// Thrift port and the pipeline carries tor.json, without which the
// controller refuses to program BMv2.
func TestControllerTopologyBMv2(t *testing.T) {
	l, err := topo.Layout(scenario.Topology{Kind: scenario.KindLeafSpine, Leaves: 2, Spines: 1, HostsPerLeaf: 2}, "hb12345")
	if err != nil {
		t.Fatal(err)
	}
	s := &scenario.Scenario{Switch: scenario.Switch{Target: scenario.TargetBMv2, QueueDepthPkts: 64},
		Link: scenario.Link{Rate: 100e6, MTU: 1500}}
	thrift := map[string]int{}
	for i := range l.Switches {
		l.Switches[i].ThriftPort = 9100 + i
		thrift[l.Switches[i].Name] = 9100 + i
	}
	ct, err := ControllerTopology(l, s.Fabric(), s, "/abs/build/tor.json")
	if err != nil {
		t.Fatal(err)
	}
	if ct.Pipeline.BMv2JSON != "/abs/build/tor.json" {
		t.Errorf("pipeline bmv2_json %q", ct.Pipeline.BMv2JSON)
	}
	seen := map[int]bool{}
	for _, sw := range ct.Switches {
		if sw.Target != controller.TargetBMv2 || sw.BMv2.ThriftPort != thrift[sw.Name] || seen[sw.BMv2.ThriftPort] {
			t.Errorf("switch %s: target %v thrift port %d (want %d, distinct)", sw.Name, sw.Target, sw.BMv2.ThriftPort, thrift[sw.Name])
		}
		seen[sw.BMv2.ThriftPort] = true
	}
}

func TestSwitchBufferArgs(t *testing.T) {
	sw := scenario.Switch{QueueDepthBytes: 64000, Buffer: scenario.Buffer{SharedBytes: 2e6, Alpha: 0.5, PortPkts: 300}}
	got := strings.Join(BufferArgs(sw), " ")
	want := "--queue-depth-bytes 64000 --shared-buffer-bytes 2000000 --shared-alpha 0.5 --port-buffer-pkts 300"
	if got != want {
		t.Errorf("args %q, want %q", got, want)
	}
	if args := BufferArgs(scenario.Switch{QueueDepthPkts: 128}); len(args) != 0 {
		t.Errorf("no buffer gave args %v", args)
	}
	pfc := scenario.Switch{PFC: &scenario.PFC{Priorities: []int{3, 4}, XoffPkts: 16, XonPkts: 8, HeadroomPkts: 500}}
	got = strings.Join(BufferArgs(pfc), " ")
	want = "--pfc-priorities 3 --pfc-priorities 4 --pfc-xoff-pkts 16 --pfc-xon-pkts 8 --pfc-headroom-pkts 500"
	if got != want {
		t.Errorf("pfc args %q, want %q", got, want)
	}
}
