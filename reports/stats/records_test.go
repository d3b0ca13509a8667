package stats

import (
	"fmt"
	"math"
	"testing"

	"github.com/homatb/homatb/anatomy"
	"github.com/homatb/homatb/rundir"
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

// TestAnatomyRows: the rows kept for the latency anatomy give it back the
// columns it reads, as the measurement's completed RPCs; a Sieve of them
// keeps the tail's long RPC, whose records a run's Sieve kept (the rows
// once lacked phase and status, and every long RPC read as unsampled).
func TestAnatomyRows(t *testing.T) {
	rs := &RecordSet{Exps: map[string]*ExpRecords{}, strs: rundir.Strings{}, anatomy: func(string) bool { return true }}
	in := []rundir.RPC{
		{Experiment: "e", Transport: "homa", Phase: rundir.PhaseMeasure, Status: rundir.StatusCompleted, Client: "h1",
			Server: "10.0.0.2:4000", Local: "10.0.0.1:5000", RPCID: 10, ReqBytes: 200_000, RespBytes: 0,
			IntendedNs: 1_000, SentNs: 1_100, DoneNs: 90_000, RTTNs: 89_000, RecoveryFromNs: 50_000},
		{Experiment: "e", Transport: "homa", Phase: rundir.PhaseMeasure, Status: rundir.StatusCompleted, Client: "h3",
			Server: "10.0.0.4:4000", Local: "10.0.0.3:5000", RPCID: 12, ReqBytes: 80, RespBytes: 0,
			IntendedNs: 2_000, SentNs: 2_000, DoneNs: 5_000, RTTNs: 3_000, ReqOffset: 4, RespOffset: 8},
	}
	for i := range in {
		if err := rs.add(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	e := rs.Exps["e"]
	rows := anatRows{exp: e.Name, transport: e.transport, rows: e.anat}
	if rows.Len() != len(in) {
		t.Fatalf("%d rows kept, want %d", rows.Len(), len(in))
	}
	for i := range in {
		var got rundir.RPC
		rows.At(i, &got)
		if got != in[i] {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got, in[i])
		}
	}
	s, err := anatomy.SieveOf(rows)
	if err != nil {
		t.Fatal(err)
	}
	var long rundir.RPC
	rows.At(0, &long)
	if !s.Kept(&long) {
		t.Error("the Sieve of the kept rows passes over the only long RPC, its size's tail")
	}
}
