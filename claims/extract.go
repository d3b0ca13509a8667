package claims

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/homatb/homatb/reports"
)

// workloadOf names an experiment's workload by the first built-in name
// (w1..w5) in its params (a sweep over phases.<name>.sizes), "" when none.
func workloadOf(e *reports.Experiment) string {
	for k, v := range e.Params {
		if !strings.HasSuffix(k, ".sizes") {
			continue
		}
		s := strings.ToLower(fmt.Sprint(v))
		if len(s) >= 2 && s[0] == 'w' && s[1] >= '1' && s[1] <= '5' {
			return s[:2]
		}
	}
	return ""
}

// byWorkload indexes one repetition's experiments by workload and
// transport.
func byWorkload(exps []reports.Experiment) map[string]map[string]*reports.Experiment {
	m := map[string]map[string]*reports.Experiment{}
	for i := range exps {
		e := &exps[i]
		w := workloadOf(e)
		if m[w] == nil {
			m[w] = map[string]*reports.Experiment{}
		}
		m[w][e.Transport] = e
	}
	return m
}

// halfBinsMax is the largest P99 slowdown over the size bins of the
// shortest half of e's messages (NaN when e has none).
func halfBinsMax(e *reports.Experiment) float64 {
	if e == nil || e.ShortestHalf == nil {
		return math.NaN()
	}
	v := math.NaN()
	for _, b := range e.BySize {
		if b.Length > e.ShortestHalf.MaxLength || b.S99 == nil {
			continue
		}
		if math.IsNaN(v) || *b.S99 > v {
			v = *b.S99
		}
	}
	return v
}

// halfP99 is the P99 slowdown of the shortest half pooled (NaN when
// unknown).
func halfP99(e *reports.Experiment) float64 {
	if e == nil || e.ShortestHalf == nil || e.ShortestHalf.S99 == nil {
		return math.NaN()
	}
	return *e.ShortestHalf.S99
}

var paperWorkloads = []string{"w1", "w2", "w3", "w4", "w5"}

// homaHalfBins is B1: Homa's halfBinsMax on W1-W5.
func homaHalfBins(exps []reports.Experiment) ([]float64, error) {
	m := byWorkload(exps)
	out := make([]float64, len(paperWorkloads))
	for i, w := range paperWorkloads {
		out[i] = halfBinsMax(m[w]["homa"])
	}
	return out, nil
}

// ratios reads, for each named transport, its shortest-half P99 over
// Homa's on each of W1-W5 (the workloads the run has), and returns the
// smallest (or, where max is set, the largest) ratio over the workloads.
func ratios(transports []string, max []bool) func([]reports.Experiment) ([]float64, error) {
	return func(exps []reports.Experiment) ([]float64, error) {
		m := byWorkload(exps)
		out := make([]float64, len(transports))
		for i, t := range transports {
			var rs []float64
			for _, w := range paperWorkloads {
				h, o := halfP99(m[w]["homa"]), halfP99(m[w][t])
				if !math.IsNaN(h) && !math.IsNaN(o) && h > 0 {
					rs = append(rs, o/h)
				}
			}
			switch {
			case len(rs) == 0:
				return nil, fmt.Errorf("no workload with both homa's and %s's shortest-half P99", t)
			case max[i]:
				out[i] = slices.Max(rs)
			default:
				out[i] = slices.Min(rs)
			}
		}
		return out, nil
	}
}

// repetitions groups a run's experiments by repetition, in order.
func repetitions(exps []reports.Experiment) [][]reports.Experiment {
	var keys []string
	groups := map[string][]reports.Experiment{}
	for _, e := range exps {
		k := fmt.Sprint(e.Params["repetition"])
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], e)
	}
	slices.Sort(keys)
	out := make([][]reports.Experiment, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}
