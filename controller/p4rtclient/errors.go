package p4rtclient

import (
	"fmt"
	"strings"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// UpdateError is one failed update of a Write.
type UpdateError struct {
	// Index is the update's position in the caller's list.
	Index int
	Type  p4v1.Update_Type
	// Entity describes what the update addressed, with names from the P4Info
	// (table and match for table entries).
	Entity  string
	Code    codes.Code
	Message string
}

func (u UpdateError) String() string {
	return fmt.Sprintf("update %d %s %s: %s: %s", u.Index, u.Type, u.Entity, u.Code, u.Message)
}

// WriteError is a Write in which some updates failed. Failed lists each one;
// the others were applied (writes use CONTINUE_ON_ERROR).
type WriteError struct {
	Updates int
	Failed  []UpdateError
}

func (e *WriteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "write: %d of %d updates failed", len(e.Failed), e.Updates)
	const show = 10
	for i, u := range e.Failed {
		if i == show {
			fmt.Fprintf(&b, "; and %d more", len(e.Failed)-show)
			break
		}
		b.WriteString("; ")
		b.WriteString(u.String())
	}
	return b.String()
}

// Codes returns the distinct codes of the failed updates.
func (e *WriteError) Codes() []codes.Code {
	seen := map[codes.Code]bool{}
	var out []codes.Code
	for _, u := range e.Failed {
		if !seen[u.Code] {
			seen[u.Code] = true
			out = append(out, u.Code)
		}
	}
	return out
}

// decodeWriteError turns a Write's gRPC error into a *WriteError when the
// server reported per-update results (code UNKNOWN with one p4.v1.Error per
// update in the details), and otherwise returns the status error wrapped, so
// status.Code still sees PERMISSION_DENIED and the like. offset is the index
// of updates[0] in the caller's list. ok lists the updates that succeeded.
func decodeWriteError(err error, updates []*p4v1.Update, offset int, describe func(*p4v1.Entity) string) (werr error, ok []bool) {
	st, isStatus := status.FromError(err)
	if !isStatus || st.Code() != codes.Unknown || len(st.Details()) == 0 {
		return fmt.Errorf("write of %d updates: %w", len(updates), err), nil
	}
	var perUpdate []*p4v1.Error
	for _, d := range st.Details() {
		if pe, isP4 := d.(*p4v1.Error); isP4 {
			perUpdate = append(perUpdate, pe)
		}
	}
	if len(perUpdate) != len(updates) {
		return fmt.Errorf("write of %d updates: server sent %d per-update errors: %w", len(updates), len(perUpdate), err), nil
	}
	we := &WriteError{Updates: len(updates)}
	ok = make([]bool, len(updates))
	for i, pe := range perUpdate {
		c := codes.Code(pe.GetCanonicalCode())
		if c == codes.OK {
			ok[i] = true
			continue
		}
		we.Failed = append(we.Failed, UpdateError{
			Index:   offset + i,
			Type:    updates[i].GetType(),
			Entity:  describe(updates[i].GetEntity()),
			Code:    c,
			Message: pe.GetMessage(),
		})
	}
	return we, ok
}

// Describe names an entity for messages: a table entry as its table and
// match, counters and registers as name[index].
func (s *Schema) Describe(ent *p4v1.Entity) string {
	switch x := ent.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		e, err := s.Entry(x.TableEntry)
		if err != nil {
			return fmt.Sprintf("table entry (%v)", err)
		}
		if e.Default {
			return e.Table + "{default}"
		}
		return e.Table + matchString(e.Match)
	case *p4v1.Entity_CounterEntry:
		name := fmt.Sprintf("counter %#x", x.CounterEntry.GetCounterId())
		if c := s.counterID[x.CounterEntry.GetCounterId()]; c != nil {
			name = c.GetPreamble().GetName()
		}
		return indexed(name, x.CounterEntry.GetIndex())
	case *p4v1.Entity_RegisterEntry:
		name := fmt.Sprintf("register %#x", x.RegisterEntry.GetRegisterId())
		if r := s.regIDs[x.RegisterEntry.GetRegisterId()]; r != nil {
			name = r.GetPreamble().GetName()
		}
		return indexed(name, x.RegisterEntry.GetIndex())
	case *p4v1.Entity_MeterEntry:
		name := fmt.Sprintf("meter %#x", x.MeterEntry.GetMeterId())
		if m := s.meterIDs[x.MeterEntry.GetMeterId()]; m != nil {
			name = m.GetPreamble().GetName()
		}
		return indexed(name, x.MeterEntry.GetIndex())
	}
	return fmt.Sprintf("%T", ent.GetEntity())
}

func indexed(name string, idx *p4v1.Index) string {
	if idx == nil {
		return name + "[*]"
	}
	return fmt.Sprintf("%s[%d]", name, idx.GetIndex())
}
