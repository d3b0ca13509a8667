package faults

import (
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// TestSalvageRecords keeps the whole rows of a records file cut mid-row.
func TestSalvageRecords(t *testing.T) {
	head := strings.Join(rundir.RPCs().Header(), ",")
	row := func(status string) string {
		fields := strings.Split("e,homa,measure,h2,10.0.0.1:4000,100,100,1,2,3,2,"+status+",,0,0,0,0,0,h1,7,10.0.0.2:32768,0,0", ",")
		// Columns added since are empty.
		fields = append(fields, make([]string, len(rundir.RPCs().Header())-len(fields))...)
		return strings.Join(fields, ",") + "\n"
	}
	tests := []struct {
		name              string
		data              string
		completed, failed uint64
	}{
		{"empty", "", 0, 0},
		{"header only", head + "\n", 0, 0},
		{"whole rows", head + "\n" + row("completed") + row("failed"), 1, 1},
		{"cut last row", head + "\n" + row("completed") + row("completed") + "e,homa,meas", 2, 0},
		{"cut header", head[:10], 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kept, c, f := salvageRecords([]byte(tc.data), "x.csv")
			if c != tc.completed || f != tc.failed {
				t.Errorf("completed %d failed %d, want %d %d", c, f, tc.completed, tc.failed)
			}
			if n := strings.Count(string(kept), "\n"); c+f > 0 && n != int(c+f)+1 {
				t.Errorf("kept %d lines for %d rows", n, c+f)
			}
		})
	}
}
