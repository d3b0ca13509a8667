package dispatch

import (
	"slices"
	"testing"
)

func TestLongestFirst(t *testing.T) {
	cases := []struct {
		work []float64
		want []int
	}{
		{nil, []int{}},
		{[]float64{1}, []int{0}},
		{[]float64{1, 3, 2}, []int{1, 2, 0}},
		// Ties keep the plan's order: the same order every run.
		{[]float64{5, 7, 5, 7, 0}, []int{1, 3, 0, 2, 4}},
	}
	for _, c := range cases {
		if got := LongestFirst(c.work); !slices.Equal(got, c.want) {
			t.Errorf("LongestFirst(%v) = %v, want %v", c.work, got, c.want)
		}
	}
}
