package p4rtclient

import (
	"context"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// MeterValue is one cell of an indirect meter: its rates in the meter's
// unit per second and bursts in the unit (P4Runtime's MeterConfig). The
// zero config is P4Runtime's default, every packet green.
type MeterValue struct {
	Index                    int64
	CIR, CBurst, PIR, PBurst int64
}

// meter returns an indirect meter's id.
func (s *Schema) meter(name string) (uint32, error) {
	if m := s.meters[name]; m != nil {
		return m.GetPreamble().GetId(), nil
	}
	return 0, fmt.Errorf("meter %q: no such meter in the P4Info", name)
}

// WriteMeters sets cells of the named meter (MODIFY, the one update
// meters take), in one Write; the client re-pushes them after a switch
// restart.
func (c *Client) WriteMeters(ctx context.Context, name string, cells ...MeterValue) error {
	s, err := c.NeedSchema()
	if err != nil {
		return err
	}
	id, err := s.meter(name)
	if err != nil {
		return err
	}
	updates := make([]*p4v1.Update, 0, len(cells))
	for _, m := range cells {
		me := &p4v1.MeterEntry{MeterId: id, Index: &p4v1.Index{Index: m.Index}}
		if m != (MeterValue{Index: m.Index}) {
			me.Config = &p4v1.MeterConfig{Cir: m.CIR, Cburst: m.CBurst, Pir: m.PIR, Pburst: m.PBurst}
		}
		updates = append(updates, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: me}}})
	}
	return c.Write(ctx, updates...)
}

// ReadMeter reads every cell of the named meter.
func (c *Client) ReadMeter(ctx context.Context, name string) ([]MeterValue, error) {
	ents, err := c.readIndexed(ctx, name, func(s *Schema) (*p4v1.Entity, error) {
		id, err := s.meter(name)
		return &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{MeterId: id}}}, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]MeterValue, 0, len(ents))
	for _, ent := range ents {
		if me := ent.GetMeterEntry(); me != nil {
			mc := me.GetConfig()
			out = append(out, MeterValue{Index: me.GetIndex().GetIndex(), CIR: mc.GetCir(), CBurst: mc.GetCburst(), PIR: mc.GetPir(), PBurst: mc.GetPburst()})
		}
	}
	return out, nil
}
