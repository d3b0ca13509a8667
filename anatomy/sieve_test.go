package anatomy

import (
	"fmt"
	"maps"
	"math/rand/v2"
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
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
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
	if r, err := SieveOf(RPCs(rows)); err != nil || !slices.Equal(r.KeptIDs(), s.KeptIDs()) {
		t.Errorf("SieveOf(rows) keeps other RPCs than the writer's Sieve (%v)", err)
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

// sieveByHand is the Sieve's choice as its definition says it, with every
// row in memory: per size class the sorted RTTs of the long RPCs and
// their nearest-rank P99; kept are the short RPCs, the long ones at or
// above their class's P99 and the sampled ones, of the measurement only.
func sieveByHand(rows []rundir.RPC) []uint64 {
	by := map[int][]int64{}
	for i := range rows {
		r := &rows[i]
		if measured(r) && r.RPCID != 0 && !rundir.IsShort(r.ReqBytes, r.RespBytes, ShortMaxBytes) {
			by[sizeClass(r)] = append(by[sizeClass(r)], r.DoneNs-r.IntendedNs)
		}
	}
	tail := map[int]int64{}
	for c, v := range by {
		slices.Sort(v)
		tail[c] = quantile(v, 0.99)
	}
	set := map[uint64]bool{}
	for i := range rows {
		r := &rows[i]
		if !measured(r) || r.RPCID == 0 {
			continue
		}
		if rundir.IsShort(r.ReqBytes, r.RespBytes, ShortMaxBytes) || r.DoneNs-r.IntendedNs >= tail[sizeClass(r)] || sampled(r.RPCID) {
			set[r.RPCID&^1] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// TestSieveMatchesDefinition checks the Sieve's choice against the one
// made with every row in memory, with its buffer spilling often, seldom
// or never: size classes of one to thousands of RPCs, ties at the P99,
// RTTs in any order, other phases and failures, TCP, server ids.
func TestSieveMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var mixed []rundir.RPC
	for i := range 5000 {
		req := []int64{100, 900, 5_000, 40_000, 150_000, 199_999}[rng.IntN(6)]
		r := measuredRow(uint64(2+2*i)|uint64(rng.IntN(2)), req, req, int64(rng.IntN(200))*us)
		switch rng.IntN(20) {
		case 0:
			r.Phase = rundir.PhaseWarmup
		case 1:
			r.Status = rundir.StatusFailed
		case 2:
			r.RPCID = 0
		}
		mixed = append(mixed, r)
	}
	var ties []rundir.RPC // 300 long RPCs, all but two of one RTT
	for i := range 300 {
		ties = append(ties, measuredRow(uint64(4000+2*i), 50_000, 100, 7*us))
	}
	ties[17].DoneNs, ties[250].DoneNs = at(9*us), at(8*us)
	var falling []rundir.RPC // RTT falls as ids rise, 101 and 199 of a class
	for i := range 101 {
		falling = append(falling, measuredRow(uint64(10_000+2*i), 3_000, 3_000, int64(1000-i)*us))
	}
	for i := range 199 {
		falling = append(falling, measuredRow(uint64(20_000+2*i), 70_000, 70_000, int64(1000-i)*us))
	}
	cases := []struct {
		name string
		rows []rundir.RPC
	}{
		{"none", nil},
		{"one long", []rundir.RPC{measuredRow(8, 5_000, 100, us)}},
		{"only short", []rundir.RPC{measuredRow(8, 100, 100, us), measuredRow(10, 1000, 1000, 2*us)}},
		{"ties", ties},
		{"falling", falling},
		{"mixed", mixed},
	}
	for _, tc := range cases {
		want := sieveByHand(tc.rows)
		for _, spillAt := range []int{1, 7, 1000, 0} {
			t.Run(fmt.Sprintf("%s/spill%d", tc.name, spillAt), func(t *testing.T) {
				s := &Sieve{spillAt: spillAt}
				for i := range tc.rows {
					s.Add(&tc.rows[i])
				}
				if err := s.Finish(); err != nil {
					t.Fatal(err)
				}
				if got := s.KeptIDs(); !slices.Equal(got, want) {
					t.Errorf("kept %d ids, by hand %d: %v", len(got), len(want), symmetricDiff(got, want))
				}
				for i := range tc.rows {
					r := &tc.rows[i]
					if r.RPCID != 0 && measured(r) && s.Kept(r) != s.KeepsID(r.RPCID) {
						t.Errorf("RPC %d: Kept %v, KeepsID %v", r.RPCID, s.Kept(r), s.KeepsID(r.RPCID))
					}
				}
			})
		}
	}
}

// symmetricDiff lists what one sorted list holds and the other not.
func symmetricDiff(a, b []uint64) []uint64 {
	var d []uint64
	for _, v := range a {
		if _, ok := slices.BinarySearch(b, v); !ok {
			d = append(d, v)
		}
	}
	for _, v := range b {
		if _, ok := slices.BinarySearch(a, v); !ok {
			d = append(d, v)
		}
	}
	return d
}

// TestSieveMemoryBounded adds a long experiment's rows (a million RPCs of
// three clients, every fourth one short) and checks what the Sieve holds
// while they arrive: at most its buffer of long RPCs, and a bit set of a
// few bits an RPC, not a row each.
func TestSieveMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a million rows")
	}
	const n, spillAt = 1_000_000, 4096
	s := &Sieve{spillAt: spillAt}
	defer s.Close()
	var r rundir.RPC
	for i := range n {
		client := uint64(i % 3)
		req := int64(5_000 + i%150_000)
		if i%4 == 0 {
			req = 200
		}
		r = measuredRow(client<<40|uint64(2+2*(i/3)), req, req, int64(i%997)*us)
		s.Add(&r)
		if len(s.long) > spillAt || cap(s.long) > 2*spillAt {
			t.Fatalf("row %d: %d long RPCs buffered (capacity %d), bound %d", i, len(s.long), cap(s.long), spillAt)
		}
	}
	// Three clients' consecutive ids, short ones among them all: a word
	// per 64 ids, and a partial word at each client's ends.
	if words, most := len(s.ids), n/64+3*2; words > most {
		t.Errorf("short ids take %d words of 64 bits, want at most %d", words, most)
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	if s.spill != nil || s.long != nil {
		t.Error("Finish left its spill file or buffer")
	}
}
