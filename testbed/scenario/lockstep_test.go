package scenario

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestBadLockstepSweeps: a sweep of several parameters in lockstep is
// refused, at the line at fault, when its shape is wrong or a value is.
func TestBadLockstepSweeps(t *testing.T) {
	// good's last line is 19; the sweep starts on line 20.
	tests := []struct {
		name  string
		sweep string
		line  int
		field string
		msg   string
	}{
		{"tuple too short", "  - params: [phases.bulk.sizes, duration]\n    values:\n      - [w4, 1s]\n      - [fixed:1000]\n",
			24, "sweep[0].values[1]", "expected a list of 2 values, one per param (phases.bulk.sizes, duration), got 1 value"},
		{"tuple too long", "  - params: [phases.bulk.sizes, duration]\n    values: [[w4, 1s, 3]]\n",
			22, "sweep[0].values[0]", "got 3 values"},
		{"value not a list", "  - params: [phases.bulk.sizes, duration]\n    values: [w4]\n",
			22, "sweep[0].values[0]", "expected a list of 2 values"},
		{"param and params", "  - param: duration\n    params: [phases.bulk.sizes]\n    values: [[w4]]\n",
			22, "sweep[0].params", "not both"},
		{"neither param nor params", "  - values: [1s]\n",
			21, "sweep[0]", "expected param: PATH"},
		{"empty params", "  - params: []\n    values: [[1s]]\n",
			21, "sweep[0].params", "non-empty list of parameters"},
		{"params of the network", "  - params: [duration, topology.hosts]\n    values: [[1s, 3]]\n",
			21, "sweep[0].params[1]", `cannot sweep "topology.hosts"`},
		{"params swept twice", "  - params: [duration, phases.bulk.sizes]\n    values: [[1s, w4]]\n  - param: phases.0.sizes\n    values: [w4]\n",
			23, "sweep[1].param", `"phases.0.sizes" is already swept by sweep[0]`},
		{"bad value in a tuple", "  - params: [phases.bulk.sizes, duration]\n    values:\n      - [w4, 1s]\n      - [w4, soon]\n",
			24, "sweep[0].values[1][1] (duration)", "expected a duration"},
		{"bad homa value in a tuple", "  - params: [transports.homa.homa.overcommit, transports.homa.homa.priorities]\n    values:\n      - [2, 4]\n      - [4, 9]\n",
			24, "transports[0].homa.priorities", "1, 2, 4 or 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantOneError(t, good+"sweep:\n"+tc.sweep, tc.line, tc.field, tc.msg)
		})
	}
}

// TestLockstepSweep: the parameters of a lockstep sweep change together,
// one combination per value, crossed with the other sweeps; experiments are
// named by every parameter; seeds differ between values when the sweep
// changes the traffic and not when it sets one transport's parameters.
func TestLockstepSweep(t *testing.T) {
	tests := []struct {
		name  string
		sweep string
		want  []string // experiment names without "t-"
		// sameSeed lists pairs of experiments (indexes into want) that must
		// share a seed; diffSeed pairs that must not.
		sameSeed, diffSeed [][2]int
	}{
		{
			name: "workload and duration",
			sweep: `  - params: [phases.bulk.sizes, duration]
    values: [[fixed:1000, 1s], [w4, 3s]]
`,
			want: []string{
				"homa-sizesfixed_1000-duration1s", "tcp-sizesfixed_1000-duration1s",
				"homa-sizesw4-duration3s", "tcp-sizesw4-duration3s",
			},
			sameSeed: [][2]int{{0, 1}, {2, 3}},
			diffSeed: [][2]int{{0, 2}},
		},
		{
			name: "crossed with a cartesian sweep",
			sweep: `  - param: phases.bulk.max_outstanding
    values: [1, 4]
  - params: [phases.bulk.sizes, warmup]
    values: [[fixed:1000, 100ms], [w4, 200ms]]
`,
			want: []string{
				"homa-max_outstanding1-sizesfixed_1000-warmup100ms", "tcp-max_outstanding1-sizesfixed_1000-warmup100ms",
				"homa-max_outstanding1-sizesw4-warmup200ms", "tcp-max_outstanding1-sizesw4-warmup200ms",
				"homa-max_outstanding4-sizesfixed_1000-warmup100ms", "tcp-max_outstanding4-sizesfixed_1000-warmup100ms",
				"homa-max_outstanding4-sizesw4-warmup200ms", "tcp-max_outstanding4-sizesw4-warmup200ms",
			},
			diffSeed: [][2]int{{0, 2}, {0, 4}, {2, 6}, {4, 6}},
		},
		{
			name: "one transport's parameters",
			sweep: `  - params: [transports.homa.homa.overcommit, transports.homa.homa.priorities]
    values: [[1, 2], [4, 8]]
`,
			want:     []string{"homa-overcommit1-priorities2", "tcp", "homa-overcommit4-priorities8"},
			sameSeed: [][2]int{{0, 1}, {0, 2}},
		},
		{
			name: "a transport's parameter with a shared one",
			sweep: `  - params: [transports.homa.homa.overcommit, drain]
    values: [[1, 1s], [4, 2s]]
`,
			want:     []string{"homa-overcommit1-drain1s", "tcp-drain1s", "homa-overcommit4-drain2s", "tcp-drain2s"},
			sameSeed: [][2]int{{0, 1}, {2, 3}},
			diffSeed: [][2]int{{0, 2}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustPlan(t, good+"sweep:\n"+tc.sweep)
			var got []string
			for _, e := range plan.Experiments {
				got = append(got, strings.TrimPrefix(e.Name, "t-"))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("experiments\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for _, p := range tc.sameSeed {
				if a, b := plan.Experiments[p[0]], plan.Experiments[p[1]]; a.Seed != b.Seed {
					t.Errorf("%s seed %d, %s seed %d: want the same", a.Name, a.Seed, b.Name, b.Seed)
				}
			}
			for _, p := range tc.diffSeed {
				if a, b := plan.Experiments[p[0]], plan.Experiments[p[1]]; a.Seed == b.Seed {
					t.Errorf("%s and %s share seed %d: the traffic changed between them", a.Name, b.Name, a.Seed)
				}
			}
		})
	}
}

// TestLockstepValuesApplied: each experiment's scenario has the values of
// its tuple, its params say so, and the manifest writes the sweep back.
func TestLockstepValuesApplied(t *testing.T) {
	plan := mustPlan(t, good+`sweep:
  - params: [phases.bulk.sizes, duration, warmup]
    values: [[fixed:1000, 1s, 10ms], [w4, 3s, 20ms]]
`)
	for _, e := range plan.Experiments {
		s := e.Scenario
		if s.Phases[0].Sizes != e.Params["phases.bulk.sizes"] || s.Duration.D().String() != e.Params["duration"] || s.Warmup.D().String() != e.Params["warmup"] {
			t.Errorf("%s: sizes %s, duration %s, warm-up %s; params %v", e.Name, s.Phases[0].Sizes, s.Duration.D(), s.Warmup.D(), e.Params)
		}
		if !slices.Equal(e.ParamOrder, []string{"phases.bulk.sizes", "duration", "warmup"}) {
			t.Errorf("%s: param order %v", e.Name, e.ParamOrder)
		}
	}
	if plan.Base.Duration.D().String() != "2s" {
		t.Errorf("base duration changed by the sweep: %s", plan.Base.Duration.D())
	}
	b, err := json.Marshal(plan.Base.Sweep)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"params":["phases.bulk.sizes","duration","warmup"],"values":[["fixed:1000","1s","10ms"],["w4","3s","20ms"]]}]`
	if string(b) != want {
		t.Errorf("manifest sweep %s\nwant %s", b, want)
	}
}

// TestDescribeSweptTimes: the dry run's description gives the range of an
// experiment's traffic time when a sweep changes the times, and the one
// time otherwise.
func TestDescribeSweptTimes(t *testing.T) {
	tests := []struct {
		name, sweep, want string
	}{
		{"times swept", "sweep:\n  - params: [phases.bulk.sizes, duration]\n    values: [[fixed:1000, 1s], [w4, 3s]]\n",
			"4 experiments, 2s to 4s of traffic each (warm-up + measure + drain, swept)"},
		{"times not swept", "sweep:\n  - param: phases.bulk.sizes\n    values: [fixed:1000, w4]\n",
			"4 experiments, about 3s of traffic each (warm-up 0s + measure 2s + drain 1s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := mustPlan(t, good+tc.sweep).Describe(&b); err != nil {
				t.Fatal(err)
			}
			if lines := strings.Split(b.String(), "\n"); len(lines) < 2 || lines[1] != tc.want {
				t.Errorf("description\n%s\nwant its second line %q", b.String(), tc.want)
			}
		})
	}
}
