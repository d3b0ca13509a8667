// Package units parses the quantities homatb's scenarios and commands are
// written in, so that every place reads "1Gbit" the same way.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseRate parses a link rate into bits per second: a positive number with
// an optional k, m or g multiplier (decimal) and an optional unit, all
// case-insensitive: "100Mbit", "1gbps", "2.5Gbit/s", "10k", "1000000".
// "b", "bps" and "bit" all mean bits here.
func ParseRate(s string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	// Strip the unit, longest spellings first: "mbit/s" -> "mbit" -> "mb".
	t = strings.TrimSuffix(t, "/s")
	t = strings.TrimSuffix(t, "ps")
	t = strings.TrimSuffix(t, "it")
	t = strings.TrimSuffix(t, "b")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, strings.TrimSuffix(t, "g")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("expected a rate such as 100Mbit or 1Gbit, got %q", s)
	}
	return uint64(v * mult), nil
}
