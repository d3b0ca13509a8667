// Package units parses the quantities homatb's scenarios and commands are
// written in, so that every place reads "1Gbit" or "64KB" the same way:
// one parser for rates, one for sizes.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// prefixes are the decimal (k, M, G, either case) and binary (Ki, Mi, Gi)
// multipliers; binary ones apply to bytes only.
var prefixes = []struct {
	p      string
	mult   float64
	binary bool
}{
	{"ki", 1 << 10, true}, {"mi", 1 << 20, true}, {"gi", 1 << 30, true},
	{"k", 1e3, false}, {"m", 1e6, false}, {"g", 1e9, false},
}

// split cuts s into its number and its unit, trimmed; ok is false when s
// does not start with a finite number.
func split(s string) (v float64, unit string, ok bool) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || t[i] == '-' || t[i] == '+' ||
		(t[i] == 'e' || t[i] == 'E') && i > 0 && i+1 < len(t) && (t[i+1] >= '0' && t[i+1] <= '9' || t[i+1] == '-' || t[i+1] == '+')) {
		i++
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, "", false
	}
	return v, strings.TrimSpace(t[i:]), true
}

// prefix cuts a multiplier off the front of a unit.
func prefix(unit string) (mult float64, binary bool, rest string) {
	for _, p := range prefixes {
		if len(unit) >= len(p.p) && strings.EqualFold(unit[:len(p.p)], p.p) {
			return p.mult, p.binary, unit[len(p.p):]
		}
	}
	return 1, false, unit
}

// ParseRate parses a rate into bits per second. A lower-case b or "bit"
// means bits and an upper-case B or "byte" bytes, as in networking:
// "100Mbit", "1Gbps", "250mbit/s", "64kb/s" and "1000000" are bits per
// second; "12.5MB/s", "12.5MBps" and "1MiB/s" bytes per second. A size
// without "/s" or "ps" ("50MB") is an error, not a rate.
func ParseRate(s string) (uint64, error) {
	v, unit, ok := split(s)
	if !ok || v <= 0 {
		return 0, fmt.Errorf("expected a rate such as 100Mbit, 1Gbit or 12.5MB/s, got %q", s)
	}
	mult, binary, base := prefix(unit)
	perSecond := false
	for _, suf := range []string{"/s", "ps"} {
		if b, ok := strings.CutSuffix(base, suf); ok && b != "" {
			base, perSecond = b, true
			break
		}
	}
	var bits float64
	switch {
	case base == "" && !perSecond && !binary:
		bits = v * mult
	case (base == "b" || strings.EqualFold(base, "bit") || strings.EqualFold(base, "bits")) && !binary:
		bits = v * mult
	case base == "B" || strings.EqualFold(base, "byte") || strings.EqualFold(base, "bytes"):
		if !perSecond {
			return 0, fmt.Errorf("%q is a size in bytes, not a rate: write %sbit (bits per second) or %s/s (bytes per second)",
				s, formatBits(v*mult*8), strings.TrimSpace(s))
		}
		bits = v * mult * 8
	default:
		return 0, fmt.Errorf("expected a rate such as 100Mbit, 1Gbit or 12.5MB/s, got %q (unit %q)", s, unit)
	}
	if bits < 1 || bits > 1e12 {
		return 0, fmt.Errorf("rate %q is %g bit/s; expected 1 bit/s to 1 Tbit/s", s, bits)
	}
	return uint64(math.Round(bits)), nil
}

// formatBits writes a bit rate with the largest decimal prefix that keeps
// it whole where it can: 400000000 -> "400M".
func formatBits(b float64) string {
	for _, p := range []struct {
		s string
		m float64
	}{{"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if b >= p.m {
			return strconv.FormatFloat(b/p.m, 'f', -1, 64) + p.s
		}
	}
	return strconv.FormatFloat(b, 'f', -1, 64)
}

// ParseSize parses a size in bytes: "1500", "64KB", "2MB", "512k" (k, M,
// G decimal, in either case) or "1MiB" (KiB, MiB, GiB binary); "B", "b" or
// "bytes" may follow: in a size every unit is bytes.
func ParseSize(s string) (int64, error) {
	v, unit, ok := split(s)
	_, _, base := prefix(unit)
	if !ok || v < 0 || !(base == "" || strings.EqualFold(base, "b") || strings.EqualFold(base, "byte") || strings.EqualFold(base, "bytes")) {
		return 0, fmt.Errorf("expected a size such as 1500, 64KB or 2MB, got %q", s)
	}
	mult, _, _ := prefix(unit)
	n := v * mult
	if n > 1<<40 {
		return 0, fmt.Errorf("size %q is over 1 TiB", s)
	}
	return int64(math.Round(n)), nil
}

// Count writes n with a noun in the number it takes: "1 experiment",
// "2 experiments", "0 experiments". Nouns whose plural is not noun+"s"
// are written by the caller.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
