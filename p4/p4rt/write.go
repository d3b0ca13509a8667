package p4rt

import (
	"context"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

// Write applies a batch of updates in order with CONTINUE_ON_ERROR
// semantics and publishes the resulting tables to the pipeline once.
func (s *Server) Write(_ context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	if err := s.lockAsPrimary(req.GetDeviceId(), req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	fc, ts, err := s.current()
	if err != nil {
		return nil, err
	}
	if req.GetAtomicity() != p4v1.WriteRequest_CONTINUE_ON_ERROR {
		return nil, errorf(codes.Unimplemented, "atomicity %v is not supported: only CONTINUE_ON_ERROR", req.GetAtomicity())
	}
	errs := make([]error, len(req.GetUpdates()))
	tablesChanged := false
	for i, u := range req.GetUpdates() {
		changed, err := s.applyUpdate(fc.schema, ts, u)
		errs[i] = err
		tablesChanged = tablesChanged || changed
	}
	if tablesChanged && ts == s.live {
		if err := s.pl.Install(ts.contents()); err != nil {
			return nil, errorf(codes.Internal, "install tables: %v", err)
		}
	}
	if err := batchError("updates", errs); err != nil {
		return nil, err
	}
	return &p4v1.WriteResponse{}, nil
}

// applyUpdate applies one update to ts (tables) or the pipeline (counters,
// registers); changed reports whether a table changed.
func (s *Server) applyUpdate(sc *schema, ts *tableState, u *p4v1.Update) (changed bool, err error) {
	switch u.GetType() {
	case p4v1.Update_INSERT, p4v1.Update_MODIFY, p4v1.Update_DELETE:
	default:
		return false, errorf(codes.InvalidArgument, "update type %v", u.GetType())
	}
	ent := u.GetEntity()
	switch e := ent.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return s.writeTableEntry(sc, ts, u.GetType(), e.TableEntry)
	case *p4v1.Entity_CounterEntry:
		return false, s.writeCounter(sc, u.GetType(), e.CounterEntry)
	case *p4v1.Entity_RegisterEntry:
		return false, s.writeRegister(sc, u.GetType(), e.RegisterEntry)
	case *p4v1.Entity_MeterEntry:
		return false, s.writeMeter(sc, u.GetType(), e.MeterEntry)
	case *p4v1.Entity_ActionProfileMember:
		err := s.writeMember(sc, ts, u.GetType(), e.ActionProfileMember)
		return err == nil, err
	case *p4v1.Entity_ActionProfileGroup:
		err := s.writeGroup(sc, ts, u.GetType(), e.ActionProfileGroup)
		return err == nil, err
	case nil:
		return false, errorf(codes.InvalidArgument, "update without an entity")
	default:
		return false, errorf(codes.Unimplemented, "entity %T is not supported by this target", e)
	}
}

func (s *Server) writeTableEntry(sc *schema, ts *tableState, typ p4v1.Update_Type, te *p4v1.TableEntry) (bool, error) {
	ce, err := checkTableEntry(sc, te, typ)
	if err != nil {
		return false, err
	}
	t := ts.table(te.GetTableId())
	if te.GetIsDefaultAction() {
		if ce.te.GetAction() == nil {
			t.def = nil
		} else {
			if err := ce.keep(); err != nil {
				return false, err
			}
			t.def = ce
		}
		return true, nil
	}
	tsch := sc.tables[te.GetTableId()]
	if ce.profile != 0 && typ != p4v1.Update_DELETE {
		if ce.te.Action, err = checkIndirect(ts, tsch, ce.te.GetAction()); err != nil {
			return false, err
		}
	}
	_, exists := t.entries[ce.key]
	if typ != p4v1.Update_DELETE {
		if err := ce.keep(); err != nil {
			return false, err
		}
	}
	switch typ {
	case p4v1.Update_INSERT:
		if exists {
			return false, errorf(codes.AlreadyExists, "%s: entry exists, use MODIFY to change it", tsch.info.GetPreamble().GetName())
		}
		if size := tsch.info.GetSize(); size > 0 && int64(len(t.entries)) >= size {
			return false, errorf(codes.ResourceExhausted, "%s: table full (%d entries)", tsch.info.GetPreamble().GetName(), size)
		}
		t.entries[ce.key] = ce
	case p4v1.Update_MODIFY:
		if !exists {
			return false, errorf(codes.NotFound, "%s: no such entry to modify", tsch.info.GetPreamble().GetName())
		}
		t.entries[ce.key] = ce
	case p4v1.Update_DELETE:
		if !exists {
			return false, errorf(codes.NotFound, "%s: no such entry to delete", tsch.info.GetPreamble().GetName())
		}
		delete(t.entries, ce.key)
	}
	return true, nil
}

// indexRange resolves an optional index of an array of size: nil means every
// index.
func indexRange(idx *p4v1.Index, size int64, what string) (lo, hi int64, err error) {
	if idx == nil {
		return 0, size, nil
	}
	i := idx.GetIndex()
	if i < 0 {
		return 0, 0, errorf(codes.InvalidArgument, "%s: negative index %d", what, i)
	}
	if i >= size {
		return 0, 0, errorf(codes.OutOfRange, "%s: index %d beyond size %d", what, i, size)
	}
	return i, i + 1, nil
}

func (s *Server) writeCounter(sc *schema, typ p4v1.Update_Type, ce *p4v1.CounterEntry) error {
	c, ok := sc.counters[ce.GetCounterId()]
	if !ok {
		return errorf(codes.NotFound, "counter id %#08x not in the P4Info", ce.GetCounterId())
	}
	name := c.GetPreamble().GetName()
	if typ != p4v1.Update_MODIFY {
		return errorf(codes.InvalidArgument, "%s: counters only take MODIFY, not %v", name, typ)
	}
	lo, hi, err := indexRange(ce.GetIndex(), c.GetSize(), name)
	if err != nil {
		return err
	}
	if ce.GetData() == nil {
		return nil // spec: the value is not modified without data
	}
	for i := lo; i < hi; i++ {
		if err := s.pl.SetCounter(ce.GetCounterId(), int(i), uint64(ce.GetData().GetPacketCount()), uint64(ce.GetData().GetByteCount())); err != nil {
			return errorf(codes.Internal, "%s: %v", name, err)
		}
	}
	return nil
}

func (s *Server) writeRegister(sc *schema, typ p4v1.Update_Type, re *p4v1.RegisterEntry) error {
	r, ok := sc.registers[re.GetRegisterId()]
	if !ok {
		return errorf(codes.NotFound, "register id %#08x not in the P4Info", re.GetRegisterId())
	}
	name := r.GetPreamble().GetName()
	if typ != p4v1.Update_MODIFY {
		return errorf(codes.InvalidArgument, "%s: registers only take MODIFY, not %v", name, typ)
	}
	lo, hi, err := indexRange(re.GetIndex(), int64(r.GetSize()), name)
	if err != nil {
		return err
	}
	bs, ok := re.GetData().GetData().(*p4v1.P4Data_Bitstring)
	if !ok {
		return errorf(codes.InvalidArgument, "%s: data must be a bitstring", name)
	}
	v, err := canonical(bs.Bitstring, int(r.GetTypeSpec().GetBitstring().GetBit().GetBitwidth()), name)
	if err != nil {
		return err
	}
	for i := lo; i < hi; i++ {
		if err := s.pl.SetRegister(re.GetRegisterId(), int(i), uint32(toUint64(v))); err != nil {
			return errorf(codes.Internal, "%s: %v", name, err)
		}
	}
	return nil
}
