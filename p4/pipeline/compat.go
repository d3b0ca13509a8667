package pipeline

import (
	"errors"
	"fmt"
	"slices"

	"github.com/homatb/homatb/p4"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

// CheckP4Info reports whether this target can run a pipeline with info: its
// tables, actions, action profiles, counters, meters and registers must be exactly those of tor.p4
// (names, ids, match fields, parameters, widths, sizes). Names of aliases,
// annotations and documentation may differ. The error lists every
// difference, one per line.
func CheckP4Info(info *p4configv1.P4Info) error {
	if info == nil {
		return errors.New("no P4Info")
	}
	want, err := p4.P4Info()
	if err != nil {
		return err
	}
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }

	compareObjects(add, "table", want.GetTables(), info.GetTables(), (*p4configv1.Table).GetPreamble,
		func(where string, w, g *p4configv1.Table) {
			if w.GetSize() != g.GetSize() {
				add("%s: size %d, this target runs %d", where, g.GetSize(), w.GetSize())
			}
			compareObjects(add, where+" match field", w.GetMatchFields(), g.GetMatchFields(), matchFieldPreamble,
				func(where string, wf, gf *p4configv1.MatchField) {
					if wf.GetBitwidth() != gf.GetBitwidth() {
						add("%s: bitwidth %d, this target runs %d", where, gf.GetBitwidth(), wf.GetBitwidth())
					}
					if wf.GetMatchType() != gf.GetMatchType() {
						add("%s: match type %v, this target runs %v", where, gf.GetMatchType(), wf.GetMatchType())
					}
				})
			wa, ga := actionRefIDs(w), actionRefIDs(g)
			if !slices.Equal(wa, ga) {
				add("%s: actions %#08x, this target runs %#08x", where, ga, wa)
			}
			if wd, gd := w.GetInitialDefaultAction(), g.GetInitialDefaultAction(); gd != nil && !proto.Equal(wd, gd) {
				add("%s: initial default action %v, this target runs %v", where, gd, wd)
			}
			if w.GetConstDefaultActionId() != g.GetConstDefaultActionId() {
				add("%s: const default action %#08x, this target has %#08x", where, g.GetConstDefaultActionId(), w.GetConstDefaultActionId())
			}
			if w.GetImplementationId() != g.GetImplementationId() {
				add("%s: implementation %#08x, this target runs %#08x", where, g.GetImplementationId(), w.GetImplementationId())
			}
			if len(g.GetDirectResourceIds()) != 0 {
				add("%s: direct resources %#08x, this target has none", where, g.GetDirectResourceIds())
			}
		})
	compareObjects(add, "action", want.GetActions(), info.GetActions(), (*p4configv1.Action).GetPreamble,
		func(where string, w, g *p4configv1.Action) {
			compareObjects(add, where+" param", w.GetParams(), g.GetParams(), paramPreamble,
				func(where string, wp, gp *p4configv1.Action_Param) {
					if wp.GetBitwidth() != gp.GetBitwidth() {
						add("%s: bitwidth %d, this target runs %d", where, gp.GetBitwidth(), wp.GetBitwidth())
					}
				})
		})
	compareObjects(add, "counter", want.GetCounters(), info.GetCounters(), (*p4configv1.Counter).GetPreamble,
		func(where string, w, g *p4configv1.Counter) {
			if w.GetSize() != g.GetSize() {
				add("%s: size %d, this target runs %d", where, g.GetSize(), w.GetSize())
			}
			if w.GetSpec().GetUnit() != g.GetSpec().GetUnit() {
				add("%s: unit %v, this target runs %v", where, g.GetSpec().GetUnit(), w.GetSpec().GetUnit())
			}
		})
	compareObjects(add, "register", want.GetRegisters(), info.GetRegisters(), (*p4configv1.Register).GetPreamble,
		func(where string, w, g *p4configv1.Register) {
			if w.GetSize() != g.GetSize() {
				add("%s: size %d, this target runs %d", where, g.GetSize(), w.GetSize())
			}
			ww := w.GetTypeSpec().GetBitstring().GetBit().GetBitwidth()
			gw := g.GetTypeSpec().GetBitstring().GetBit().GetBitwidth()
			if ww != gw {
				add("%s: bit<%d>, this target runs bit<%d>", where, gw, ww)
			}
		})
	compareObjects(add, "action profile", want.GetActionProfiles(), info.GetActionProfiles(), (*p4configv1.ActionProfile).GetPreamble,
		func(where string, w, g *p4configv1.ActionProfile) {
			if w.GetSize() != g.GetSize() || w.GetWithSelector() != g.GetWithSelector() || !slices.Equal(w.GetTableIds(), g.GetTableIds()) {
				add("%s: size %d, selector %v, tables %#08x; this target runs size %d, selector %v, tables %#08x", where,
					g.GetSize(), g.GetWithSelector(), g.GetTableIds(), w.GetSize(), w.GetWithSelector(), w.GetTableIds())
			}
		})
	compareObjects(add, "meter", want.GetMeters(), info.GetMeters(), (*p4configv1.Meter).GetPreamble,
		func(where string, w, g *p4configv1.Meter) {
			if w.GetSize() != g.GetSize() || w.GetSpec().GetUnit() != g.GetSpec().GetUnit() {
				add("%s: size %d unit %v, this target runs size %d unit %v", where, g.GetSize(), g.GetSpec().GetUnit(), w.GetSize(), w.GetSpec().GetUnit())
			}
		})
	for kind, n := range map[string]int{
		"direct counter":             len(info.GetDirectCounters()),
		"direct meter":               len(info.GetDirectMeters()),
		"controller packet metadata": len(info.GetControllerPacketMetadata()), "value set": len(info.GetValueSets()),
		"digest": len(info.GetDigests()), "extern": len(info.GetExterns()),
	} {
		if n > 0 {
			add("%d %s object(s), tor.p4 has none", n, kind)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	slices.Sort(diffs)
	msg := "P4Info does not match tor.p4:"
	for _, d := range diffs {
		msg += "\n  " + d
	}
	return errors.New(msg)
}

// namedID is what objects are matched by: ids first, names checked after.
type namedID interface {
	GetId() uint32
	GetName() string
}

// compareObjects pairs objects of one kind by id, reports missing, extra and
// renamed ones, and calls same for each pair.
func compareObjects[T any, P namedID](add func(string, ...any), kind string, want, got []T, pre func(T) P, same func(where string, w, g T)) {
	byID := map[uint32]T{}
	for _, g := range got {
		id := pre(g).GetId()
		if _, dup := byID[id]; dup {
			add("%s id %s appears twice", kind, fmtID(id))
		}
		byID[id] = g
	}
	for _, w := range want {
		wp := pre(w)
		g, ok := byID[wp.GetId()]
		if !ok {
			add("%s %s (id %s) missing", kind, wp.GetName(), fmtID(wp.GetId()))
			continue
		}
		delete(byID, wp.GetId())
		where := fmt.Sprintf("%s %s (id %s)", kind, wp.GetName(), fmtID(wp.GetId()))
		if gn := pre(g).GetName(); gn != wp.GetName() {
			add("%s: named %q", where, gn)
		}
		same(where, w, g)
	}
	for id, g := range byID {
		add("%s %s (id %s) unknown to this target", kind, pre(g).GetName(), fmtID(id))
	}
}

// fmtID prints object ids (which carry an 8-bit prefix) in hex and match
// field and parameter ids (small numbers) in decimal.
func fmtID(id uint32) string {
	if id>>24 == 0 {
		return fmt.Sprint(id)
	}
	return fmt.Sprintf("%#08x", id)
}

// idName adapts match fields and params, whose ids and names sit on the
// object itself rather than in a preamble.
type idName struct {
	id   uint32
	name string
}

func (n idName) GetId() uint32   { return n.id }
func (n idName) GetName() string { return n.name }

func matchFieldPreamble(f *p4configv1.MatchField) idName { return idName{f.GetId(), f.GetName()} }
func paramPreamble(p *p4configv1.Action_Param) idName    { return idName{p.GetId(), p.GetName()} }

func actionRefIDs(t *p4configv1.Table) []uint32 {
	ids := make([]uint32, 0, len(t.GetActionRefs()))
	for _, r := range t.GetActionRefs() {
		ids = append(ids, r.GetId())
	}
	slices.Sort(ids)
	return ids
}
