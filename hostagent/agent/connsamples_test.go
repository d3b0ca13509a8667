package agent

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/tcprpc"
	"github.com/homatb/homatb/rundir"
)

// fakeConns reports two connections whose window grows with each read.
type fakeConns struct{ reads atomic.Uint32 }

func (f *fakeConns) Conns(buf []tcprpc.ConnInfo) []tcprpc.ConnInfo {
	n := f.reads.Add(1)
	return append(buf,
		tcprpc.ConnInfo{Peer: "10.0.0.1:4000", Slot: 0, CwndSegs: 10 * n, SRTTus: 100},
		tcprpc.ConnInfo{Peer: "10.0.0.2:4000", Slot: 0, CwndSegs: 5, SRTTus: 200, DeliveredCE: uint64(n)})
}

func TestConnSampler(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.tcp.csv")
	src := &fakeConns{}
	s, err := startConnSampler(path, "exp", "h2", src)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5*connSampleEvery/2 + connSampleEvery/4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := rundir.TCPConns().NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []rundir.TCPSample
	for {
		var row rundir.TCPSample
		if err := r.Read(&row); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	reads := int(src.reads.Load())
	if reads < 2 || len(rows) != 2*reads {
		t.Fatalf("%d reads gave %d rows, want two a read and at least two reads", reads, len(rows))
	}
	last := rows[len(rows)-2]
	if last.Experiment != "exp" || last.Host != "h2" || last.Peer != "10.0.0.1:4000" || last.CwndSegs != uint64(10*reads) || last.UnixNs == 0 {
		t.Errorf("last sample %+v", last)
	}
}
