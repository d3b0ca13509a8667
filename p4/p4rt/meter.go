package p4rt

import (
	"github.com/homatb/homatb/p4/pipeline"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

// writeMeter applies a MeterEntry MODIFY (the only update meters take):
// the config for one index, or every index when the index is unset; no
// config resets the cells to P4Runtime's default, every packet green.
func (s *Server) writeMeter(sc *schema, typ p4v1.Update_Type, me *p4v1.MeterEntry) error {
	m, ok := sc.meters[me.GetMeterId()]
	if !ok {
		return errorf(codes.NotFound, "meter id %#08x not in the P4Info", me.GetMeterId())
	}
	name := m.GetPreamble().GetName()
	if typ != p4v1.Update_MODIFY {
		return errorf(codes.InvalidArgument, "%s: meters only take MODIFY, not %v", name, typ)
	}
	lo, hi, err := indexRange(me.GetIndex(), m.GetSize(), name)
	if err != nil {
		return err
	}
	c := me.GetConfig()
	cfg := pipeline.MeterConfig{CIR: c.GetCir(), CBurst: c.GetCburst(), PIR: c.GetPir(), PBurst: c.GetPburst()}
	if err := cfg.Check(); err != nil {
		return errorf(codes.InvalidArgument, "%s: %v", name, err)
	}
	for i := lo; i < hi; i++ {
		if err := s.pl.SetMeter(me.GetMeterId(), int(i), cfg); err != nil {
			return errorf(codes.Internal, "%s: %v", name, err)
		}
	}
	return nil
}

// readMeters answers a MeterEntry read: each cell with its config, which
// is left unset for a cell at the default.
func (s *Server) readMeters(sc *schema, q *p4v1.MeterEntry) ([]*p4v1.Entity, error) {
	ids := sc.meterIDs
	if q.GetMeterId() != 0 {
		if _, ok := sc.meters[q.GetMeterId()]; !ok {
			return nil, errorf(codes.NotFound, "meter id %#08x not in the P4Info", q.GetMeterId())
		}
		ids = []uint32{q.GetMeterId()}
	}
	var out []*p4v1.Entity
	for _, id := range ids {
		m := sc.meters[id]
		lo, hi, err := indexRange(q.GetIndex(), m.GetSize(), m.GetPreamble().GetName())
		if err != nil {
			return nil, err
		}
		for i := lo; i < hi; i++ {
			c, err := s.pl.Meter(id, int(i))
			if err != nil {
				return nil, errorf(codes.Internal, "%s: %v", m.GetPreamble().GetName(), err)
			}
			me := &p4v1.MeterEntry{MeterId: id, Index: &p4v1.Index{Index: i}}
			if c != (pipeline.MeterConfig{}) {
				me.Config = &p4v1.MeterConfig{Cir: c.CIR, Cburst: c.CBurst, Pir: c.PIR, Pburst: c.PBurst}
			}
			out = append(out, &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: me}})
		}
	}
	return out, nil
}
