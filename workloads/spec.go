package workloads

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/homatb/homatb/internal/units"
)

// ParseSizeSpec parses a message-size distribution:
//
//	w1 .. w5              built-in Homa workloads (truncated at 1 MB)
//	fixed:N               always N bytes
//	uniform:A:B           uniform over the integers A..B
//	loguniform:A:B        log-uniform over A..B (floor of a log-uniform real)
//	file:PATH             a CDF file (see readCDFFile)
//	mix:SPEC@W,SPEC@W     a mixture, each part chosen with weight W
//
// Any of these may end in ",max=N": longer messages are truncated to N.
// Errors name the offending value and what was expected.
func ParseSizeSpec(s string) (SizeDist, error) {
	d, err := parseSpec(s)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func parseSpec(s string) (*piecewise, error) {
	spec := strings.TrimSpace(s)
	if spec == "" {
		return nil, fmt.Errorf("size spec is empty: expected w1..w5, fixed:N, uniform:A:B, loguniform:A:B, file:PATH or mix:SPEC@W,...")
	}
	body, maxLen, err := splitMax(spec)
	if err != nil {
		return nil, err
	}
	if maxLen == 0 && isBuiltin(body) {
		maxLen = HomaMaxMessage // as cp_node truncates them
	}
	d, err := parseBody(spec, body)
	if err != nil {
		return nil, err
	}
	if maxLen > 0 {
		return d.truncated(spec, maxLen)
	}
	d.spec = spec
	return d, nil
}

// splitMax removes a trailing ",max=N".
func splitMax(spec string) (string, int, error) {
	i := strings.LastIndex(spec, ",")
	if i < 0 || !strings.HasPrefix(strings.TrimSpace(spec[i+1:]), "max=") {
		return spec, 0, nil
	}
	v := strings.TrimPrefix(strings.TrimSpace(spec[i+1:]), "max=")
	n, err := parseLength(v)
	if err != nil {
		return "", 0, fmt.Errorf("size spec %q: max=%s: %w", spec, v, err)
	}
	return strings.TrimSpace(spec[:i]), n, nil
}

// isBuiltin reports whether a spec body names a built-in workload.
func isBuiltin(body string) bool {
	for _, n := range builtinNames() {
		if strings.EqualFold(strings.TrimSpace(body), n) {
			return true
		}
	}
	return false
}

func parseBody(spec, body string) (*piecewise, error) {
	kind, arg, _ := strings.Cut(body, ":")
	switch strings.ToLower(kind) {
	case "w1", "w2", "w3", "w4", "w5":
		if arg != "" {
			return nil, fmt.Errorf("size spec %q: built-in %s takes no argument", spec, kind)
		}
		return builtinDist(strings.ToLower(kind))
	case "fixed":
		n, err := parseLength(arg)
		if err != nil {
			return nil, fmt.Errorf("size spec %q: fixed:N: %w", spec, err)
		}
		return newPiecewise(spec, []segment{{kind: segPoint, hi: n, p: 1}})
	case "uniform", "loguniform":
		a, b, err := parseRange(arg)
		if err != nil {
			return nil, fmt.Errorf("size spec %q: %s:A:B: %w", spec, kind, err)
		}
		if kind == "uniform" {
			return newPiecewise(spec, []segment{{kind: segUniform, lo: a, hi: b, p: 1}})
		}
		if a == b {
			return newPiecewise(spec, []segment{{kind: segPoint, hi: a, p: 1}})
		}
		// Floor of a log-uniform real on [A, B+1) gives A..B inclusive.
		return newPiecewise(spec, []segment{{kind: segLogFloor, lo: a, hi: b + 1, p: 1}})
	case "file":
		if arg == "" {
			return nil, fmt.Errorf("size spec %q: file:PATH needs a path", spec)
		}
		return readCDFFile(arg)
	case "mix":
		return parseMix(spec, arg)
	}
	return nil, fmt.Errorf("size spec %q: unknown kind %q: expected w1..w5, fixed, uniform, loguniform, file or mix", spec, kind)
}

func parseMix(spec, arg string) (*piecewise, error) {
	if arg == "" {
		return nil, fmt.Errorf("size spec %q: mix needs parts SPEC@WEIGHT,...", spec)
	}
	var segs []segment
	for part := range strings.SplitSeq(arg, ",") {
		at := strings.LastIndex(part, "@")
		if at < 0 {
			return nil, fmt.Errorf("size spec %q: mix part %q: expected SPEC@WEIGHT", spec, part)
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(part[at+1:]), 64)
		if err != nil || w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
			return nil, fmt.Errorf("size spec %q: mix part %q: weight %q is not a non-negative number", spec, part, part[at+1:])
		}
		sub, err := parseSpec(part[:at])
		if err != nil {
			return nil, fmt.Errorf("size spec %q: mix part %q: %w", spec, part, err)
		}
		for _, s := range sub.segs {
			s.p *= w
			segs = append(segs, s)
		}
	}
	d, err := newPiecewise(spec, segs)
	if err != nil {
		return nil, fmt.Errorf("size spec %q: mix weights sum to zero", spec)
	}
	return d, nil
}

// parseLength parses a positive byte count in the units sizes are written
// in everywhere (units.ParseSize: 1K = 1000, 1KiB = 1024).
func parseLength(v string) (int, error) {
	n, err := units.ParseSize(v)
	if err != nil || n <= 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%q is not a positive length in bytes", strings.TrimSpace(v))
	}
	return int(n), nil
}

func parseRange(arg string) (int, int, error) {
	as, bs, ok := strings.Cut(arg, ":")
	if !ok {
		return 0, 0, fmt.Errorf("%q: expected two lengths A:B", arg)
	}
	a, err := parseLength(as)
	if err != nil {
		return 0, 0, err
	}
	b, err := parseLength(bs)
	if err != nil {
		return 0, 0, err
	}
	if a > b {
		return 0, 0, fmt.Errorf("A=%d above B=%d", a, b)
	}
	return a, b, nil
}

// ResolveFiles rewrites the relative paths of a size spec's file: parts
// (mix parts included) as paths under dir, so a scenario's CDF files are
// found beside the scenario whatever the working directory. Absolute
// paths, other kinds and malformed specs are left as they are, for
// ParseSizeSpec to judge.
func ResolveFiles(spec, dir string) string {
	body, suffix := spec, ""
	if i := strings.LastIndex(spec, ","); i >= 0 && strings.HasPrefix(strings.TrimSpace(spec[i+1:]), "max=") {
		body, suffix = spec[:i], spec[i:]
	}
	kind, arg, _ := strings.Cut(strings.TrimSpace(body), ":")
	switch strings.ToLower(kind) {
	case "file":
		if arg != "" && !filepath.IsAbs(arg) {
			return kind + ":" + filepath.Join(dir, arg) + suffix
		}
	case "mix":
		parts := strings.Split(arg, ",")
		for i, part := range parts {
			if at := strings.LastIndex(part, "@"); at >= 0 {
				parts[i] = ResolveFiles(part[:at], dir) + part[at:]
			}
		}
		return kind + ":" + strings.Join(parts, ",") + suffix
	}
	return spec
}
