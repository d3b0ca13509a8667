package stats

import (
	"fmt"
	"math"
	"testing"
)

// TestIndexOf numbers hosts in first-seen order, gives a host seen again
// its index, and past MaxUint16-1 names gives every new one the last.
func TestIndexOf(t *testing.T) {
	var hosts []string
	var of map[string]uint16
	for _, tc := range []struct {
		host string
		want uint16
	}{{"h2", 0}, {"h1", 1}, {"h2", 0}, {"h3", 2}, {"h1", 1}} {
		if got := indexOf(&hosts, &of, tc.host); got != tc.want {
			t.Errorf("indexOf(%q) = %d, want %d", tc.host, got, tc.want)
		}
	}
	if fmt.Sprint(hosts) != "[h2 h1 h3]" {
		t.Errorf("hosts %v, want [h2 h1 h3]", hosts)
	}
	for i := len(hosts); i < math.MaxUint16; i++ {
		indexOf(&hosts, &of, fmt.Sprintf("x%d", i))
	}
	if got := indexOf(&hosts, &of, "late"); got != math.MaxUint16-1 || len(hosts) != math.MaxUint16 {
		t.Errorf("a host past the limit got %d with %d hosts, want %d and %d", got, len(hosts), math.MaxUint16-1, math.MaxUint16)
	}
	if got := indexOf(&hosts, &of, "h3"); got != 2 {
		t.Errorf("h3 past the limit got %d, want 2", got)
	}
}
