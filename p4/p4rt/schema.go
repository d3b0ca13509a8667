package p4rt

import (
	"fmt"

	"github.com/homatb/homatb/p4/pipeline"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// schema indexes a P4Info by id for request validation.
type schema struct {
	tables      map[uint32]*tableSchema
	actions     map[uint32]*actionSchema
	counters    map[uint32]*p4configv1.Counter
	registers   map[uint32]*p4configv1.Register
	meters      map[uint32]*p4configv1.Meter
	meterIDs    []uint32 // P4Info order
	tableIDs    []uint32 // P4Info order, for wildcard reads
	counterID   []uint32
	regIDs      []uint32
	profiles    map[uint32]*profileSchema
	profileList []uint32 // P4Info order
}

type tableSchema struct {
	info *p4configv1.Table
	// fields in P4Info order; position is the pipeline key index.
	fields     []*p4configv1.MatchField
	fieldIndex map[uint32]int
	actions    map[uint32]*p4configv1.ActionRef
	// needsPriority: the table has a ternary, range or optional field.
	needsPriority bool
	// lpmField is the index of the single LPM field, or -1.
	lpmField int
}

type actionSchema struct {
	info       *p4configv1.Action
	params     []*p4configv1.Action_Param
	paramIndex map[uint32]int
}

func newSchema(info *p4configv1.P4Info) (*schema, error) {
	s := &schema{
		tables:    map[uint32]*tableSchema{},
		actions:   map[uint32]*actionSchema{},
		counters:  map[uint32]*p4configv1.Counter{},
		registers: map[uint32]*p4configv1.Register{},
		meters:    map[uint32]*p4configv1.Meter{},
		profiles:  map[uint32]*profileSchema{},
	}
	for _, a := range info.GetActions() {
		as := &actionSchema{info: a, params: a.GetParams(), paramIndex: map[uint32]int{}}
		for i, p := range a.GetParams() {
			if p.GetBitwidth() < 1 || p.GetBitwidth() > 64 {
				return nil, fmt.Errorf("action %s param %s: %d bits, this target supports 1..64", a.GetPreamble().GetName(), p.GetName(), p.GetBitwidth())
			}
			as.paramIndex[p.GetId()] = i
		}
		s.actions[a.GetPreamble().GetId()] = as
	}
	for _, t := range info.GetTables() {
		ts := &tableSchema{info: t, fields: t.GetMatchFields(), fieldIndex: map[uint32]int{}, actions: map[uint32]*p4configv1.ActionRef{}, lpmField: -1}
		for i, f := range t.GetMatchFields() {
			if f.GetBitwidth() < 1 || f.GetBitwidth() > 64 {
				return nil, fmt.Errorf("table %s field %s: %d bits, this target supports 1..64", t.GetPreamble().GetName(), f.GetName(), f.GetBitwidth())
			}
			ts.fieldIndex[f.GetId()] = i
			switch f.GetMatchType() {
			case p4configv1.MatchField_TERNARY, p4configv1.MatchField_RANGE, p4configv1.MatchField_OPTIONAL:
				ts.needsPriority = true
			case p4configv1.MatchField_LPM:
				ts.lpmField = i
			}
		}
		if len(ts.fields) > pipeline.MaxKeyFields {
			return nil, fmt.Errorf("table %s: %d match fields, this target supports %d", t.GetPreamble().GetName(), len(ts.fields), pipeline.MaxKeyFields)
		}
		for _, r := range t.GetActionRefs() {
			ts.actions[r.GetId()] = r
		}
		s.tables[t.GetPreamble().GetId()] = ts
		s.tableIDs = append(s.tableIDs, t.GetPreamble().GetId())
	}
	for _, p := range info.GetActionProfiles() {
		name := p.GetPreamble().GetName()
		if len(p.GetTableIds()) == 0 || s.tables[p.GetTableIds()[0]] == nil {
			return nil, fmt.Errorf("action profile %s: no table of the P4Info uses it", name)
		}
		s.profiles[p.GetPreamble().GetId()] = &profileSchema{info: p, table: s.tables[p.GetTableIds()[0]]}
		s.profileList = append(s.profileList, p.GetPreamble().GetId())
	}
	for _, c := range info.GetCounters() {
		s.counters[c.GetPreamble().GetId()] = c
		s.counterID = append(s.counterID, c.GetPreamble().GetId())
	}
	for _, m := range info.GetMeters() {
		s.meters[m.GetPreamble().GetId()] = m
		s.meterIDs = append(s.meterIDs, m.GetPreamble().GetId())
	}
	for _, r := range info.GetRegisters() {
		s.registers[r.GetPreamble().GetId()] = r
		s.regIDs = append(s.regIDs, r.GetPreamble().GetId())
	}
	return s, nil
}
