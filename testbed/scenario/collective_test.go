package scenario

import (
	"strings"
	"testing"
)

// goodCollective is a valid scenario with a collective beside serving
// RPCs, which the bad cases below each break in one place.
const goodCollective = `name: c
topology:
  kind: star
  hosts: 4
link:
  rate: 100Mbit
transports:
  - name: homa
  - name: tcp
phases:
  - name: train
    hosts: [h1-h4]
    collective:
      kind: ring-allreduce
      bytes: 1MB
      iterations: 10
      compute: 2ms
      jitter: 100us
  - name: serve
    clients: [h1]
    servers: [h2]
    sizes: fixed:1000
    rate_rps: 100
duration: 2s
`

func TestGoodCollective(t *testing.T) {
	plan := mustPlan(t, goodCollective)
	ph := plan.Experiments[0].Scenario.Phases[0]
	hosts, err := plan.Base.CollectiveHosts(ph)
	if err != nil || strings.Join(hosts, ",") != "h1,h2,h3,h4" {
		t.Errorf("hosts %v (%v), want h1..h4 in order", hosts, err)
	}
	if c := ph.Collective; c.Kind != "ring-allreduce" || c.Bytes != 1_000_000 || c.Iterations != 10 || c.Compute.D().Microseconds() != 2000 || c.Jitter.D().Microseconds() != 100 {
		t.Errorf("collective %+v", c)
	}
}

func TestBadCollectives(t *testing.T) {
	wantBadEdits(t, goodCollective, []badEdit{
		{"unknown kind", "kind: ring-allreduce", "kind: tree", 14, "phases[0].collective.kind", `expected one of ring-allreduce, tree-allreduce, allgather, reduce-scatter, alltoall, incast-barrier, got "tree"`},
		{"too few bytes", "bytes: 1MB", "bytes: 100", 15, "phases[0].collective.bytes", "expected at least 32 bytes per host (128 bytes among 4 hosts), got 100"},
		{"step over homa's limit", "bytes: 1MB", "bytes: 8MB", 15, "phases[0].collective.bytes", "each step message is 2000000 bytes (bytes / 4 hosts), but homa (transports[0]) carries at most 1000000"},
		{"bytes not a size", "bytes: 1MB", "bytes: big", 15, "phases[0].collective.bytes", "expected a size"},
		{"no iterations", "iterations: 10", "iterations: -1", 16, "phases[0].collective.iterations", "expected 1 to 1000000 iterations, got -1"},
		{"compute beyond the run", "compute: 2ms", "compute: 1h", 17, "phases[0].collective.compute", "expected a compute time from 0 to the duration 2s, got 1h0m0s"},
		{"negative jitter", "jitter: 100us", "jitter: -1ms", 18, "phases[0].collective.jitter", "expected a jitter from 0"},
		{"negative window", "jitter: 100us", "jitter: 100us\n      window: -3", 19, "phases[0].collective.window", "expected 1 to 1048576 step messages in flight per member, or 0 for the kind's default, got -3"},
		{"one host", "hosts: [h1-h4]", "hosts: [h2]", 12, "phases[0].hosts", "expected at least 2 hosts in the collective, got 1"},
		{"unknown host", "hosts: [h1-h4]", "hosts: [h1-h9]", 12, "phases[0].hosts", "h9"},
		{"host twice", "hosts: [h1-h4]", "hosts: [h1, h2, h1]", 12, "phases[0].hosts", "host h1 is listed twice"},
		{"clients in a collective", "    hosts: [h1-h4]\n", "    hosts: [h1-h4]\n    clients: [h1]\n", 13, "phases[0].clients", "a collective phase takes hosts and collective, not clients"},
		{"hosts without a collective", "    hosts: [h1-h4]\n    collective:\n      kind: ring-allreduce\n      bytes: 1MB\n      iterations: 10\n      compute: 2ms\n      jitter: 100us\n", "    hosts: [h1-h4]\n", 12, "phases[0].hosts", "expected a collective block"},
		{"unknown collective key", "iterations: 10", "iteration: 10", 16, "phases[0].collective.iteration", "unknown field"},
	})
}

// badEdit breaks a good scenario by replacing from with to; the one error
// expected names line and field and contains msg.
type badEdit struct {
	name, from, to string
	line           int
	field, msg     string
}

// wantBadEdits checks each edit of good gives its one error.
func wantBadEdits(t *testing.T, good string, edits []badEdit) {
	t.Helper()
	for _, tc := range edits {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(good, tc.from, tc.to, 1)
			if text == good {
				t.Fatalf("replacement %q not found", tc.from)
			}
			wantOneError(t, text, tc.line, tc.field, tc.msg)
		})
	}
}

// TestWorkNote: a simulated plan whose collectives send a million step
// messages or more in an experiment says how many and how long; a smaller
// one and an emulated one say nothing.
func TestWorkNote(t *testing.T) {
	const src = `name: ring
topology: {kind: fat-tree, k: K}
link: {rate: 100Gbit}
transports: [{name: homa}]
phases:
  - name: ar
    hosts: [all]
    collective: {kind: ring-allreduce, bytes: 1024000, iterations: ITER}
simulated: true
`
	for _, tc := range []struct {
		k, iter  string
		simulate bool
		want     string
	}{
		{"16", "1", true, "up to 2.1 million collective step messages (ring-allreduce among 1024 hosts, 2095104 an iteration, 1 iteration at most)"},
		{"8", "1", true, ""}, // 32,512
		{"8", "40", true, "up to 1.3 million collective step messages"}, // 40 iterations of 32,512
		{"16", "1", false, ""}, // the same plan, emulated
	} {
		text := strings.NewReplacer("K", tc.k, "ITER", tc.iter).Replace(src)
		plan := mustPlanWith(t, text, Options{Simulate: true})
		plan.Simulate = tc.simulate
		got := plan.WorkNote()
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("k=%s, %s iterations, simulate %v: %q, want %q", tc.k, tc.iter, tc.simulate, got, tc.want)
		}
	}
}

// TestRoughly: the work note's span of time reads as a person would say it.
func TestRoughly(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   string
	}{
		{10, 40, "under a minute"},
		{31, 77, "up to 1 minute"},
		{31, 130, "up to 2 minutes"},
		{70, 80, "about 1 minute"},
		{150, 170, "about 3 minutes"},
		{2700, 6600, "45 to 110 minutes"},
		{2700, 9000, "45 minutes to 2.5 hours"},
		{7300, 9000, "2 to 2.5 hours"},
	}
	for _, tc := range tests {
		if got := roughly(tc.lo, tc.hi); got != tc.want {
			t.Errorf("roughly(%v, %v) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}
