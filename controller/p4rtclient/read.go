package p4rtclient

import (
	"context"
	"errors"
	"fmt"
	"io"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Read sends one ReadRequest and gathers every streamed response. Wildcards
// follow the spec: table_id 0 reads all tables, an unset match all entries,
// counter_id 0 all counters, an unset index all indices. When some entities
// fail, a server that follows the spec streams the others first: they are
// returned with the error, whose status details say which entity failed.
func (c *Client) Read(ctx context.Context, entities ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	stream, err := c.rpc.Read(ctx, &p4v1.ReadRequest{DeviceId: c.device, Entities: entities})
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", c.addr, err)
	}
	var out []*p4v1.Entity
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("%s: read: %w", c.addr, err)
		}
		out = append(out, resp.GetEntities()...)
	}
}

// ReadEntries reads the entries of a table ("" for every table), decoded
// into names. Default entries are not included (see ReadDefault).
func (c *Client) ReadEntries(ctx context.Context, table string) ([]Entry, error) {
	s, err := c.NeedSchema()
	if err != nil {
		return nil, err
	}
	var id uint32
	if table != "" {
		if id, err = s.TableID(table); err != nil {
			return nil, err
		}
	}
	ents, err := c.Read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id}}})
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(ents))
	for _, ent := range ents {
		te := ent.GetTableEntry()
		if te == nil || te.GetIsDefaultAction() {
			continue
		}
		e, err := s.Entry(te)
		if err != nil {
			return nil, fmt.Errorf("%s: decode entry read back: %w", c.addr, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// ReadDefault reads a table's default entry.
func (c *Client) ReadDefault(ctx context.Context, table string) (Entry, error) {
	s, err := c.NeedSchema()
	if err != nil {
		return Entry{}, err
	}
	id, err := s.TableID(table)
	if err != nil {
		return Entry{}, err
	}
	ents, err := c.Read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id, IsDefaultAction: true}}})
	if err != nil {
		return Entry{}, err
	}
	for _, ent := range ents {
		if te := ent.GetTableEntry(); te != nil && te.GetIsDefaultAction() {
			return s.Entry(te)
		}
	}
	return Entry{}, fmt.Errorf("%s: table %q: no default entry returned", c.addr, table)
}

// CounterValue is one cell of an indirect counter.
type CounterValue struct {
	Index   int64
	Packets int64
	Bytes   int64
}

// ReadCounter reads every index of an indirect counter.
func (c *Client) ReadCounter(ctx context.Context, name string) ([]CounterValue, error) {
	ents, err := c.readIndexed(ctx, name, func(s *Schema) (*p4v1.Entity, error) {
		ctr, err := s.Counter(name)
		return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: ctr.GetPreamble().GetId()}}}, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]CounterValue, 0, len(ents))
	for _, ent := range ents {
		if ce := ent.GetCounterEntry(); ce != nil {
			out = append(out, CounterValue{Index: ce.GetIndex().GetIndex(), Packets: ce.GetData().GetPacketCount(), Bytes: ce.GetData().GetByteCount()})
		}
	}
	return out, nil
}

// RegisterValue is one cell of a bit<W> register.
type RegisterValue struct {
	Index int64
	Value uint64
}

// ReadRegister reads every index of a register of unsigned cells. BMv2
// answers UNIMPLEMENTED; the error keeps that code.
func (c *Client) ReadRegister(ctx context.Context, name string) ([]RegisterValue, error) {
	ents, err := c.readIndexed(ctx, name, func(s *Schema) (*p4v1.Entity, error) {
		reg, err := s.Register(name)
		return &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: reg.GetPreamble().GetId()}}}, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]RegisterValue, 0, len(ents))
	for _, ent := range ents {
		re := ent.GetRegisterEntry()
		if re == nil {
			continue
		}
		v, err := Value(re.GetData().GetBitstring()).Uint64()
		if err != nil {
			return nil, fmt.Errorf("register %q[%d]: %w", name, re.GetIndex().GetIndex(), err)
		}
		out = append(out, RegisterValue{Index: re.GetIndex().GetIndex(), Value: v})
	}
	return out, nil
}

// readIndexed resolves a wildcard read of every index of one named object.
func (c *Client) readIndexed(ctx context.Context, name string, wildcard func(*Schema) (*p4v1.Entity, error)) ([]*p4v1.Entity, error) {
	s, err := c.NeedSchema()
	if err != nil {
		return nil, err
	}
	ent, err := wildcard(s)
	if err != nil {
		return nil, err
	}
	ents, err := c.Read(ctx, ent)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ents, nil
}
