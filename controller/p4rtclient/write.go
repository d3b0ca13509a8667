package p4rtclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

// Write sends updates in batches of the configured size, each batch one
// WriteRequest with CONTINUE_ON_ERROR (the one atomicity every server
// supports). Per-update failures of all batches are collected into one
// *WriteError; an error that rejects a whole request (PERMISSION_DENIED for
// a backup, FAILED_PRECONDITION before a pipeline) stops at once and keeps
// its gRPC status. Table entries that were applied are remembered for
// re-pushing after a switch restart.
func (c *Client) Write(ctx context.Context, updates ...*p4v1.Update) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	return c.writeLocked(ctx, updates)
}

func (c *Client) writeLocked(ctx context.Context, updates []*p4v1.Update) error {
	describe := func(e *p4v1.Entity) string {
		if s := c.Schema(); s != nil {
			return s.Describe(e)
		}
		return fmt.Sprintf("%T", e.GetEntity())
	}
	var all *WriteError
	for off := 0; off < len(updates); off += c.o.batchSize {
		batch := updates[off:min(off+c.o.batchSize, len(updates))]
		_, err := c.rpc.Write(ctx, &p4v1.WriteRequest{
			DeviceId:   c.device,
			ElectionId: c.ElectionID().proto(),
			Updates:    batch,
			Atomicity:  p4v1.WriteRequest_CONTINUE_ON_ERROR,
		})
		if err == nil {
			c.remember(batch, nil)
			continue
		}
		derr, ok := decodeWriteError(err, batch, off, describe)
		var we *WriteError
		if !errors.As(derr, &we) {
			return fmt.Errorf("%s: %w", c.addr, derr)
		}
		c.remember(batch, ok)
		if all == nil {
			all = &WriteError{}
		}
		all.Failed = append(all.Failed, we.Failed...)
	}
	if all != nil {
		all.Updates = len(updates)
		return fmt.Errorf("%s: %w", c.addr, all)
	}
	return nil
}

// remember records applied table-entry updates (ok nil: all applied).
func (c *Client) remember(batch []*p4v1.Update, ok []bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pipeline == nil || !c.o.repush {
		return // nothing to re-push onto, or no re-pushing
	}
	for i, u := range batch {
		k, keep := writtenKey(u.GetEntity())
		if !keep || (ok != nil && !ok[i]) {
			continue
		}
		switch u.GetType() {
		case p4v1.Update_INSERT, p4v1.Update_MODIFY:
			c.written[k] = u.GetEntity()
		case p4v1.Update_DELETE:
			if u.GetEntity().GetTableEntry().GetIsDefaultAction() {
				continue
			}
			delete(c.written, k)
		}
	}
}

// writtenKey identifies an entity the client re-pushes after a switch
// restart: action profile members ("0"), then groups ("1"), then table
// entries ("2"), so that sorting the keys orders the pushes as references
// require, and meter configs ("3"). keep is false for other entities.
func writtenKey(e *p4v1.Entity) (k string, keep bool) {
	switch x := e.GetEntity().(type) {
	case *p4v1.Entity_ActionProfileMember:
		return fmt.Sprintf("0 %08x %010d", x.ActionProfileMember.GetActionProfileId(), x.ActionProfileMember.GetMemberId()), true
	case *p4v1.Entity_ActionProfileGroup:
		return fmt.Sprintf("1 %08x %010d", x.ActionProfileGroup.GetActionProfileId(), x.ActionProfileGroup.GetGroupId()), true
	case *p4v1.Entity_TableEntry:
		return "2 " + EntryKey(x.TableEntry), true
	case *p4v1.Entity_MeterEntry:
		if x.MeterEntry.GetIndex() == nil {
			return "", false // a reset of every cell: nothing to re-push
		}
		return fmt.Sprintf("3 %08x %010d", x.MeterEntry.GetMeterId(), x.MeterEntry.GetIndex().GetIndex()), true
	}
	return "", false
}

// EntryKey identifies a table entry by what the spec makes its key: the
// table, the match fields (in field-id order) and the priority. Two entries
// with the same key are the same entry to the switch.
func EntryKey(te *p4v1.TableEntry) string {
	key := &p4v1.TableEntry{TableId: te.GetTableId(), Priority: te.GetPriority(), IsDefaultAction: te.GetIsDefaultAction()}
	key.Match = slices.Clone(te.GetMatch())
	slices.SortFunc(key.Match, func(a, b *p4v1.FieldMatch) int { return int(a.GetFieldId()) - int(b.GetFieldId()) })
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(key)
	if err != nil {
		// Marshalling a well-formed in-memory message cannot fail.
		panic(fmt.Sprintf("marshal table entry key: %v", err))
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// Insert adds table entries.
func (c *Client) Insert(ctx context.Context, entries ...Entry) error {
	return c.writeEntries(ctx, p4v1.Update_INSERT, entries)
}

// Modify replaces the actions of existing entries (or sets default entries).
func (c *Client) Modify(ctx context.Context, entries ...Entry) error {
	return c.writeEntries(ctx, p4v1.Update_MODIFY, entries)
}

// Delete removes entries; only their keys matter.
func (c *Client) Delete(ctx context.Context, entries ...Entry) error {
	return c.writeEntries(ctx, p4v1.Update_DELETE, entries)
}

// SetDefault sets a table's default action (an entry with no key).
func (c *Client) SetDefault(ctx context.Context, e Entry) error {
	e.Default, e.Match = true, nil
	return c.writeEntries(ctx, p4v1.Update_MODIFY, []Entry{e})
}

func (c *Client) writeEntries(ctx context.Context, typ p4v1.Update_Type, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	updates, err := c.Updates(typ, entries...)
	if err != nil {
		return err
	}
	return c.Write(ctx, updates...)
}

// Updates encodes named entries as updates of one type, for callers that
// mix types in one Write. An encoding error names the entry's index, table,
// field or parameter, and value.
func (c *Client) Updates(typ p4v1.Update_Type, entries ...Entry) ([]*p4v1.Update, error) {
	s, err := c.NeedSchema()
	if err != nil {
		return nil, err
	}
	return s.Updates(typ, entries...)
}

// Updates encodes named entries as updates of one type.
func (s *Schema) Updates(typ p4v1.Update_Type, entries ...Entry) ([]*p4v1.Update, error) {
	out := make([]*p4v1.Update, len(entries))
	for i, e := range entries {
		te, err := s.TableEntry(e)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		out[i] = &p4v1.Update{Type: typ, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}
	}
	return out, nil
}

// ResetRegister sets every entry of the named register to zero with one
// wildcard MODIFY: the queue peaks at the start of an experiment, so they
// cover that experiment only.
func (c *Client) ResetRegister(ctx context.Context, name string) error {
	s, err := c.NeedSchema()
	if err != nil {
		return err
	}
	reg, err := s.Register(name)
	if err != nil {
		return err
	}
	zero := &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{0}}}
	return c.Write(ctx, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{
		RegisterEntry: &p4v1.RegisterEntry{RegisterId: reg.GetPreamble().GetId(), Data: zero}}}})
}
