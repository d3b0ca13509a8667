package main

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/homatb/homatb/reports"
)

// phaseLines is the terminal's per-phase table: for each scenario phase,
// in the order the experiments list them, a row per experiment
// (configuration) with its RPC count, request sizes and RTT P50, P99 and
// P99.9; none when no experiment recorded its clients' phases (runs
// written before client_phases).
func phaseLines(sum *reports.Summary) []string {
	var order []string
	for _, e := range sum.Experiments {
		for _, p := range e.Phases {
			if !slices.Contains(order, p.Name) {
				order = append(order, p.Name)
			}
		}
	}
	if len(order) == 0 {
		return nil
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  phase\texperiment\tn\trequest\tP50\tP99\tP99.9")
	for _, name := range order {
		for _, e := range sum.Experiments {
			for _, p := range e.Phases {
				if p.Name != name {
					continue
				}
				size := fmt.Sprintf("%d B", p.MinBytes)
				if p.MaxBytes != p.MinBytes {
					size = fmt.Sprintf("%d-%d B", p.MinBytes, p.MaxBytes)
				}
				fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\t%s\n", p.Name, e.Name, p.Count, size, optUs(p.P50us), optUs(p.P99us), optUs(p.P999us))
			}
		}
	}
	tw.Flush()
	lines := []string{"by phase (RTT of each phase's measured RPCs, whatever their size):"}
	return append(lines, strings.Split(strings.TrimRight(b.String(), "\n"), "\n")...)
}
