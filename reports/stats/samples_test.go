package stats

import (
	"strings"
	"testing"
)

// TestSampleWarnings: a P99 under 100 samples is named with its count and
// the measurement that would give enough; 100 or more say nothing.
func TestSampleWarnings(t *testing.T) {
	s99 := 3.5
	tests := []struct {
		name string
		e    Experiment
		want []string
	}{
		{"short", Experiment{Short: Short{Count: 17}, RPCs: RPCCounts{Completed: 17}}, []string{"the short-message P99 rests on 17 samples", "(here the largest)", "about 36 s"}},
		{"enough", Experiment{Short: Short{Count: 100}, RPCs: RPCCounts{Completed: 100}}, nil},
		{"all but short", Experiment{Short: Short{Count: 500}, RPCs: RPCCounts{Completed: 50}}, []string{"the all-RPC P99 rests on 50 samples"}},
		{"shortest half", Experiment{ShortestHalf: &ShortestHalf{Count: 7, S99: &s99}, RPCs: RPCCounts{Completed: 14}}, []string{"the shortest half's slowdown P99 rests on 7 samples", "the all-RPC P99 rests on 14"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(tc.e.sampleWarnings(6), "\n")
			if tc.want == nil && got != "" {
				t.Errorf("warnings %q, want none", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warnings %q lack %q", got, w)
				}
			}
		})
	}
	e := Experiment{Short: Short{MaxLength: 1000}, ShortestHalf: &ShortestHalf{MaxLength: 132300, Count: 7, S99: &s99}, RPCs: RPCCounts{Completed: 14}}
	if got := HalfFallback(&e); !strings.Contains(got, "P99 slowdown of the shortest half of the messages (requests up to 132300 B, 7 RPCs) was 3.5") {
		t.Errorf("fallback %q", got)
	}
	e.Short.Count = 1
	if got := HalfFallback(&e); got != "" {
		t.Errorf("fallback %q with a short RPC, want none", got)
	}
}
