package p4rtclient

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Schema resolves P4Info names to ids and widths, builds P4Runtime entities
// from named entries and decodes them back. Tables, actions, counters,
// meters and registers are found by their full name or, when unambiguous, their alias.
type Schema struct {
	info      *p4configv1.P4Info
	tables    map[string]*tableInfo
	tableIDs  map[uint32]*tableInfo
	actions   map[string]*actionInfo
	actionIDs map[uint32]*actionInfo
	counters  map[string]*p4configv1.Counter
	counterID map[uint32]*p4configv1.Counter
	registers map[string]*p4configv1.Register
	regIDs    map[uint32]*p4configv1.Register
	meters    map[string]*p4configv1.Meter
	meterIDs  map[uint32]*p4configv1.Meter
	profiles  map[string]*p4configv1.ActionProfile
	profIDs   map[uint32]*p4configv1.ActionProfile
}

type tableInfo struct {
	t        *p4configv1.Table
	fields   map[string]*p4configv1.MatchField
	fieldIDs map[uint32]*p4configv1.MatchField
	refs     map[uint32]*p4configv1.ActionRef
}

type actionInfo struct {
	a        *p4configv1.Action
	params   map[string]*p4configv1.Action_Param
	paramIDs map[uint32]*p4configv1.Action_Param
}

// NewSchema indexes a P4Info and checks it: ids non-zero and unique, names
// unique, widths positive, and every table's actions declared.
func NewSchema(info *p4configv1.P4Info) (*Schema, error) {
	if info == nil {
		return nil, errors.New("no P4Info")
	}
	s := &Schema{
		info:      info,
		tables:    map[string]*tableInfo{},
		tableIDs:  map[uint32]*tableInfo{},
		actions:   map[string]*actionInfo{},
		actionIDs: map[uint32]*actionInfo{},
		counters:  map[string]*p4configv1.Counter{},
		counterID: map[uint32]*p4configv1.Counter{},
		registers: map[string]*p4configv1.Register{},
		regIDs:    map[uint32]*p4configv1.Register{},
		meters:    map[string]*p4configv1.Meter{},
		meterIDs:  map[uint32]*p4configv1.Meter{},
		profiles:  map[string]*p4configv1.ActionProfile{},
		profIDs:   map[uint32]*p4configv1.ActionProfile{},
	}
	ids := map[uint32]string{}
	claim := func(kind string, p *p4configv1.Preamble) error {
		if p == nil || p.GetId() == 0 || p.GetName() == "" {
			return fmt.Errorf("%s %q: missing id or name", kind, p.GetName())
		}
		if other, dup := ids[p.GetId()]; dup {
			return fmt.Errorf("%s %q: id %#x already used by %s", kind, p.GetName(), p.GetId(), other)
		}
		ids[p.GetId()] = kind + " " + p.GetName()
		return nil
	}
	for _, a := range info.GetActions() {
		if err := claim("action", a.GetPreamble()); err != nil {
			return nil, err
		}
		ai := &actionInfo{a: a, params: map[string]*p4configv1.Action_Param{}, paramIDs: map[uint32]*p4configv1.Action_Param{}}
		for _, p := range a.GetParams() {
			if p.GetId() == 0 || p.GetName() == "" || p.GetBitwidth() <= 0 {
				return nil, fmt.Errorf("action %q: param %q: missing id, name or bitwidth", a.GetPreamble().GetName(), p.GetName())
			}
			if ai.params[p.GetName()] != nil || ai.paramIDs[p.GetId()] != nil {
				return nil, fmt.Errorf("action %q: param %q declared twice", a.GetPreamble().GetName(), p.GetName())
			}
			ai.params[p.GetName()] = p
			ai.paramIDs[p.GetId()] = p
		}
		s.actionIDs[a.GetPreamble().GetId()] = ai
	}
	for _, t := range info.GetTables() {
		if err := claim("table", t.GetPreamble()); err != nil {
			return nil, err
		}
		ti := &tableInfo{t: t, fields: map[string]*p4configv1.MatchField{}, fieldIDs: map[uint32]*p4configv1.MatchField{}, refs: map[uint32]*p4configv1.ActionRef{}}
		name := t.GetPreamble().GetName()
		for _, f := range t.GetMatchFields() {
			if f.GetId() == 0 || f.GetName() == "" || f.GetBitwidth() <= 0 {
				return nil, fmt.Errorf("table %q: match field %q: missing id, name or bitwidth", name, f.GetName())
			}
			if ti.fields[f.GetName()] != nil || ti.fieldIDs[f.GetId()] != nil {
				return nil, fmt.Errorf("table %q: match field %q declared twice", name, f.GetName())
			}
			if _, err := kindOf(f); err != nil {
				return nil, fmt.Errorf("table %q: match field %q: %w", name, f.GetName(), err)
			}
			ti.fields[f.GetName()] = f
			ti.fieldIDs[f.GetId()] = f
		}
		for _, r := range t.GetActionRefs() {
			if s.actionIDs[r.GetId()] == nil {
				return nil, fmt.Errorf("table %q: action ref %#x is not a declared action", name, r.GetId())
			}
			ti.refs[r.GetId()] = r
		}
		s.tableIDs[t.GetPreamble().GetId()] = ti
	}
	for _, c := range info.GetCounters() {
		if err := claim("counter", c.GetPreamble()); err != nil {
			return nil, err
		}
		s.counterID[c.GetPreamble().GetId()] = c
	}
	for _, r := range info.GetRegisters() {
		if err := claim("register", r.GetPreamble()); err != nil {
			return nil, err
		}
		s.regIDs[r.GetPreamble().GetId()] = r
	}
	for _, m := range info.GetMeters() {
		if err := claim("meter", m.GetPreamble()); err != nil {
			return nil, err
		}
		s.meterIDs[m.GetPreamble().GetId()] = m
	}
	for _, p := range info.GetActionProfiles() {
		if err := claim("action profile", p.GetPreamble()); err != nil {
			return nil, err
		}
		for _, tid := range p.GetTableIds() {
			if s.tableIDs[tid] == nil {
				return nil, fmt.Errorf("action profile %q: table %#x is not a declared table", p.GetPreamble().GetName(), tid)
			}
		}
		s.profIDs[p.GetPreamble().GetId()] = p
	}
	indexNames(s.profiles, s.profIDs, (*p4configv1.ActionProfile).GetPreamble)
	indexNames(s.tables, s.tableIDs, func(t *tableInfo) *p4configv1.Preamble { return t.t.GetPreamble() })
	indexNames(s.actions, s.actionIDs, func(a *actionInfo) *p4configv1.Preamble { return a.a.GetPreamble() })
	indexNames(s.counters, s.counterID, (*p4configv1.Counter).GetPreamble)
	indexNames(s.registers, s.regIDs, (*p4configv1.Register).GetPreamble)
	indexNames(s.meters, s.meterIDs, (*p4configv1.Meter).GetPreamble)
	return s, nil
}

// indexNames fills byName with every object's full name, then with aliases
// that name exactly one object and do not shadow a full name.
func indexNames[T any](byName map[string]T, byID map[uint32]T, pre func(T) *p4configv1.Preamble) {
	aliases := map[string][]T{}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		v := byID[id]
		byName[pre(v).GetName()] = v
		if a := pre(v).GetAlias(); a != "" && a != pre(v).GetName() {
			aliases[a] = append(aliases[a], v)
		}
	}
	for a, vs := range aliases {
		if _, taken := byName[a]; !taken && len(vs) == 1 {
			byName[a] = vs[0]
		}
	}
}

// P4Info returns the P4Info the schema was built from.
func (s *Schema) P4Info() *p4configv1.P4Info { return s.info }

func kindOf(f *p4configv1.MatchField) (MatchKind, error) {
	switch f.GetMatchType() {
	case p4configv1.MatchField_EXACT:
		return MatchExact, nil
	case p4configv1.MatchField_LPM:
		return MatchLPM, nil
	case p4configv1.MatchField_TERNARY:
		return MatchTernary, nil
	case p4configv1.MatchField_RANGE:
		return MatchRange, nil
	case p4configv1.MatchField_OPTIONAL:
		return MatchOptional, nil
	}
	return 0, fmt.Errorf("unsupported match type %v %q", f.GetMatchType(), f.GetOtherMatchType())
}

func (s *Schema) table(name string) (*tableInfo, error) {
	if t := s.tables[name]; t != nil {
		return t, nil
	}
	return nil, &EntryError{Table: name, Err: errors.New("no such table in the P4Info")}
}

// TableID returns the id of a table.
func (s *Schema) TableID(name string) (uint32, error) {
	t, err := s.table(name)
	if err != nil {
		return 0, err
	}
	return t.t.GetPreamble().GetId(), nil
}

// TableName returns the full name of a table id ("" if unknown).
func (s *Schema) TableName(id uint32) string {
	if t := s.tableIDs[id]; t != nil {
		return t.t.GetPreamble().GetName()
	}
	return ""
}

// Counter returns an indirect counter's P4Info entry.
func (s *Schema) Counter(name string) (*p4configv1.Counter, error) {
	if c := s.counters[name]; c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("counter %q: no such counter in the P4Info", name)
}

// Register returns a register's P4Info entry.
func (s *Schema) Register(name string) (*p4configv1.Register, error) {
	if r := s.registers[name]; r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("register %q: no such register in the P4Info", name)
}

// TableEntry encodes a named entry: every name resolved, every value made
// canonical and checked against its width, the action checked against the
// table and its scope, and the key fields put in field-id order.
func (s *Schema) TableEntry(e Entry) (*p4v1.TableEntry, error) {
	t, err := s.table(e.Table)
	if err != nil {
		return nil, err
	}
	tname := t.t.GetPreamble().GetName()
	fail := func(ee *EntryError) error {
		ee.Table = tname
		return ee
	}
	te := &p4v1.TableEntry{TableId: t.t.GetPreamble().GetId(), Priority: e.Priority, IsDefaultAction: e.Default}
	if e.Default && len(e.Match) > 0 {
		return nil, fail(&EntryError{Err: errors.New("a default entry has no match fields")})
	}
	needsPriority := false
	seen := map[uint32]bool{}
	for _, m := range e.Match {
		f := t.fields[m.Field]
		if f == nil {
			return nil, fail(&EntryError{Field: m.Field, Err: errors.New("no such match field in this table")})
		}
		if seen[f.GetId()] {
			return nil, fail(&EntryError{Field: m.Field, Err: errors.New("matched twice")})
		}
		seen[f.GetId()] = true
		fm, err := encodeMatch(m, f)
		if err != nil {
			return nil, fail(&EntryError{Field: m.Field, Value: m.Value, Err: err})
		}
		kind, _ := kindOf(f)
		needsPriority = needsPriority || kind == MatchTernary || kind == MatchRange || kind == MatchOptional
		if fm != nil {
			te.Match = append(te.Match, fm)
		}
	}
	if !e.Default {
		for _, f := range t.t.GetMatchFields() {
			if f.GetMatchType() == p4configv1.MatchField_EXACT && !seen[f.GetId()] {
				return nil, fail(&EntryError{Field: f.GetName(), Err: errors.New("exact field missing")})
			}
		}
		for _, f := range t.t.GetMatchFields() {
			k, _ := kindOf(f)
			needsPriority = needsPriority || k == MatchTernary || k == MatchRange || k == MatchOptional
		}
		if needsPriority && e.Priority <= 0 {
			return nil, fail(&EntryError{Err: errors.New("table has ternary, range or optional fields: priority must be > 0")})
		}
		if !needsPriority && e.Priority != 0 {
			return nil, fail(&EntryError{Err: fmt.Errorf("priority %d on a table without ternary, range or optional fields", e.Priority)})
		}
	}
	slices.SortFunc(te.Match, func(a, b *p4v1.FieldMatch) int { return int(a.GetFieldId()) - int(b.GetFieldId()) })
	if indirect := t.t.GetImplementationId() != 0; indirect && !e.Default {
		switch {
		case e.Action != "" || (e.Member != 0) == (e.Group != 0):
			return nil, fail(&EntryError{Action: e.Action, Err: errors.New("an entry of a table with an action profile names exactly one member or group, no action")})
		case e.Member != 0:
			te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: e.Member}}
		default:
			te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: e.Group}}
		}
		return te, nil
	}
	if e.Member != 0 || e.Group != 0 {
		return nil, fail(&EntryError{Err: errors.New("member or group in a table without an action profile")})
	}
	if e.Action == "" {
		if !e.Default {
			return nil, fail(&EntryError{Err: errors.New("no action")})
		}
		return te, nil // MODIFY of the default entry without action resets it
	}
	act, aerr := s.encodeAction(t, e)
	if aerr != nil {
		return nil, fail(aerr)
	}
	te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: act}}
	return te, nil
}

func (s *Schema) encodeAction(t *tableInfo, e Entry) (*p4v1.Action, *EntryError) {
	a := s.actions[e.Action]
	if a == nil {
		return nil, &EntryError{Action: e.Action, Err: errors.New("no such action in the P4Info")}
	}
	aname := a.a.GetPreamble().GetName()
	ref := t.refs[a.a.GetPreamble().GetId()]
	if ref == nil {
		return nil, &EntryError{Action: aname, Err: errors.New("not an action of this table")}
	}
	switch {
	case e.Default && ref.GetScope() == p4configv1.ActionRef_TABLE_ONLY:
		return nil, &EntryError{Action: aname, Err: errors.New("action is TABLE_ONLY and cannot be the default")}
	case !e.Default && ref.GetScope() == p4configv1.ActionRef_DEFAULT_ONLY:
		return nil, &EntryError{Action: aname, Err: errors.New("action is DEFAULT_ONLY")}
	}
	for name := range e.Params {
		if a.params[name] == nil {
			return nil, &EntryError{Action: aname, Param: name, Err: errors.New("no such parameter")}
		}
	}
	act := &p4v1.Action{ActionId: a.a.GetPreamble().GetId()}
	for _, p := range a.a.GetParams() {
		v, ok := e.Params[p.GetName()]
		if !ok {
			return nil, &EntryError{Action: aname, Param: p.GetName(), Err: errors.New("parameter missing")}
		}
		b, err := encodeBits(v, p.GetBitwidth())
		if err != nil {
			return nil, &EntryError{Action: aname, Param: p.GetName(), Value: v, Err: err}
		}
		act.Params = append(act.Params, &p4v1.Action_Param{ParamId: p.GetId(), Value: b})
	}
	return act, nil
}

// encodeMatch builds one FieldMatch; it returns nil for a match that means
// "don't care" and must be omitted (a full-width ternary mask of zero is an
// error, as the spec says to omit the field instead).
func encodeMatch(m Match, f *p4configv1.MatchField) (*p4v1.FieldMatch, error) {
	kind, err := kindOf(f)
	if err != nil {
		return nil, err
	}
	if m.Kind != kind {
		return nil, fmt.Errorf("field is %s, entry gives %s", kind, m.Kind)
	}
	w := f.GetBitwidth()
	v, err := encodeBits(m.Value, w)
	if err != nil {
		return nil, err
	}
	fm := &p4v1.FieldMatch{FieldId: f.GetId()}
	switch kind {
	case MatchExact:
		fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}
	case MatchOptional:
		fm.FieldMatchType = &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: v}}
	case MatchLPM:
		if m.PrefixLen <= 0 || m.PrefixLen > w {
			return nil, fmt.Errorf("prefix length %d outside 1..%d", m.PrefixLen, w)
		}
		if hostBitsSet(v, w, m.PrefixLen) {
			return nil, fmt.Errorf("value %s has bits set beyond the /%d prefix", m.Value, m.PrefixLen)
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: m.PrefixLen}}
	case MatchTernary:
		mask, err := encodeBits(m.Mask, w)
		if err != nil {
			return nil, fmt.Errorf("mask: %w", err)
		}
		if bitLen(mask) == 0 {
			return nil, errors.New("mask is zero: omit the field instead")
		}
		if !bytes.Equal(and(v, mask), canonical(v)) {
			return nil, fmt.Errorf("value %s has bits outside mask %s", m.Value, m.Mask)
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: v, Mask: mask}}
	case MatchRange:
		hi, err := encodeBits(m.High, w)
		if err != nil {
			return nil, fmt.Errorf("high: %w", err)
		}
		if cmpBig(v, hi) > 0 {
			return nil, fmt.Errorf("range %s..%s is empty", m.Value, m.High)
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: v, High: hi}}
	}
	return fm, nil
}

// hostBitsSet reports whether v (width w) has a one below the prefix.
func hostBitsSet(v []byte, w, prefix int32) bool {
	full := padTo(v, bytesFor(w))
	for bit := prefix; bit < w; bit++ {
		// Bit 0 is the most significant of the w-bit field.
		pos := int(bytesFor(w))*8 - int(w) + int(bit)
		if full[pos/8]&(0x80>>(pos%8)) != 0 {
			return true
		}
	}
	return false
}

func and(a, b []byte) []byte {
	n := max(len(a), len(b))
	pa, pb := padTo(a, n), padTo(b, n)
	out := make([]byte, n)
	for i := range out {
		out[i] = pa[i] & pb[i]
	}
	return canonical(out)
}

func cmpBig(a, b []byte) int {
	ca, cb := canonical(a), canonical(b)
	if len(ca) != len(cb) {
		return len(ca) - len(cb)
	}
	return bytes.Compare(ca, cb)
}

// Entry decodes a table entry read from a switch back into names.
func (s *Schema) Entry(te *p4v1.TableEntry) (Entry, error) {
	t := s.tableIDs[te.GetTableId()]
	if t == nil {
		return Entry{}, fmt.Errorf("table id %#x is not in the P4Info", te.GetTableId())
	}
	e := Entry{Table: t.t.GetPreamble().GetName(), Priority: te.GetPriority(), Default: te.GetIsDefaultAction()}
	for _, fm := range te.GetMatch() {
		f := t.fieldIDs[fm.GetFieldId()]
		if f == nil {
			return Entry{}, fmt.Errorf("table %q: field id %d is not in the P4Info", e.Table, fm.GetFieldId())
		}
		m := Match{Field: f.GetName()}
		switch x := fm.GetFieldMatchType().(type) {
		case *p4v1.FieldMatch_Exact_:
			m.Kind, m.Value = MatchExact, Value(x.Exact.GetValue())
		case *p4v1.FieldMatch_Optional_:
			m.Kind, m.Value = MatchOptional, Value(x.Optional.GetValue())
		case *p4v1.FieldMatch_Lpm:
			m.Kind, m.Value, m.PrefixLen = MatchLPM, Value(x.Lpm.GetValue()), x.Lpm.GetPrefixLen()
		case *p4v1.FieldMatch_Ternary_:
			m.Kind, m.Value, m.Mask = MatchTernary, Value(x.Ternary.GetValue()), Value(x.Ternary.GetMask())
		case *p4v1.FieldMatch_Range_:
			m.Kind, m.Value, m.High = MatchRange, Value(x.Range.GetLow()), Value(x.Range.GetHigh())
		default:
			return Entry{}, fmt.Errorf("table %q: field %q: unsupported match %T", e.Table, m.Field, x)
		}
		e.Match = append(e.Match, m)
	}
	e.Member, e.Group = te.GetAction().GetActionProfileMemberId(), te.GetAction().GetActionProfileGroupId()
	if act := te.GetAction().GetAction(); act != nil {
		a := s.actionIDs[act.GetActionId()]
		if a == nil {
			return Entry{}, fmt.Errorf("table %q: action id %#x is not in the P4Info", e.Table, act.GetActionId())
		}
		e.Action = a.a.GetPreamble().GetName()
		e.Params = map[string]Value{}
		for _, p := range act.GetParams() {
			pi := a.paramIDs[p.GetParamId()]
			if pi == nil {
				return Entry{}, fmt.Errorf("table %q: action %q: param id %d is not in the P4Info", e.Table, e.Action, p.GetParamId())
			}
			e.Params[pi.GetName()] = Value(p.GetValue())
		}
	}
	return e, nil
}
