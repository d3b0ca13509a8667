package anatomy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/runfmt"
)

const epoch = 1_700_000_000_000_000_000

// writeTrace writes one switch's postcards of experiment "exp" under dir.
func writeTrace(t *testing.T, dir, sw string, pcs []runfmt.Postcard) {
	t.Helper()
	path := runfmt.PostcardsPath(dir, "exp", sw)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b := switchstats.AppendPostcardHeader(nil, epoch)
	for _, p := range pcs {
		var rec [switchstats.PostcardLen]byte
		p.Encode(&rec)
		b = append(b, rec[:]...)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// homa is a Homa packet to server 10.0.0.<dst>:99 reaching the switch at
// arr (ns on its clock) and waiting queue ns there.
func homa(id uint64, typ uint8, off uint32, dst byte, arr, queue int64) runfmt.Postcard {
	return runfmt.Postcard{ArrivalNs: arr, EnqueueNs: arr, DequeueNs: arr + queue, EgressPort: 2, Queue: 7,
		Kind: switchstats.KindHoma, IPProto: 146, HomaType: typ, FrameLen: 200,
		SrcIP: [4]byte{10, 0, 0, 1}, DstIP: [4]byte{10, 0, 0, dst}, SrcPort: 40000, DstPort: 99,
		RPCID: id, Seq: off}
}

// TestRequestJoin checks the join on a known synthetic trace of two
// switches: a single-packet request queued 300 us then 50 us, a
// two-packet request, two requests to one server close together, and
// packets that are not requests.
func TestRequestJoin(t *testing.T) {
	dir := t.TempDir()
	const us = 1000
	writeTrace(t, dir, "s1", []runfmt.Postcard{
		homa(100, 0x10, 0, 2, 1000*us, 300*us),
		homa(101, 0x10, 0, 1, 1500*us, 10*us), // the response: odd id
		homa(102, 0x10, 0, 3, 2000*us, 0),
		homa(102, 0x10, 1400, 3, 2001*us, 0),
		homa(104, 0x10, 0, 4, 3000*us, 20*us),
		homa(106, 0x10, 0, 4, 3010*us, 40*us),
		homa(108, 0x11, 0, 5, 4000*us, 0), // a GRANT
		{Kind: switchstats.KindTCP, IPProto: 6, ArrivalNs: 5000 * us, DequeueNs: 6000 * us},
	})
	writeTrace(t, dir, "s2", []runfmt.Postcard{homa(100, 0x10, 0, 2, 1310*us, 50*us)})
	ix, err := Load(dir, "exp")
	if err != nil {
		t.Fatal(err)
	}
	at := func(ns int64) int64 { return epoch + ns }
	tests := []struct {
		name      string
		rpc       runfmt.RPC
		id        uint64
		ok        bool
		queue     int64
		hops      int
		byTime    bool
		wantID    uint64
		firstHop  string
		firstArrv int64
	}{
		{"by id", runfmt.RPC{Server: "10.0.0.2:99"}, 100, true, 350 * us, 2, false, 100, "s1", at(1000 * us)},
		{"by time", runfmt.RPC{Server: "10.0.0.2:99", SentNs: at(900 * us), DoneNs: at(2000 * us)}, 0, true, 350 * us, 2, true, 100, "s1", at(1000 * us)},
		{"by time, outside window", runfmt.RPC{Server: "10.0.0.2:99", SentNs: at(1100 * us), DoneNs: at(2000 * us)}, 0, false, 0, 0, false, 0, "", 0},
		{"two packets", runfmt.RPC{Server: "10.0.0.3:99"}, 102, false, 0, 0, false, 0, "", 0},
		{"ambiguous by time", runfmt.RPC{Server: "10.0.0.4:99", SentNs: at(2900 * us), DoneNs: at(3500 * us)}, 0, false, 0, 0, false, 0, "", 0},
		{"ambiguous by time, exact by rpcs.csv's rpc_id", runfmt.RPC{Server: "10.0.0.4:99", SentNs: at(2900 * us), DoneNs: at(3500 * us), RPCID: 106}, 0, true, 40 * us, 1, false, 106, "s1", at(3010 * us)},
		{"same, by id", runfmt.RPC{Server: "10.0.0.4:99"}, 106, true, 40 * us, 1, false, 106, "s1", at(3010 * us)},
		{"grant only", runfmt.RPC{Server: "10.0.0.5:99"}, 108, false, 0, 0, false, 0, "", 0},
		{"response id", runfmt.RPC{Server: "10.0.0.1:99"}, 101, false, 0, 0, false, 0, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := ix.Request(&tc.rpc, tc.id)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v (%+v)", ok, tc.ok, m)
			}
			if !ok {
				return
			}
			if m.QueueNs != tc.queue || len(m.Hops) != tc.hops || m.ByTime != tc.byTime || m.RPCID != tc.wantID ||
				m.Hops[0].Switch != tc.firstHop || m.Hops[0].ArrivalNs != tc.firstArrv {
				t.Errorf("match %+v", m)
			}
		})
	}
	if empty, err := Load(dir, "none"); err != nil || len(empty.byID) != 0 {
		t.Errorf("experiment without postcards: %v", err)
	}
}
