package stats

import (
	"math"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// TestMatrixSlowdown: a matrix's slowdowns are its completed flows'
// completion times over each flow's own ideal (its bytes, answer and
// path), without its notifications or its failed flows, and none without
// an ideal.
func TestMatrixSlowdown(t *testing.T) {
	id := &idealRTT{baseNs: 10_000, baseReq: 100, baseResp: 1, baseLinks: 2, rateBps: 1e9, mtu: 1500, overhead: 38}
	ph := matrixPhase{name: "m", file: "m.cm"}
	flow := func(n int64, status string, req int64, fct int64) rundir.RPC {
		return rundir.RPC{Matrix: "m", Flow: n, Status: status, ReqBytes: req, RespBytes: 1, IntendedNs: 1_000, DoneNs: 1_000 + fct}
	}
	near, far := id.at(1_000_000, 1, 2), id.at(1_000_000, 1, 4)
	rows := []rundir.RPC{
		flow(1, rundir.StatusCompleted, 1_000_000, int64(2*near)),
		flow(2, rundir.StatusCompleted, 1_000_000, int64(3*far)),
		flow(3, rundir.StatusFailed, 1_000_000, 0),
		{Matrix: "m", Flow: 0, Status: rundir.StatusCompleted, IntendedNs: 1_000, DoneNs: 2_000}, // a notification
	}
	links := []uint8{2, 4, 2, 2}
	ms := matrixStats(rows, links, []matrixPhase{ph}, id, 0.95)
	if len(ms) != 1 {
		t.Fatalf("%d matrices, want 1", len(ms))
	}
	s := ms[0].Slowdown
	if s.Count != 2 || s.Max == nil || math.Abs(*s.Max-3) > 1e-6 || s.P50 == nil || *s.P50 < 2-1e-6 || *s.P50 > 3+1e-6 {
		t.Errorf("slowdown %+v, want 2 flows, max 3 (the far flow at 3x its ideal), P50 between 2 and 3", s)
	}
	if ms[0].Completed != 2 || ms[0].Failed != 1 || ms[0].Notifications != 1 {
		t.Errorf("completed %d, failed %d, notifications %d; want 2, 1, 1", ms[0].Completed, ms[0].Failed, ms[0].Notifications)
	}
	if got := matrixStats(rows, links, []matrixPhase{ph}, nil, 0.95)[0].Slowdown; got.Count != 0 || got.Max != nil {
		t.Errorf("without an ideal: slowdown %+v, want none", got)
	}
}
