package p4rt

import (
	"slices"

	"github.com/homatb/homatb/p4/pipeline"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// checkedEntry is a validated table entry: the canonical P4Runtime form (what
// Read returns) and the pipeline form (what packets match).
type checkedEntry struct {
	// te is the canonical entry, what Read returns, until the entry is
	// stored (keep): then wire holds it marshalled, a tenth of the
	// message's memory (a fabric of a thousand switches holds over a
	// million entries).
	te   *p4v1.TableEntry
	wire []byte
	pe   pipeline.Entry
	key  string // identity of the entry: table, match and priority
	// profile is the table's action profile when the entry refers to one
	// of its members or groups (te's action), which ref names; pe's action
	// is then resolved by tableState.contents.
	profile uint32
	ref     profileRef
}

// profileRef is the member (group false) or group an indirect entry runs.
type profileRef struct {
	id    uint32
	group bool
}

// keep readies ce for the table: its entry marshalled, its profile
// reference noted.
func (ce *checkedEntry) keep() error {
	switch r := ce.te.GetAction().GetType().(type) {
	case *p4v1.TableAction_ActionProfileMemberId:
		ce.ref = profileRef{id: r.ActionProfileMemberId}
	case *p4v1.TableAction_ActionProfileGroupId:
		ce.ref = profileRef{id: r.ActionProfileGroupId, group: true}
	}
	wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(ce.te)
	if err != nil {
		return errorf(codes.Internal, "keep entry: %v", err)
	}
	ce.wire, ce.te = wire, nil
	return nil
}

// entry is the canonical entry, what Read returns.
func (ce *checkedEntry) entry() (*p4v1.TableEntry, error) {
	if ce.te != nil {
		return ce.te, nil
	}
	te := &p4v1.TableEntry{}
	if err := proto.Unmarshal(ce.wire, te); err != nil {
		return nil, errorf(codes.Internal, "read a kept entry: %v", err)
	}
	return te, nil
}

// checkTableEntry validates te for an update of type typ against s and
// returns its canonical form. DELETE needs only the key.
func checkTableEntry(s *schema, te *p4v1.TableEntry, typ p4v1.Update_Type) (*checkedEntry, error) {
	ts, ok := s.tables[te.GetTableId()]
	if !ok {
		return nil, errorf(codes.NotFound, "table id %#08x not in the P4Info", te.GetTableId())
	}
	name := ts.info.GetPreamble().GetName()
	if te.GetIsConst() {
		return nil, errorf(codes.InvalidArgument, "%s: is_const must be false in a write", name)
	}
	if te.GetIdleTimeoutNs() != 0 {
		return nil, errorf(codes.InvalidArgument, "%s: the table has no idle timeout support", name)
	}
	if te.GetMeterConfig() != nil || te.GetCounterData() != nil || te.GetMeterCounterData() != nil {
		return nil, errorf(codes.InvalidArgument, "%s: the table has no direct meter or counter", name)
	}
	if te.GetTimeSinceLastHit() != nil {
		return nil, errorf(codes.InvalidArgument, "%s: time_since_last_hit is read-only", name)
	}
	out := &p4v1.TableEntry{
		TableId:            te.GetTableId(),
		Priority:           te.GetPriority(),
		ControllerMetadata: te.GetControllerMetadata(),
		Metadata:           te.GetMetadata(),
		IsDefaultAction:    te.GetIsDefaultAction(),
	}
	ce := &checkedEntry{te: out}
	if te.GetIsDefaultAction() {
		if typ != p4v1.Update_MODIFY {
			return nil, errorf(codes.InvalidArgument, "%s: the default entry can only be modified, not %v", name, typ)
		}
		if len(te.GetMatch()) != 0 || te.GetPriority() != 0 {
			return nil, errorf(codes.InvalidArgument, "%s: the default entry has no match and priority 0", name)
		}
		if ts.info.GetConstDefaultActionId() != 0 {
			return nil, errorf(codes.PermissionDenied, "%s: the default action is const", name)
		}
		ce.key = entryKey(out)
		if te.GetAction() == nil {
			return ce, nil // reset to the P4 default
		}
		a, call, err := checkAction(s, ts, te.GetAction(), true)
		if err != nil {
			return nil, err
		}
		out.Action, ce.pe.Action = a, call
		return ce, nil
	}

	if ts.needsPriority && te.GetPriority() <= 0 {
		return nil, errorf(codes.InvalidArgument, "%s: a table with ternary, range or optional fields needs priority > 0", name)
	}
	if !ts.needsPriority && te.GetPriority() != 0 {
		return nil, errorf(codes.InvalidArgument, "%s: priority must be 0 for a table with only exact and LPM fields", name)
	}
	if len(ts.fields) == 0 && typ == p4v1.Update_INSERT {
		return nil, errorf(codes.InvalidArgument, "%s: keyless table, only its default entry can be written", name)
	}
	seen := map[uint32]bool{}
	for _, m := range te.GetMatch() {
		fm, idx, err := checkFieldMatch(ts, m, seen)
		if err != nil {
			return nil, err
		}
		out.Match = append(out.Match, fm.canon)
		ce.pe.Match[idx] = fm.match
		if ts.lpmField == idx && !ts.needsPriority {
			ce.pe.Priority = int32(fm.prefixLen)
		}
	}
	for _, f := range ts.fields {
		if f.GetMatchType() == p4configv1.MatchField_EXACT && !seen[f.GetId()] {
			return nil, errorf(codes.InvalidArgument, "%s: exact field %s (id %d) missing", name, f.GetName(), f.GetId())
		}
	}
	slices.SortFunc(out.Match, func(a, b *p4v1.FieldMatch) int { return int(a.GetFieldId()) - int(b.GetFieldId()) })
	if ts.needsPriority {
		ce.pe.Priority = te.GetPriority()
	}
	ce.key = entryKey(out)
	if typ == p4v1.Update_DELETE {
		return ce, nil
	}
	if te.GetAction() == nil {
		return nil, errorf(codes.InvalidArgument, "%s: %v needs an action", name, typ)
	}
	if p := ts.info.GetImplementationId(); p != 0 {
		ce.profile = p // checked against the profile's state by the caller
		out.Action = proto.Clone(te.GetAction()).(*p4v1.TableAction)
		return ce, nil
	}
	a, call, err := checkAction(s, ts, te.GetAction(), false)
	if err != nil {
		return nil, err
	}
	out.Action, ce.pe.Action = a, call
	return ce, nil
}

type fieldResult struct {
	canon     *p4v1.FieldMatch
	match     pipeline.FieldMatch
	prefixLen int
}

func checkFieldMatch(ts *tableSchema, m *p4v1.FieldMatch, seen map[uint32]bool) (fieldResult, int, error) {
	tname := ts.info.GetPreamble().GetName()
	idx, ok := ts.fieldIndex[m.GetFieldId()]
	if !ok {
		return fieldResult{}, 0, errorf(codes.InvalidArgument, "%s: no match field id %d", tname, m.GetFieldId())
	}
	if seen[m.GetFieldId()] {
		return fieldResult{}, 0, errorf(codes.InvalidArgument, "%s: match field id %d given twice", tname, m.GetFieldId())
	}
	seen[m.GetFieldId()] = true
	f := ts.fields[idx]
	width := int(f.GetBitwidth())
	what := tname + " field " + f.GetName()
	full := pipeline.FieldMask(width)
	var r fieldResult
	switch f.GetMatchType() {
	case p4configv1.MatchField_EXACT:
		e := m.GetExact()
		if e == nil {
			return r, 0, errorf(codes.InvalidArgument, "%s: exact field given as %T", what, m.GetFieldMatchType())
		}
		v, err := canonical(e.GetValue(), width, what)
		if err != nil {
			return r, 0, err
		}
		r.canon = &p4v1.FieldMatch{FieldId: f.GetId(), FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
		r.match = pipeline.FieldMatch{Value: toUint64(v), Mask: full}
	case p4configv1.MatchField_LPM:
		l := m.GetLpm()
		if l == nil {
			return r, 0, errorf(codes.InvalidArgument, "%s: LPM field given as %T", what, m.GetFieldMatchType())
		}
		v, err := canonical(l.GetValue(), width, what)
		if err != nil {
			return r, 0, err
		}
		plen := int(l.GetPrefixLen())
		if plen <= 0 || plen > width {
			return r, 0, errorf(codes.InvalidArgument, "%s: prefix length %d outside 1..%d (omit the field for a /0)", what, plen, width)
		}
		mask, _ := pipeline.PrefixMask(width, plen)
		if x := toUint64(v); x&^mask != 0 {
			return r, 0, errorf(codes.InvalidArgument, "%s: value 0x%x has bits set beyond prefix length %d", what, v, plen)
		}
		r.canon = &p4v1.FieldMatch{FieldId: f.GetId(), FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: int32(plen)}}}
		r.match = pipeline.FieldMatch{Value: toUint64(v), Mask: mask}
		r.prefixLen = plen
	case p4configv1.MatchField_TERNARY:
		t := m.GetTernary()
		if t == nil {
			return r, 0, errorf(codes.InvalidArgument, "%s: ternary field given as %T", what, m.GetFieldMatchType())
		}
		v, err := canonical(t.GetValue(), width, what+" value")
		if err != nil {
			return r, 0, err
		}
		mk, err := canonical(t.GetMask(), width, what+" mask")
		if err != nil {
			return r, 0, err
		}
		vv, mm := toUint64(v), toUint64(mk)
		if mm == 0 {
			return r, 0, errorf(codes.InvalidArgument, "%s: mask 0 (omit the field for don't care)", what)
		}
		if vv&^mm != 0 {
			return r, 0, errorf(codes.InvalidArgument, "%s: value 0x%x has bits outside mask 0x%x", what, v, mk)
		}
		r.canon = &p4v1.FieldMatch{FieldId: f.GetId(), FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: v, Mask: mk}}}
		r.match = pipeline.FieldMatch{Value: vv, Mask: mm}
	default:
		return r, 0, errorf(codes.Unimplemented, "%s: match type %v not supported by this target", what, f.GetMatchType())
	}
	return r, idx, nil
}

// checkAction validates a direct action for table ts; isDefault applies the
// DEFAULT_ONLY / TABLE_ONLY scopes.
func checkAction(s *schema, ts *tableSchema, ta *p4v1.TableAction, isDefault bool) (*p4v1.TableAction, pipeline.ActionCall, error) {
	tname := ts.info.GetPreamble().GetName()
	var call pipeline.ActionCall
	a := ta.GetAction()
	if a == nil {
		return nil, call, errorf(codes.InvalidArgument, "%s: only direct actions are supported (got %T)", tname, ta.GetType())
	}
	ref, ok := ts.actions[a.GetActionId()]
	if !ok {
		return nil, call, errorf(codes.InvalidArgument, "%s: action id %#08x is not an action of this table", tname, a.GetActionId())
	}
	switch {
	case isDefault && ref.GetScope() == p4configv1.ActionRef_TABLE_ONLY:
		return nil, call, errorf(codes.PermissionDenied, "%s: action %#08x cannot be the default", tname, a.GetActionId())
	case !isDefault && ref.GetScope() == p4configv1.ActionRef_DEFAULT_ONLY:
		return nil, call, errorf(codes.PermissionDenied, "%s: action %#08x is default only", tname, a.GetActionId())
	}
	as, ok := s.actions[a.GetActionId()]
	if !ok {
		return nil, call, errorf(codes.InvalidArgument, "%s: action id %#08x not in the P4Info", tname, a.GetActionId())
	}
	aname := as.info.GetPreamble().GetName()
	if len(as.params) > pipeline.MaxParams {
		return nil, call, errorf(codes.Unimplemented, "%s: %d params, this target supports %d", aname, len(as.params), pipeline.MaxParams)
	}
	call.ID = a.GetActionId()
	out := &p4v1.Action{ActionId: a.GetActionId()}
	seen := map[uint32]bool{}
	for _, p := range a.GetParams() {
		idx, ok := as.paramIndex[p.GetParamId()]
		if !ok {
			return nil, call, errorf(codes.InvalidArgument, "%s: no param id %d", aname, p.GetParamId())
		}
		if seen[p.GetParamId()] {
			return nil, call, errorf(codes.InvalidArgument, "%s: param id %d given twice", aname, p.GetParamId())
		}
		seen[p.GetParamId()] = true
		info := as.params[idx]
		v, err := canonical(p.GetValue(), int(info.GetBitwidth()), aname+" param "+info.GetName())
		if err != nil {
			return nil, call, err
		}
		call.Params[idx] = toUint64(v)
		out.Params = append(out.Params, &p4v1.Action_Param{ParamId: p.GetParamId(), Value: v})
	}
	if len(seen) != len(as.params) {
		for _, info := range as.params {
			if !seen[info.GetId()] {
				return nil, call, errorf(codes.InvalidArgument, "%s: param %s (id %d) missing", aname, info.GetName(), info.GetId())
			}
		}
	}
	slices.SortFunc(out.Params, func(a, b *p4v1.Action_Param) int { return int(a.GetParamId()) - int(b.GetParamId()) })
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: out}}, call, nil
}

// entryKey is the identity of a canonical entry: a deterministic encoding of
// its table, sorted match and priority (and the default flag).
func entryKey(te *p4v1.TableEntry) string {
	k := &p4v1.TableEntry{TableId: te.GetTableId(), Match: te.GetMatch(), Priority: te.GetPriority(), IsDefaultAction: te.GetIsDefaultAction()}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(k)
	if err != nil {
		// Marshalling a message built from validated fields cannot fail.
		panic("p4rt: marshal entry key: " + err.Error())
	}
	return string(b)
}
