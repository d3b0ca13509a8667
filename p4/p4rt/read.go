package p4rt

import (
	"bytes"
	"slices"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// readChunk is how many entities go into one streamed ReadResponse.
const readChunk = 1000

// Read answers table, counter, meter and register reads, including the spec's
// wildcards (table_id 0, counter_id 0, register_id 0, unset match, unset
// index). If any entity is malformed, the entities of the others are still
// streamed, and then the Read fails with UNKNOWN and one p4.v1.Error per
// requested entity, as in the spec's batch example.
func (s *Server) Read(req *p4v1.ReadRequest, srv p4v1.P4Runtime_ReadServer) error {
	if err := s.checkDevice(req.GetDeviceId(), req.GetRole()); err != nil {
		return err
	}
	s.mu.Lock()
	fc, ts, err := s.current()
	if err != nil {
		s.mu.Unlock()
		return err
	}
	var out []*p4v1.Entity
	errs := make([]error, len(req.GetEntities()))
	for i, ent := range req.GetEntities() {
		var got []*p4v1.Entity
		got, errs[i] = s.readEntity(fc.schema, ts, ent)
		out = append(out, got...)
	}
	s.mu.Unlock()
	for len(out) > 0 {
		n := min(len(out), readChunk)
		if err := srv.Send(&p4v1.ReadResponse{Entities: out[:n]}); err != nil {
			return err
		}
		out = out[n:]
	}
	return batchError("entities", errs)
}

func (s *Server) readEntity(sc *schema, ts *tableState, ent *p4v1.Entity) ([]*p4v1.Entity, error) {
	switch e := ent.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return readTable(sc, ts, e.TableEntry)
	case *p4v1.Entity_CounterEntry:
		return s.readCounters(sc, e.CounterEntry)
	case *p4v1.Entity_RegisterEntry:
		return s.readRegisters(sc, e.RegisterEntry)
	case *p4v1.Entity_MeterEntry:
		return s.readMeters(sc, e.MeterEntry)
	case *p4v1.Entity_ActionProfileMember:
		return s.readMembers(sc, ts, e.ActionProfileMember)
	case *p4v1.Entity_ActionProfileGroup:
		return s.readGroups(sc, ts, e.ActionProfileGroup)
	case nil:
		return nil, errorf(codes.InvalidArgument, "entity not set")
	default:
		return nil, errorf(codes.Unimplemented, "entity %T is not supported by this target", e)
	}
}

func readTable(sc *schema, ts *tableState, q *p4v1.TableEntry) ([]*p4v1.Entity, error) {
	ids := sc.tableIDs
	if q.GetTableId() != 0 {
		if _, ok := sc.tables[q.GetTableId()]; !ok {
			return nil, errorf(codes.NotFound, "table id %#08x not in the P4Info", q.GetTableId())
		}
		ids = []uint32{q.GetTableId()}
	} else if len(q.GetMatch()) != 0 {
		return nil, errorf(codes.InvalidArgument, "a match filter needs a table_id")
	}
	var match []*p4v1.FieldMatch
	if len(q.GetMatch()) != 0 {
		tsch := sc.tables[q.GetTableId()]
		seen := map[uint32]bool{}
		for _, m := range q.GetMatch() {
			r, _, err := checkFieldMatch(tsch, m, seen)
			if err != nil {
				return nil, err
			}
			match = append(match, r.canon)
		}
		slices.SortFunc(match, func(a, b *p4v1.FieldMatch) int { return int(a.GetFieldId()) - int(b.GetFieldId()) })
	}
	keep := func(te *p4v1.TableEntry) bool {
		if match != nil && !sameMatch(match, te.GetMatch()) {
			return false
		}
		if q.GetPriority() != 0 && q.GetPriority() != te.GetPriority() {
			return false
		}
		if id := q.GetAction().GetAction().GetActionId(); id != 0 && id != te.GetAction().GetAction().GetActionId() {
			return false
		}
		if q.GetControllerMetadata() != 0 && q.GetControllerMetadata() != te.GetControllerMetadata() {
			return false
		}
		return len(q.GetMetadata()) == 0 || bytes.Equal(q.GetMetadata(), te.GetMetadata())
	}
	var out []*p4v1.Entity
	for _, id := range ids {
		t := ts.tables[id]
		if q.GetIsDefaultAction() {
			te := &p4v1.TableEntry{TableId: id, IsDefaultAction: true, Action: sc.p4Default(sc.tables[id].info)}
			if t != nil && t.def != nil {
				var err error
				if te, err = t.def.entry(); err != nil {
					return nil, err
				}
			}
			if keep(te) {
				out = append(out, tableEntity(te))
			}
			continue
		}
		if t == nil {
			continue
		}
		keys := make([]string, 0, len(t.entries))
		for k := range t.entries {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			te, err := t.entries[k].entry()
			if err != nil {
				return nil, err
			}
			if keep(te) {
				out = append(out, tableEntity(te))
			}
		}
	}
	return out, nil
}

func sameMatch(a, b []*p4v1.FieldMatch) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func tableEntity(te *p4v1.TableEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: proto.Clone(te).(*p4v1.TableEntry)}}
}

func (s *Server) readCounters(sc *schema, q *p4v1.CounterEntry) ([]*p4v1.Entity, error) {
	ids := sc.counterID
	if q.GetCounterId() != 0 {
		if _, ok := sc.counters[q.GetCounterId()]; !ok {
			return nil, errorf(codes.NotFound, "counter id %#08x not in the P4Info", q.GetCounterId())
		}
		ids = []uint32{q.GetCounterId()}
	}
	var out []*p4v1.Entity
	for _, id := range ids {
		c := sc.counters[id]
		lo, hi, err := indexRange(q.GetIndex(), c.GetSize(), c.GetPreamble().GetName())
		if err != nil {
			return nil, err
		}
		for i := lo; i < hi; i++ {
			pk, by, err := s.pl.Counter(id, int(i))
			if err != nil {
				return nil, errorf(codes.Internal, "%s: %v", c.GetPreamble().GetName(), err)
			}
			out = append(out, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
				CounterId: id, Index: &p4v1.Index{Index: i},
				Data: &p4v1.CounterData{PacketCount: int64(pk), ByteCount: int64(by)},
			}}})
		}
	}
	return out, nil
}

func (s *Server) readRegisters(sc *schema, q *p4v1.RegisterEntry) ([]*p4v1.Entity, error) {
	ids := sc.regIDs
	if q.GetRegisterId() != 0 {
		if _, ok := sc.registers[q.GetRegisterId()]; !ok {
			return nil, errorf(codes.NotFound, "register id %#08x not in the P4Info", q.GetRegisterId())
		}
		ids = []uint32{q.GetRegisterId()}
	}
	var out []*p4v1.Entity
	for _, id := range ids {
		r := sc.registers[id]
		lo, hi, err := indexRange(q.GetIndex(), int64(r.GetSize()), r.GetPreamble().GetName())
		if err != nil {
			return nil, err
		}
		for i := lo; i < hi; i++ {
			v, err := s.pl.Register(id, int(i))
			if err != nil {
				return nil, errorf(codes.Internal, "%s: %v", r.GetPreamble().GetName(), err)
			}
			out = append(out, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
				RegisterId: id, Index: &p4v1.Index{Index: i},
				Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: fromUint64(uint64(v))}},
			}}})
		}
	}
	return out, nil
}
