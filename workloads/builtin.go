package workloads

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
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

// WholeBuiltin returns spec with its built-in workload kept whole
// (",max=" the workload's longest published length) when spec names a
// built-in bare and that workload reaches beyond HomaMaxMessage, where
// parsing it would cut it; false otherwise (another kind of spec, a
// ",max=" given, or a workload that HomaMaxMessage does not cut).
func WholeBuiltin(spec string) (string, bool) {
	body, maxLen, ok := builtinParts(spec)
	if !ok || maxLen != 0 {
		return "", false
	}
	d, err := builtinDist(strings.ToLower(body))
	if err != nil || d.Max() <= HomaMaxMessage {
		return "", false
	}
	return fmt.Sprintf("%s,max=%d", body, d.Max()), true
}

// BuiltinOf returns the built-in workload spec names, lower case ("w3"
// for "W3,max=30MB"), and false when spec names none.
func BuiltinOf(spec string) (string, bool) {
	body, _, ok := builtinParts(spec)
	return strings.ToLower(body), ok
}

// builtinParts splits a spec that names a built-in workload into the
// name as written and its ",max=" limit (0 when none); false for any
// other spec, or a limit that does not parse (ParseSizeSpec reports it).
func builtinParts(spec string) (string, int, bool) {
	body, maxLen, err := splitMax(strings.TrimSpace(spec))
	if err != nil || !isBuiltin(body) {
		return "", 0, false
	}
	return strings.TrimSpace(body), maxLen, true
}
