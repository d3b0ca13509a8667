package testbed

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// virtualTimeline is a timeline whose experiment is 5 ms into its 20 ms
// of virtual time.
type virtualTimeline struct{ timeline }

func (virtualTimeline) Progress() (done, total time.Duration, events uint64, ok bool) {
	return 5 * time.Millisecond, 20 * time.Millisecond, 2_500_000, true
}

// TestHeartbeat: a simulated experiment says how far it has gone in
// virtual time every interval until stopped; an emulated one (the wall
// clock) says nothing.
func TestHeartbeat(t *testing.T) {
	var buf bytes.Buffer
	r := &run{time: virtualTimeline{}, prog: newProgress(&buf, nil)}
	stop := r.heartbeat("ring", 5*time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	stop()
	lines := strings.Count(buf.String(), "\n")
	want := "  ring: 5ms of 20ms simulated (25%), 2.5 million events in "
	if lines < 2 || !strings.HasPrefix(buf.String(), want) {
		t.Errorf("heartbeat wrote %q (%d lines): want at least 2 lines starting %q", buf.String(), lines, want)
	}
	after := buf.Len()
	time.Sleep(15 * time.Millisecond)
	if buf.Len() != after {
		t.Errorf("heartbeat wrote after it was stopped")
	}
	var wall bytes.Buffer
	r = &run{time: &wallClock{}, prog: newProgress(&wall, nil)}
	stop = r.heartbeat("ring", time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	stop()
	if wall.Len() != 0 {
		t.Errorf("an emulated experiment's heartbeat wrote %q, want nothing", wall.String())
	}
}
