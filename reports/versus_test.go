package reports

import "testing"

func TestVersus(t *testing.T) {
	s := &Summary{Experiments: []Experiment{
		{Name: "a-homa", Transport: "homa", Params: map[string]any{"load": 0.5}, Short: Short{P50us: fp(10), P99us: fp(100)}},
		{Name: "a-tcp", Transport: "tcp", Params: map[string]any{"load": 0.5}, Short: Short{P50us: fp(50), P99us: fp(1300)}},
		{Name: "b-homa", Transport: "homa", Params: map[string]any{"load": 0.8}, Short: Short{P50us: fp(20), P99us: fp(200)}},
	}}
	vs := s.Versus()
	if len(vs) != 1 {
		t.Fatalf("got %d pairs, want 1 (load 0.8 has no TCP experiment): %+v", len(vs), vs)
	}
	v := vs[0]
	if v.Homa.Experiment != "a-homa" || v.TCP.Experiment != "a-tcp" {
		t.Errorf("paired %s with %s", v.Homa.Experiment, v.TCP.Experiment)
	}
	if v.RatioP50 == nil || *v.RatioP50 != 5 || v.RatioP99 == nil || *v.RatioP99 != 13 {
		t.Errorf("ratios P50 %v P99 %v, want 5 and 13", v.RatioP50, v.RatioP99)
	}
}
