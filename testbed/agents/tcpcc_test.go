package agents

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/testbed/scenario"
)

func tcpTransport(cc string) scenario.Transport {
	return scenario.Transport{Name: scenario.TransportTCP, TCP: scenario.TCPParams{Congestion: cc}}
}

func TestBPFCongestion(t *testing.T) {
	plan := &scenario.Plan{
		Base: &scenario.Scenario{Transports: []scenario.Transport{
			tcpTransport("cubic"), tcpTransport("dctcp"), {Name: scenario.TransportHoma},
		}},
		Experiments: []scenario.Experiment{{Transport: tcpTransport("nv")}, {Transport: tcpTransport("dctcp")}},
	}
	if got, want := BPFCongestion(plan), []string{"dctcp", "nv"}; !slices.Equal(got, want) {
		t.Errorf("BPFCongestion = %v, want %v", got, want)
	}
}

func TestCongestionProblems(t *testing.T) {
	tests := []struct {
		name     string
		cc       string
		root     bool   // registers a BPF control: needs root
		wantFix  string // "" for no problem
		wantWhat string
	}{
		{name: "kernel's", cc: "cubic"},
		{name: "missing module", cc: "vegas", wantFix: "modprobe tcp_vegas", wantWhat: "not available (have: "},
		{name: "bpf dctcp", cc: "dctcp", root: true},
		{name: "bpf nv", cc: "nv", root: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skip("registering a BPF congestion control needs root")
			}
			plan := &scenario.Plan{Base: &scenario.Scenario{Transports: []scenario.Transport{tcpTransport(tt.cc)}}}
			ps := CongestionProblems(plan)
			if tt.wantFix == "" {
				if len(ps) != 0 {
					t.Errorf("problems %v, want none", ps)
				}
				return
			}
			if len(ps) != 1 || ps[0].Fix != tt.wantFix || !strings.Contains(ps[0].What, tt.wantWhat) {
				t.Errorf("problems %v, want one with fix %q saying %q", ps, tt.wantFix, tt.wantWhat)
			}
		})
	}
}
