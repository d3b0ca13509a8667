package p4rt

import (
	"testing"

	"github.com/homatb/homatb/p4"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A batched Read with one bad entity streams the entities of the good ones,
// then fails with one p4.v1.Error per requested entity (the spec's batch
// example), instead of returning nothing.
func TestBatchedReadStreamsGoodEntitiesThenDetails(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	if err := h.write(ctl.id, update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 1}, 32, []byte{1}))); err != nil {
		t.Fatal(err)
	}
	got, err := h.read(
		&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4.TableIPv4LPM}}},
		&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: 0x12ffffff}}},
		&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: p4.RegisterQueuePeak, Index: &p4v1.Index{Index: 3}}}},
	)
	if status.Code(err) != codes.Unknown {
		t.Fatalf("read error %v, want UNKNOWN with details", err)
	}
	var tables, regs int
	for _, e := range got {
		switch {
		case e.GetTableEntry() != nil:
			tables++
		case e.GetRegisterEntry() != nil:
			regs++
		default:
			t.Errorf("unexpected entity %v", e)
		}
	}
	if tables != 1 || regs != 1 {
		t.Errorf("got %d table entries and %d register cells before the error, want 1 and 1", tables, regs)
	}
	want := []codes.Code{codes.OK, codes.NotFound, codes.OK}
	d := details(t, err)
	if len(d) != len(want) {
		t.Fatalf("%d details, want %d", len(d), len(want))
	}
	for i, e := range d {
		if codes.Code(e.GetCanonicalCode()) != want[i] {
			t.Errorf("detail %d: %v (%q), want %v", i, codes.Code(e.GetCanonicalCode()), e.GetMessage(), want[i])
		}
	}
}
