package workloads

import (
	"bytes"
	"embed"
	"fmt"
)

// HomaMaxMessage is the longest message the Homa implementations carry:
// the built-in workloads are truncated there unless their spec says
// otherwise (",max=N"), as cp_node truncates them at its maximum message
// length.
const HomaMaxMessage = 1_000_000

// builtinFS holds the published W1–W5 tables (data/README.md cites their
// source).
//
//go:embed data/*.tsv
var builtinFS embed.FS

// builtinNames are the built-in workloads, each data/<name>.tsv.
func builtinNames() []string { return []string{"w1", "w2", "w3", "w4", "w5"} }

// builtinDist is a built-in workload's whole published table, one point
// per published length, sampled as the Homa tools sample it.
func builtinDist(name string) (*piecewise, error) {
	data, err := builtinFS.ReadFile("data/" + name + ".tsv")
	if err != nil {
		return nil, fmt.Errorf("unknown built-in workload %q (expected w1..w5)", name)
	}
	d, err := parseCDF(name, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("built-in workload %s: %w", name, err)
	}
	return d, nil
}
