package tcprpc

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/hostagent/tcpcc"
)

// TestBPFCongestion: with homatb's BPF controls registered, "dctcp" and "nv"
// work by their scenario names, DCTCP negotiates ECN on both ends (the
// listener has it before listen) and the others do not.
func TestBPFCongestion(t *testing.T) {
	// Unless a run has it registered now.
	if avail, _ := tcpcc.Available(); !slices.Contains(avail, "homatb_dctcp") {
		if _, err := NewClient(Config{Congestion: "dctcp"}, nil); err == nil || !strings.Contains(err.Error(), "homatb_dctcp is not registered") {
			t.Errorf("dctcp unregistered: error %v, want one saying homatb_dctcp is not registered", err)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("registering BPF congestion controls needs root")
	}
	tests := []struct {
		cc  string
		ecn uint64 // connections with ECN after one call
	}{
		{"dctcp", 1},
		{"nv", 0},
		{"cubic", 0},
	}
	for _, tt := range tests {
		t.Run(tt.cc, func(t *testing.T) {
			if tcpcc.IsBPF(tt.cc) {
				reg, err := tcpcc.Register(tt.cc)
				switch {
				case errors.Is(err, os.ErrExist): // a run has it: use that
				case err != nil:
					t.Skipf("cannot register %s: %v", tt.cc, err)
				default:
					t.Cleanup(func() { reg.Close() })
				}
			}
			s := lengthServer(t, Config{Congestion: tt.cc})
			c := newClient(t, Config{Congestion: tt.cc})
			if _, err := c.Call(t.Context(), s.Addr().String(), request(100000, 0)); err != nil {
				t.Fatal(err)
			}
			if got := c.Stats()["tcp_ecn_conns"]; got != tt.ecn {
				t.Errorf("tcp_ecn_conns = %d, want %d", got, tt.ecn)
			}
		})
	}
}
