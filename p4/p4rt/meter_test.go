package p4rt

import (
	"testing"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/pipeline"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

func meterUpdate(typ p4v1.Update_Type, idx *p4v1.Index, c *p4v1.MeterConfig) *p4v1.Update {
	return &p4v1.Update{Type: typ, Entity: &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{
		MeterId: p4.MeterPriority, Index: idx, Config: c,
	}}}}
}

func TestMeterWriteRead(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	cfg := &p4v1.MeterConfig{Cir: 125000, Cburst: 3000, Pir: 125000, Pburst: 3000}
	if err := h.write(ctl.id, meterUpdate(p4v1.Update_MODIFY, &p4v1.Index{Index: 65}, cfg)); err != nil {
		t.Fatal(err)
	}
	got, err := h.srv.Pipeline().Meter(p4.MeterPriority, 65)
	if err != nil || got != (pipeline.MeterConfig{CIR: 125000, CBurst: 3000, PIR: 125000, PBurst: 3000}) {
		t.Fatalf("pipeline meter 65 = %+v, %v", got, err)
	}
	all, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != p4.MeterSlots {
		t.Errorf("wildcard meter read: %d cells, want %d", len(all), p4.MeterSlots)
	}
	configured := 0
	for _, e := range all {
		if me := e.GetMeterEntry(); me.GetConfig() != nil {
			configured++
			if me.GetIndex().GetIndex() != 65 || me.GetConfig().GetPburst() != 3000 {
				t.Errorf("read back %v", me)
			}
		}
	}
	if configured != 1 {
		t.Errorf("%d configured cells read back, want 1", configured)
	}
	// No config resets the cell.
	if err := h.write(ctl.id, meterUpdate(p4v1.Update_MODIFY, &p4v1.Index{Index: 65}, nil)); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.srv.Pipeline().Meter(p4.MeterPriority, 65); got != (pipeline.MeterConfig{}) {
		t.Errorf("after a reset: %+v", got)
	}
	for _, tc := range []struct {
		name string
		u    *p4v1.Update
		code codes.Code
	}{
		{"insert", meterUpdate(p4v1.Update_INSERT, &p4v1.Index{Index: 1}, cfg), codes.InvalidArgument},
		{"index beyond size", meterUpdate(p4v1.Update_MODIFY, &p4v1.Index{Index: p4.MeterSlots}, cfg), codes.OutOfRange},
		{"pir below cir", meterUpdate(p4v1.Update_MODIFY, &p4v1.Index{Index: 1}, &p4v1.MeterConfig{Cir: 10, Pir: 5}), codes.InvalidArgument},
		{"unknown meter", &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{MeterId: 0x14000099}}}}, codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.write(ctl.id, tc.u)
			if err == nil {
				t.Fatal("accepted")
			}
			if d := details(t, err); len(d) != 1 || codes.Code(d[0].GetCanonicalCode()) != tc.code {
				t.Errorf("errors %v, want one %v", d, tc.code)
			}
		})
	}
}
