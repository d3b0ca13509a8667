package controller

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/p4/pipeline"
	"github.com/homatb/homatb/p4/target/targettest"
)

func TestParsePortMode(t *testing.T) {
	// wantErr is a substring of the error, "" for none.
	tests := []struct {
		in, wantErr string
		want        PortMode
	}{
		{in: "strict_priority", want: PortMode{Mode: ModeStrictPriority}},
		{in: "rank_order:30000@hosts", want: PortMode{Mode: ModeRankOrder, BufferBytes: 30000, Ports: PortsHosts}},
		{in: "trim_above:8", want: PortMode{Mode: ModeTrimAbove, ThresholdPkts: 8}},
		{in: "trim_above:8@uplinks", want: PortMode{Mode: ModeTrimAbove, ThresholdPkts: 8, Ports: PortsUplinks}},
		{in: "rank_order", wantErr: "buffer_bytes > 0"},
		{in: "rank_order:0", wantErr: "buffer_bytes > 0"},
		{in: "trim_above:70000", wantErr: "16 bits"},
		{in: "trim_above:x", wantErr: "argument"},
		{in: "strict_priority:3", wantErr: "no argument"},
		{in: "fifo", wantErr: "want"},
		{in: "rank_order:1000@spines", wantErr: "ports"},
	}
	for _, tc := range tests {
		got, err := ParsePortMode(tc.in)
		if errorChecked(t, tc.in, err, tc.wantErr) {
			continue
		}
		if got != tc.want {
			t.Errorf("ParsePortMode(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// errorChecked reports whether err needs no further test: it fails the
// test when err is not what want describes (a substring; "" means no
// error) and returns true when an error was expected or got.
func errorChecked(t *testing.T, what string, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", what, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: error %v, want one containing %q", what, err, want)
	}
	return want != "" || err != nil
}

// twoSwitchTopology is s1 (embedded) and s2 (BMv2) joined by port 4 of
// each, with hosts h1 (s1 port 1), h2 (s1 port 2) and h3 (s2 port 1). Its
// addresses are placeholders: tests only compute its entries.
func twoSwitchTopology() *Topology {
	topo := &Topology{
		Switches: []Switch{{Name: "s1", Address: "127.0.0.1:1"}, {Name: "s2", Address: "127.0.0.1:2", Target: TargetBMv2}},
		Links:    []Link{{A: "s1", APort: 4, B: "s2", BPort: 4}},
	}
	for i, at := range []struct {
		sw   string
		port int
	}{{"s1", 1}, {"s1", 2}, {"s2", 1}} {
		topo.Hosts = append(topo.Hosts, Host{Name: "h" + string(rune('1'+i)), IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}),
			MAC: MAC{2, 0, 0, 0, 0, byte(i + 1)}, Switch: at.sw, Port: at.port})
	}
	return topo
}

func TestPortModeEntries(t *testing.T) {
	rank := PortMode{Mode: ModeRankOrder, BufferBytes: 30000}
	trim := PortMode{Mode: ModeTrimAbove, ThresholdPkts: 8}
	tests := []struct {
		name    string
		sw      string
		modes   []PortMode
		want    map[int]string // port -> action
		wantErr string
	}{
		{name: "none", sw: "s1", want: map[int]string{}},
		{name: "all ports", sw: "s1", modes: []PortMode{rank},
			want: map[int]string{1: actionRankOrder, 2: actionRankOrder, 4: actionRankOrder}},
		{name: "hosts and uplinks apart", sw: "s1",
			modes: []PortMode{{Mode: ModeTrimAbove, ThresholdPkts: 8, Ports: PortsHosts}, {Mode: ModeStrictPriority, Ports: PortsUplinks}},
			want:  map[int]string{1: actionTrimAbove, 2: actionTrimAbove, 4: actionStrictPriority}},
		{name: "a port in two modes", sw: "s1", modes: []PortMode{trim, {Mode: ModeStrictPriority, Ports: PortsHosts}},
			wantErr: "two port modes"},
		{name: "trim on bmv2", sw: "s2", modes: []PortMode{trim}, want: map[int]string{1: actionTrimAbove, 4: actionTrimAbove}},
		{name: "rank order on bmv2", sw: "s2", modes: []PortMode{rank}, wantErr: "embedded target"},
	}
	topo := twoSwitchTopology()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			all, err := topo.switchEntries(tc.sw, Policy{PortModes: tc.modes})
			if errorChecked(t, tc.sw, err, tc.wantErr) {
				return
			}
			got := map[int]string{}
			for _, e := range all {
				if e.Table != tablePortMode {
					continue
				}
				port, err := e.Match[0].Value.Uint64()
				if err != nil || e.Match[0].Field != fieldEgressSpec {
					t.Fatalf("port_mode entry match %+v: %v", e.Match[0], err)
				}
				got[int(port)] = e.Action
			}
			if len(got) != len(tc.want) {
				t.Fatalf("port modes %v, want %v", got, tc.want)
			}
			for p, a := range tc.want {
				if got[p] != a {
					t.Errorf("port %d: %q, want %q", p, got[p], a)
				}
			}
		})
	}
}

// TestProgramPortModes programs pFabric's mode on every host port of an
// embedded switch over P4Runtime, reads it back, checks the pipeline's
// verdicts carry it, then syncs to NDP's mode and back to the default.
func TestProgramPortModes(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	topo := oneSwitchTopology(t, sw)
	pfabric := Policy{PortModes: []PortMode{{Mode: ModeRankOrder, BufferBytes: 30000, Ports: PortsHosts}}}
	f := programmed(t, topo, pfabric) // Program verifies the read back
	ctx := testContext(t)
	verdict := func() pipeline.Verdict {
		var v pipeline.Verdict
		sw.Pipeline().Ingress(ipv4Frame(netip.MustParseAddr("10.0.0.2"), 5<<5, 10), 1, &v)
		return v
	}
	if v := verdict(); v.Mode != dataplane.ModeRankOrder || v.ModeArg != 30000 || v.Queue != 0 || v.Rank != dataplane.RankMax {
		t.Errorf("pfabric verdict %+v, want rank_order 30000, queue 0, rank max", v)
	}
	ndp := Policy{PortModes: []PortMode{{Mode: ModeTrimAbove, ThresholdPkts: 8}}}
	if err := f.Sync(ctx, ndp); err != nil {
		t.Fatal(err)
	}
	if v := verdict(); v.Mode != dataplane.ModeTrimAbove || v.ModeArg != 8 || v.Queue != 5 {
		t.Errorf("ndp verdict %+v, want trim_above 8, queue 5", v)
	}
	if err := f.Sync(ctx, Policy{}); err != nil {
		t.Fatal(err)
	}
	if v := verdict(); v.Mode != dataplane.ModeStrictPriority || v.Queue != 5 {
		t.Errorf("default verdict %+v, want strict priority, queue 5", v)
	}
	if err := f.Verify(ctx, Policy{}); err != nil {
		t.Error(err)
	}
}
