package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
)

// record is one line of the results file that run.sh writes: which target
// and test, and what swbench printed.
type record struct {
	Target string          `json:"target"`
	Test   string          `json:"test"`
	Result json.RawMessage `json:"result"`
}

type measure struct {
	rate  map[string]rateResult  // by test
	sent  map[string]rateResult  // sender side, by test
	probe map[string]probeResult // by test
}

// Targets the issue sets for the embedded switch.
const (
	minKpps1500     = 80
	minRateRatio    = 0.8
	maxLoadedP50Mul = 3
)

func runReport(_ context.Context, args []string) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("usage: swbench report RESULTS.jsonl")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	by := map[string]*measure{}
	var order []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", args[0], line, err)
		}
		m := by[r.Target]
		if m == nil {
			m = &measure{rate: map[string]rateResult{}, sent: map[string]rateResult{}, probe: map[string]probeResult{}}
			by[r.Target] = m
			order = append(order, r.Target)
		}
		var kind struct{ Cmd string }
		if err := json.Unmarshal(r.Result, &kind); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", args[0], line, err)
		}
		switch kind.Cmd {
		case "sink", "blast":
			var rr rateResult
			if err := json.Unmarshal(r.Result, &rr); err != nil {
				return nil, err
			}
			if kind.Cmd == "sink" {
				m.rate[r.Test] = rr
			} else {
				m.sent[r.Test] = rr
			}
		case "probe":
			var pr probeResult
			if err := json.Unmarshal(r.Result, &pr); err != nil {
				return nil, err
			}
			m.probe[r.Test] = pr
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	base := by["bridge"]
	if base == nil {
		base = &measure{} // no baseline: values without ratios
	}
	w := tabwriter.NewWriter(os.Stdout, 2, 0, 2, ' ', 0)
	fmt.Fprintf(w, "measure\t%s\n", strings.Join(order, "\t"))
	row := func(name string, val func(m *measure) (float64, bool), ratio bool) {
		cells := []string{name}
		b, bok := val(base)
		for _, t := range order {
			v, ok := val(by[t])
			switch {
			case !ok:
				cells = append(cells, "-")
			case ratio && t != "bridge" && bok && b > 0:
				cells = append(cells, fmt.Sprintf("%.1f (%.2fx)", v, v/b))
			default:
				cells = append(cells, fmt.Sprintf("%.1f", v))
			}
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	for _, test := range []string{"rate64", "rate1500"} {
		row(test+" received kpps", func(m *measure) (float64, bool) { r, ok := m.rate[test]; return r.PPS / 1e3, ok }, true)
		row(test+" sent kpps", func(m *measure) (float64, bool) { r, ok := m.sent[test]; return r.PPS / 1e3, ok }, true)
	}
	for _, test := range []string{"idle", "loaded"} {
		row(test+" RTT p50 us", func(m *measure) (float64, bool) { r, ok := m.probe[test]; return r.P50us, ok }, true)
		row(test+" RTT p99 us", func(m *measure) (float64, bool) { r, ok := m.probe[test]; return r.P99us, ok }, true)
		row(test+" RTT mean us", func(m *measure) (float64, bool) { r, ok := m.probe[test]; return r.Meanus, ok }, true)
	}
	row("idle switch CPU share %", func(m *measure) (float64, bool) {
		r, ok := m.probe["idle"]
		return r.CPUShare * 100, ok && r.CPUSeconds > 0
	}, false)
	if err := w.Flush(); err != nil {
		return nil, err
	}
	fmt.Println()
	for _, t := range order {
		if t == "bridge" || t == "bmv2" {
			continue // the targets are the embedded switch's; BMv2 is a reference point
		}
		m := by[t]
		k := m.rate["rate1500"].PPS / 1e3
		ratio := m.rate["rate1500"].PPS / base.rate["rate1500"].PPS
		lp := m.probe["loaded"].P50us / base.probe["loaded"].P50us
		fmt.Printf("%s: 1500B %.1f kpps (target >= %d: %s), %.2fx the bridge (target >= %.1f: %s), loaded RTT p50 %.2fx the bridge (target <= %d: %s)\n",
			t, k, minKpps1500, verdict(k >= minKpps1500), ratio, minRateRatio, verdict(ratio >= minRateRatio),
			lp, maxLoadedP50Mul, verdict(lp <= maxLoadedP50Mul))
	}
	return nil, nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
