package hostset

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	hosts := []string{"h1", "h2", "h3", "h4", "h5"}
	tests := []struct {
		in      []string
		want    string
		wantErr string
	}{
		{[]string{"all"}, "h1 h2 h3 h4 h5", ""},
		{[]string{"h2-h4", "h3", "h1"}, "h2 h3 h4 h1", ""},
		{[]string{"h6"}, "", `host "h6" does not exist: the topology has h1 to h5`},
		{[]string{"h2-h6"}, "", `host h6 (in "h2-h6") does not exist`},
		{[]string{"h4-h2"}, "", "expected a host range such as h2-h9"},
		{[]string{"x1-x2"}, "", "expected a host range such as h2-h9"},
		{[]string{"h1..h3"}, "", "expected a host range such as h2-h9"},
	}
	for _, tc := range tests {
		got, err := Expand(tc.in, hosts)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Expand(%v) error %v, want one containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("Expand(%v) = %v, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
