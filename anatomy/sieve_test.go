package anatomy

import (
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
)

// readAll reads one switch's records of experiment "exp" back, with the
// file's flags.
func readAll(t *testing.T, dir, sw string) ([]rundir.Postcard, uint8) {
	t.Helper()
	pr, c, err := rundir.OpenPostcards(dir, "exp", sw)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []rundir.Postcard
	for {
		var p rundir.Postcard
		if err := pr.Next(&p); err != nil {
			break
		}
		out = append(out, p)
	}
	return out, pr.Flags
}

// measuredRow is a completed measured RPC of experiment "exp".
func measuredRow(id uint64, req, resp, rtt int64) rundir.RPC {
	return rundir.RPC{Experiment: "exp", Phase: rundir.PhaseMeasure, Status: rundir.StatusCompleted, RPCID: id,
		ReqBytes: req, RespBytes: resp, IntendedNs: at(0), DoneNs: at(rtt), RTTNs: rtt}
}

// TestCompactSampled sieves a trace: a short RPC's packets stay, a long
// RPC in its size's tail stays, long RPCs neither sampled nor in the tail
// go, and so do GRANTs, header-only DATA and TCP segments without data
// but each direction's first; the file is compressed, marked sieved, and
// the plain one gone. Experiment's Kept agrees with what stayed.
func TestCompactSampled(t *testing.T) {
	dir := t.TempDir()
	// 200 long RPCs of 50 kB (one size class): RTT rises with the id, so
	// the tail is the last two; ids are even, as a client's.
	var rows []rundir.RPC
	for i := range 200 {
		rows = append(rows, measuredRow(uint64(1000+2*i), 50_000, 100, int64(100+i)*us))
	}
	short := measuredRow(10, 100, 100, 5*us)
	warm := measuredRow(12, 100, 100, 5*us)
	warm.Phase = rundir.PhaseWarmup
	rows = append(rows, short, warm)
	var trace []rundir.Postcard
	for _, r := range rows {
		trace = append(trace, homaPkt(pc(1, 1, 2), h1, h2, r.RPCID, 0, 1000), homaPkt(pc(3, 3, 4), h2, h1, r.RPCID|1, 0, 100))
	}
	grant := homaPkt(pc(5, 5, 6), h2, h1, 1001, 0, 0)
	grant.HomaType = 0x11
	headerOnly := homaPkt(pc(5, 5, 6), h1, h2, 10, 0, 0)
	ack := tcpSeg(pc(9, 9, 10), h3, h2, 40000, 80, 501, 0)
	syn := tcpSeg(pc(7, 7, 8), h3, h2, 40000, 80, 500, 0)
	data := tcpSeg(pc(8, 8, 9), h3, h2, 40000, 80, 501, 1000)
	trace = append(trace, grant, headerOnly, ack, syn, data)
	writeTrace(t, dir, "s1", trace)

	s := &Sieve{}
	for i := range rows {
		s.Add(&rows[i])
	}
	s.Finish()
	st, err := Compact(dir, "exp", s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rundir.PostcardsPath(dir, "exp", "s1")); !os.IsNotExist(err) {
		t.Errorf("plain file still there: %v", err)
	}
	got, flags := readAll(t, dir, "s1")
	if flags&switchstats.PostcardSieved == 0 {
		t.Error("compacted file not marked sieved")
	}
	if st.Read != uint64(len(trace)) || st.Kept != uint64(len(got)) {
		t.Errorf("stats %+v, read %d and kept %d", st, len(trace), len(got))
	}
	ids := map[uint64]bool{}
	var tcp []rundir.Postcard
	for _, p := range got {
		if p.Kind == switchstats.KindTCP {
			tcp = append(tcp, p)
			continue
		}
		if p.HomaType != homaData || int(p.FrameLen) <= homaDataFrame {
			t.Errorf("kept a record the anatomy does not read: %+v", p)
		}
		ids[p.RPCID&^1] = true
	}
	if !slices.Equal(tcp, []rundir.Postcard{data, syn}) {
		t.Errorf("TCP records kept %+v, want the data segment and the SYN", tcp)
	}
	if !ids[10] || ids[12] {
		t.Errorf("short measured RPC kept %v (want true), warm-up RPC kept %v (want false)", ids[10], ids[12])
	}
	for _, id := range []uint64{1000 + 2*198, 1000 + 2*199} {
		if !ids[id] {
			t.Errorf("tail RPC %d not kept", id)
		}
	}
	long := 0
	for i := range rows[:200] {
		r := &rows[i]
		if ids[r.RPCID] != s.Kept(r) {
			t.Errorf("RPC %d: kept %v, Sieve.Kept says %v", r.RPCID, ids[r.RPCID], s.Kept(r))
		}
		if ids[r.RPCID] {
			long++
		}
	}
	// One in SampleEvery, and the tail: far fewer than all.
	if long < 200/SampleEvery/3 || long > 3*200/SampleEvery {
		t.Errorf("%d of 200 long RPCs kept, want about %d", long, 200/SampleEvery+2)
	}
	// A reader that builds its Sieve from the rows alone chooses the same.
	if r := SieveOf(rows); !maps.Equal(r.KeptIDs(), s.KeptIDs()) {
		t.Error("SieveOf(rows) keeps other RPCs than the writer's Sieve")
	}
}

// TestCompactAll compresses without a sieve: every record back, in order,
// the file not marked sieved.
func TestCompactAll(t *testing.T) {
	dir := t.TempDir()
	trace := []rundir.Postcard{homaPkt(pc(1, 1, 2), h1, h2, 4, 0, 1000), tcpSeg(pc(2, 2, 3), h3, h2, 1, 2, 3, 0)}
	writeTrace(t, dir, "s1", trace)
	if _, err := Compact(dir, "exp", nil); err != nil {
		t.Fatal(err)
	}
	got, flags := readAll(t, dir, "s1")
	if flags != 0 || !slices.Equal(got, trace) {
		t.Errorf("read back %+v (flags %d), want %+v unflagged", got, flags, trace)
	}
	if exps, err := Experiments(dir); err != nil || !slices.Equal(exps, []string{"exp"}) {
		t.Errorf("Experiments: %v, %v; want the compressed one", exps, err)
	}
}
