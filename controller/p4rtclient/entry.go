package p4rtclient

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MatchKind is how a match field compares, as declared in the P4Info.
type MatchKind int

// The P4Runtime match kinds.
const (
	MatchExact MatchKind = iota + 1
	MatchLPM
	MatchTernary
	MatchRange
	MatchOptional
)

func (k MatchKind) String() string {
	switch k {
	case MatchExact:
		return "exact"
	case MatchLPM:
		return "lpm"
	case MatchTernary:
		return "ternary"
	case MatchRange:
		return "range"
	case MatchOptional:
		return "optional"
	}
	return fmt.Sprintf("MatchKind(%d)", int(k))
}

// Match is one field of a table entry's key, addressed by its P4Info name.
type Match struct {
	Field string
	Kind  MatchKind
	// Value is the exact, LPM, ternary or optional value, or the low end of a
	// range.
	Value Value
	// Mask is the ternary mask.
	Mask Value
	// PrefixLen is the LPM prefix length.
	PrefixLen int32
	// High is the high end of a range.
	High Value
}

// Exact matches field == v.
func Exact(field string, v Value) Match {
	return Match{Field: field, Kind: MatchExact, Value: v}
}

// LPM matches the first prefixLen bits of field against v.
func LPM(field string, v Value, prefixLen int) Match {
	return Match{Field: field, Kind: MatchLPM, Value: v, PrefixLen: int32(prefixLen)}
}

// Ternary matches field & mask == v.
func Ternary(field string, v, mask Value) Match {
	return Match{Field: field, Kind: MatchTernary, Value: v, Mask: mask}
}

// Range matches low <= field <= high.
func Range(field string, low, high Value) Match {
	return Match{Field: field, Kind: MatchRange, Value: low, High: high}
}

// Optional matches field == v (an omitted optional field matches anything).
func Optional(field string, v Value) Match {
	return Match{Field: field, Kind: MatchOptional, Value: v}
}

func (m Match) String() string {
	switch m.Kind {
	case MatchLPM:
		return fmt.Sprintf("%s=%s/%d", m.Field, m.Value, m.PrefixLen)
	case MatchTernary:
		return fmt.Sprintf("%s=%s&&&%s", m.Field, m.Value, m.Mask)
	case MatchRange:
		return fmt.Sprintf("%s=%s..%s", m.Field, m.Value, m.High)
	}
	return fmt.Sprintf("%s=%s", m.Field, m.Value)
}

// Entry is a table entry addressed by names: the table, its key fields, the
// action and the action's parameters. Default marks the table's default
// entry, which has no key and can only be modified.
type Entry struct {
	Table    string
	Match    []Match
	Action   string
	Params   map[string]Value
	Priority int32
	Default  bool
	// Member or Group, in an entry of a table with an action profile (an
	// indirect table), names the profile's member or group that runs
	// instead of Action, which is then empty.
	Member, Group uint32
}

// String prints the entry as table{key} -> action(params), with parameters
// in name order so equal entries print alike.
func (e Entry) String() string {
	var b strings.Builder
	b.WriteString(e.Table)
	if e.Default {
		b.WriteString("{default}")
	} else {
		b.WriteString(matchString(e.Match))
	}
	if e.Priority != 0 {
		fmt.Fprintf(&b, " prio %d", e.Priority)
	}
	switch {
	case e.Member != 0:
		fmt.Fprintf(&b, " -> member %d", e.Member)
	case e.Group != 0:
		fmt.Fprintf(&b, " -> group %d", e.Group)
	}
	if e.Action != "" {
		b.WriteString(" -> " + actionString(e.Action, e.Params))
	}
	return b.String()
}

// actionString prints action(params) with the parameters in name order.
func actionString(action string, params map[string]Value) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s(", action)
	for i, name := range slices.Sorted(maps.Keys(params)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s", name, params[name])
	}
	b.WriteString(")")
	return b.String()
}

func matchString(ms []Match) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// EntryError is an entry that cannot be encoded against the P4Info. It names
// the table and, when one is at fault, the field or parameter and its value.
type EntryError struct {
	Table string
	// Field is the match field at fault, if any.
	Field string
	// Param is the action parameter at fault, if any (with Action).
	Action, Param string
	// Value is the offending value, if any.
	Value Value
	Err   error
}

func (e *EntryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table %q", e.Table)
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	if e.Action != "" {
		fmt.Fprintf(&b, ": action %q", e.Action)
	}
	if e.Param != "" {
		fmt.Fprintf(&b, ": param %q", e.Param)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *EntryError) Unwrap() error { return e.Err }
