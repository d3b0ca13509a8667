package faults

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/simnet"
	"github.com/homatb/homatb/testbed/scenario"
)

// linkEnv records what fault injection asks of a run with one leaf-spine
// link, l1-p1 on l1's port 3; it has no agents.
type linkEnv struct {
	now    func() int64 // virtual time, for the log
	mu     sync.Mutex
	events []string
	// failMoves fails this many Reroutes (after logging them): a
	// controller that moved some switches' paths and not others.
	failMoves int
}

func (e *linkEnv) log(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, time.Duration(e.now()).String()+" "+fmt.Sprintf(format, args...))
}

func (e *linkEnv) Port(link string) (string, uint16, error) {
	if link != "l1-p1" {
		return "", 0, fmt.Errorf("no link %s", link)
	}
	return "l1", 3, nil
}

func (e *linkEnv) Reroute(_ context.Context, leaf, spine string, down bool) error {
	e.log("reroute %s-%s down=%v", leaf, spine, down)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failMoves > 0 {
		e.failMoves--
		return fmt.Errorf("switch s9: write cancelled")
	}
	return nil
}

func (e *linkEnv) SetFault(_ context.Context, sw string, fs switchstats.FaultSetting) error {
	down := ""
	if fs.DownFor != nil {
		down = *fs.DownFor
	}
	e.log("fault %s:%d down_for=%s", sw, fs.Port, down)
	return nil
}

func (e *linkEnv) Agent(string) Agent                         { return nil }
func (e *linkEnv) Down(string) bool                           { return false }
func (e *linkEnv) Kill(context.Context, string) (bool, error) { return false, nil }
func (e *linkEnv) Restart(context.Context, string, *agentpb.Workload) error {
	return nil
}
func (e *linkEnv) StartAgent(context.Context, string) error { return nil }
func (e *linkEnv) RecordsPath(string) string                { return "" }

// TestSwitchLinkDownMovesPaths: a down window on a leaf-spine link drops at
// the leaf's port and has the controller move the paths off the link at
// its start and back at its end, on the scheduler's clock (virtual time
// here); Clear takes back a link whose window the experiment cut short,
// and a fault due after End does not apply.
func TestSwitchLinkDownMovesPaths(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		name      string
		wait      int64
		failMoves int // the first Reroutes that fail
		want      []string
		warnings  int
	}{
		{"whole window", 150 * ms, 0, []string{"10ms fault l1:3 down_for=50ms", "10ms reroute l1-p1 down=true", "60ms reroute l1-p1 down=false", "200ms fault l1:3 down_for=0s"}, 0},
		{"cut short", 30 * ms, 0, []string{"10ms fault l1:3 down_for=50ms", "10ms reroute l1-p1 down=true", "200ms reroute l1-p1 down=false", "200ms fault l1:3 down_for=0s"}, 0},
		{"ended before", 5 * ms, 0, nil, 0},
		// A move off the link that failed partway is undone by Clear all
		// the same, and one back that failed is tried again there.
		{"move off failed", 150 * ms, 1, []string{"10ms fault l1:3 down_for=50ms", "10ms reroute l1-p1 down=true", "60ms reroute l1-p1 down=false", "200ms fault l1:3 down_for=0s"}, 1},
		{"move off failed, cut short", 30 * ms, 1, []string{"10ms fault l1:3 down_for=50ms", "10ms reroute l1-p1 down=true", "200ms reroute l1-p1 down=false", "200ms fault l1:3 down_for=0s"}, 1},
		{"moves failed", 150 * ms, 2, []string{"10ms fault l1:3 down_for=50ms", "10ms reroute l1-p1 down=true", "60ms reroute l1-p1 down=false", "200ms reroute l1-p1 down=false", "200ms fault l1:3 down_for=0s"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q simnet.Clock
			env := &linkEnv{now: q.Now, failMoves: tc.failMoves}
			f := scenario.Fault{Link: "l1-p1", Down: &scenario.DownWindow{At: scenario.Duration(10 * time.Millisecond), For: scenario.Duration(50 * time.Millisecond)}}
			epoch := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
			x := Experiment{Experiment: &scenario.Experiment{Scenario: &scenario.Scenario{Faults: []scenario.Fault{f}}}, Start: epoch}
			fr, notes, err := Start(context.Background(), env, x, driver.OnQueue(&q, epoch.UnixNano()), slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) != 1 || notes[0] != "fault injected: link l1-p1 down at 10ms into the measurement for 50ms (the controller moves the paths off it and back)" {
				t.Errorf("notes %q", notes)
			}
			q.Run(tc.wait)
			fr.End()
			q.Run(200 * ms) // what End cancelled does not run; Clear then
			fr.Clear(context.Background())
			env.mu.Lock()
			got := slices.Clone(env.events)
			env.mu.Unlock()
			if !slices.Equal(got, tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			if w := fr.Warnings(); len(w) != tc.warnings {
				t.Errorf("warnings %q, want %d", w, tc.warnings)
			}
		})
	}
}
