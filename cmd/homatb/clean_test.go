package main

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/hostagent/tcpcc"
	"github.com/homatb/homatb/testbed/cleanup"
)

// TestCleanCongestion: clean unregisters a BPF congestion control left
// registered, but not while a live run (which may use it) is kept.
func TestCleanCongestion(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("registering a BPF congestion control needs root")
	}
	reg, err := tcpcc.Register("nv")
	if errors.Is(err, os.ErrExist) {
		t.Skip("homatb_nv is registered by a homatb run now")
	}
	if err != nil {
		t.Skipf("cannot register homatb_nv: %v", err)
	}
	defer reg.Close()
	registered := func() bool {
		avail, _ := tcpcc.Available()
		return slices.Contains(avail, "homatb_nv")
	}

	live := []cleanup.Leftovers{{Tag: "hb00000", Alive: true}}
	if n, err := cleanCongestion(io.Discard, live, false, false); n != 0 || err != nil || !registered() {
		t.Fatalf("with a live run: removed %d, %v; registered %v, want it kept", n, err, registered())
	}
	var out strings.Builder
	if _, err := cleanCongestion(&out, nil, false, true); err != nil || !registered() || !strings.Contains(out.String(), "homatb_nv") {
		t.Fatalf("dry run: %v, registered %v, output %q", err, registered(), out.String())
	}
	if n, err := cleanCongestion(io.Discard, live, true, false); n < 1 || err != nil || registered() {
		t.Errorf("forced: removed %d, %v; registered %v, want it gone", n, err, registered())
	}
}
