// Package hostset resolves the host sets a scenario names ("all", "h3",
// "h2-h9") against a topology's hosts: the scenario's checks, the run's
// roles and the report (a collective's members) read them the same way.
package hostset

import (
	"fmt"
	"strconv"
	"strings"
)

// Expand resolves a host set ("all", "h3", "h2-h9") against the
// topology's hosts, keeping order and dropping repeats.
func Expand(set []string, hosts []string) ([]string, error) {
	known := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		known[h] = true
	}
	seen := map[string]bool{}
	var out []string
	add := func(h string) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	for _, item := range set {
		switch lo, hi, isRange := strings.Cut(item, "-"); {
		case item == "all":
			for _, h := range hosts {
				add(h)
			}
		case isRange:
			a, errA := Index(lo)
			b, errB := Index(hi)
			if errA != nil || errB != nil || a > b {
				return nil, fmt.Errorf("expected a host range such as h2-h9, got %q", item)
			}
			if !known["h"+strconv.Itoa(b)] {
				return nil, fmt.Errorf("host h%d (in %q) does not exist: the topology has %s", b, item, Describe(hosts))
			}
			for i := a; i <= b; i++ {
				add("h" + strconv.Itoa(i))
			}
		case known[item]:
			add(item)
		case strings.Contains(item, ".."):
			return nil, fmt.Errorf("expected a host range such as h2-h9, got %q", item)
		default:
			return nil, fmt.Errorf("host %q does not exist: the topology has %s", item, Describe(hosts))
		}
	}
	return out, nil
}

// Index is the number of host name h ("h7": 7).
func Index(h string) (int, error) {
	if !strings.HasPrefix(h, "h") {
		return 0, fmt.Errorf("not a host name: %q", h)
	}
	n, err := strconv.Atoi(h[1:])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("not a host name: %q", h)
	}
	return n, nil
}

// Describe names a topology's hosts for an error: "h1 to h20".
func Describe(hosts []string) string {
	switch len(hosts) {
	case 0:
		return "no hosts"
	case 1:
		return hosts[0]
	}
	return fmt.Sprintf("%s to %s", hosts[0], hosts[len(hosts)-1])
}
