package dataplane

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/p4/switchstats"
)

// readPostcards reads a whole postcard file for a test.
func readPostcards(t testing.TB, path string) []switchstats.Postcard {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []switchstats.Postcard
	if _, err := switchstats.ReadPostcards(f, func(p *switchstats.Postcard) error {
		out = append(out, *p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPostcardsNoAllocs drives the forwarding path (ingest, enqueue, the
// inline pump, egress, the record, send) directly while recording, and
// checks that it does not allocate and that every frame got its record.
func TestPostcardsNoAllocs(t *testing.T) {
	pl := &testPipeline{}
	pl.route[2] = 2
	io := map[uint16]Port{1: newSinkPort(1 << 62), 2: newSinkPort(1 << 62)}
	d, err := NewWithPorts(Config{Ports: map[uint16]string{1: "a", 2: "b"}, Unshaped: true}, pl, io)
	if err != nil {
		t.Fatal(err)
	}
	defer d.closeSleepers()
	path := filepath.Join(t.TempDir(), "exp", "s1.postcards")
	if err := d.StartPostcards(path); err != nil {
		t.Fatal(err)
	}
	if err := d.StartPostcards(path); err == nil {
		t.Error("second StartPostcards succeeded")
	}
	ps := d.byNum[1]
	rs := newRxState(ps, d.cfg.BatchSize)
	frame := makeFrame(300, 2, 4, 1)
	step := func() {
		rs.sizes[0] = copy(rs.bufs[0], frame)
		if err := d.ingest(ps, rs, 1); err != nil {
			t.Fatal(err)
		}
	}
	step() // first use of lazily grown state, if any
	const runs = 1000
	if n := testing.AllocsPerRun(runs, step); n != 0 {
		t.Errorf("forwarding with postcards allocates %v times per frame", n)
	}
	s, err := d.StopPostcards()
	if err != nil {
		t.Fatal(err)
	}
	want := uint64(runs + 2) // AllocsPerRun runs once more to warm up
	if s.Records+s.Dropped != want || s.Records == 0 {
		t.Fatalf("summary %+v, want %d records in all", s, want)
	}
	got := readPostcards(t, path)
	if uint64(len(got)) != s.Records {
		t.Fatalf("file has %d records, summary says %d", len(got), s.Records)
	}
	p := got[len(got)-1]
	if p.IngressPort != 1 || p.EgressPort != 2 || p.Queue != 4 || p.FrameLen != 300 ||
		p.Kind != switchstats.KindOther || p.IPProto != 17 || p.DstIP != [4]byte{10, 0, 0, 2} ||
		p.ArrivalNs <= 0 || p.EnqueueNs < p.ArrivalNs || p.DequeueNs < p.EnqueueNs {
		t.Errorf("last record %+v", p)
	}
	if st := d.Stats().Ports[1]; st.Postcards != s.Records || st.PostcardDrops != s.Dropped {
		t.Errorf("stats postcards %d drops %d, summary %+v", st.Postcards, st.PostcardDrops, s)
	}
	if _, err := d.StopPostcards(); err == nil {
		t.Error("StopPostcards while not recording succeeded")
	}
}

// TestPostcardsAdmin starts and stops a recording over the admin handler
// while the dataplane runs, and checks that the queueing of a shaped
// port shows in the records.
func TestPostcardsAdmin(t *testing.T) {
	// 10 Mbit/s: a 1250 B frame takes 1 ms to serialize.
	r := startRig(t, func(c *Config) { c.Unshaped = false; c.LinkRateBps = 10e6 })
	h := r.d.AdminHandler()
	path := filepath.Join(t.TempDir(), "s1.postcards")
	post := func(url, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, url, strings.NewReader(body)))
		return rec
	}
	if rec := post("/postcards/start", `{"path": "`+path+`"}`); rec.Code != 200 {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	if rec := post("/postcards/start", `{"path": "`+path+`"}`); rec.Code != http.StatusConflict {
		t.Errorf("second start: %d", rec.Code)
	}
	if rec := post("/postcards/start", `{}`); rec.Code != http.StatusBadRequest {
		t.Errorf("start without path: %d", rec.Code)
	}
	for i := range 3 {
		r.ports[1].in <- makeFrame(1250, 2, 0, uint32(i))
	}
	r.recvN(t, 2, 3)
	rec := post("/postcards/stop", "")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"records": 3`) {
		t.Fatalf("stop: %d %s", rec.Code, rec.Body)
	}
	got := readPostcards(t, path)
	if len(got) != 3 {
		t.Fatalf("%d records, want 3", len(got))
	}
	// The third frame waited for two frames' serialization, unless the
	// frames arrived in separate batches far apart.
	last := got[2]
	if q := time.Duration(last.DequeueNs - last.EnqueueNs); got[2].ArrivalNs == got[0].ArrivalNs && q < 1500*time.Microsecond {
		t.Errorf("third frame queued %v, want about 2 ms", q)
	}
	for i, p := range got {
		if p.DequeueNs < p.EnqueueNs {
			t.Errorf("record %d dequeued before enqueued: %+v", i, p)
		}
	}
	if rec := post("/postcards/stop", ""); rec.Code != http.StatusConflict {
		t.Errorf("second stop: %d", rec.Code)
	}
}

// BenchmarkForwardPostcards forwards with per-packet records off and on in
// the same run, so their rates compare under the same machine load (the
// issue's target: on >= 0.9x off). One op is one forwarded frame.
func BenchmarkForwardPostcards(b *testing.B) {
	for _, size := range []int{64, 1500} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dB/postcards=%v", size, on), func(b *testing.B) {
				path := ""
				if on {
					path = filepath.Join(b.TempDir(), "bench.postcards")
				}
				benchForwardWith(b, benchOpts{size: size, shaped: true, postcards: path})
			})
		}
	}
}

// BenchmarkPostcardAdd is the cost a record adds to a forwarded frame:
// parsing its key and encoding it into the ring (the writer drains
// concurrently, as in forwarding).
func BenchmarkPostcardAdd(b *testing.B) {
	d, err := NewWithPorts(Config{Ports: map[uint16]string{1: "a"}}, &testPipeline{}, map[uint16]Port{1: newSinkPort(1)})
	if err != nil {
		b.Fatal(err)
	}
	defer d.closeSleepers()
	if err := d.StartPostcards(filepath.Join(b.TempDir(), "b.postcards")); err != nil {
		b.Fatal(err)
	}
	ps := d.byNum[1]
	p := &packet{buf: makeFrame(1500, 2, 3, 1), n: 1500, inPort: 1}
	r := d.rec.Load()
	b.ReportAllocs()
	for b.Loop() {
		r.add(ps, p, 1)
	}
	b.StopTimer()
	if _, err := d.StopPostcards(); err != nil {
		b.Fatal(err)
	}
}
