package main

import (
	"testing"
	"time"
)

func TestSummarizeNearestRank(t *testing.T) {
	late := make([]time.Duration, 1000)
	for i := range late {
		late[i] = time.Duration(1000-i) * time.Microsecond // 1000 … 1 µs, unsorted
	}
	r := summarize(late, time.Millisecond, -10)
	if r.N != 1000 || r.P50Us != 500 || r.P90Us != 900 || r.P99Us != 990 || r.P999Us != 999 || r.MaxUs != 1000 || r.SleepUs != 1000 {
		t.Errorf("%+v", r)
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		n     int
		sleep time.Duration
	}{{0, time.Millisecond}, {10, time.Microsecond}, {10, 2 * time.Second}} {
		if err := run(tc.n, tc.sleep, 0, 0); err == nil {
			t.Errorf("run(%d, %v) accepted", tc.n, tc.sleep)
		}
	}
}
