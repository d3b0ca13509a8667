package p4rt

import (
	"bytes"
	"testing"

	"github.com/homatb/homatb/p4"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in    []byte
		width int
		want  []byte
		code  codes.Code
	}{
		{[]byte{0}, 8, []byte{0}, codes.OK},
		{[]byte{0, 0, 0}, 9, []byte{0}, codes.OK},
		{[]byte{0, 0x01, 0xff}, 9, []byte{0x01, 0xff}, codes.OK},
		{[]byte{0x0a, 0, 0, 1}, 32, []byte{0x0a, 0, 0, 1}, codes.OK},
		{[]byte{0, 0, 0, 0, 0x0a, 0, 0, 1}, 32, []byte{0x0a, 0, 0, 1}, codes.OK},
		{[]byte{}, 8, nil, codes.OutOfRange}, // spec 1.4.1, 8.3
		{[]byte{0x02, 0x00}, 9, nil, codes.OutOfRange},
		{[]byte{0x10, 0x63}, 12, nil, codes.OutOfRange}, // the spec's example
		{[]byte{0x01, 0x63}, 8, nil, codes.OutOfRange},  // the spec's example
		{[]byte{0x08}, 3, nil, codes.OutOfRange},
		{[]byte{0x07}, 3, []byte{0x07}, codes.OK},
	}
	for _, tc := range tests {
		got, err := canonical(tc.in, tc.width, "f")
		if codeOf(err) != tc.code || !bytes.Equal(got, tc.want) {
			t.Errorf("canonical(%x, %d) = %x, %v; want %x, %v", tc.in, tc.width, got, err, tc.want, tc.code)
		}
	}
}

// ternarySchema is tor's schema plus a made-up ternary table, to cover the
// ternary rules tor.p4 itself does not use.
func ternarySchema(t *testing.T) *schema {
	t.Helper()
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	info.Tables = append(info.Tables, &p4configv1.Table{
		Preamble: &p4configv1.Preamble{Id: 0x02000099, Name: "T.acl"},
		MatchFields: []*p4configv1.MatchField{
			{Id: 1, Name: "proto", Bitwidth: 8, Match: &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_TERNARY}},
			{Id: 2, Name: "port", Bitwidth: 9, Match: &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_EXACT}},
		},
		ActionRefs: []*p4configv1.ActionRef{{Id: p4.ActionDrop}, {Id: p4.ActionNoAction, Scope: p4configv1.ActionRef_DEFAULT_ONLY}},
		Size:       16,
	})
	s, err := newSchema(info)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTernaryValidation(t *testing.T) {
	s := ternarySchema(t)
	tern := func(v, m []byte) *p4v1.FieldMatch {
		return &p4v1.FieldMatch{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: v, Mask: m}}}
	}
	entry := func(prio int32, a uint32, m ...*p4v1.FieldMatch) *p4v1.TableEntry {
		return &p4v1.TableEntry{TableId: 0x02000099, Priority: prio, Match: m, Action: action(a)}
	}
	port := exact(2, []byte{1})
	tests := []struct {
		name string
		te   *p4v1.TableEntry
		code codes.Code
	}{
		{"valid", entry(10, p4.ActionDrop, tern([]byte{0x06}, []byte{0xff}), port), codes.OK},
		{"ternary omitted is don't care", entry(10, p4.ActionDrop, port), codes.OK},
		{"zero priority", entry(0, p4.ActionDrop, tern([]byte{0x06}, []byte{0xff}), port), codes.InvalidArgument},
		{"zero mask", entry(1, p4.ActionDrop, tern([]byte{0}, []byte{0}), port), codes.InvalidArgument},
		{"value outside mask", entry(1, p4.ActionDrop, tern([]byte{0x16}, []byte{0x0f}), port), codes.InvalidArgument},
		{"oversized mask", entry(1, p4.ActionDrop, tern([]byte{0x06}, []byte{0x01, 0xff}), port), codes.OutOfRange},
		{"exact given as ternary", entry(1, p4.ActionDrop, &p4v1.FieldMatch{FieldId: 2, FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: []byte{1}, Mask: []byte{1}}}}), codes.InvalidArgument},
		{"field twice", entry(1, p4.ActionDrop, port, port), codes.InvalidArgument},
		{"unknown field", entry(1, p4.ActionDrop, port, exact(9, []byte{1})), codes.InvalidArgument},
		{"default-only action in an entry", entry(1, p4.ActionNoAction, port), codes.PermissionDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ce, err := checkTableEntry(s, tc.te, p4v1.Update_INSERT)
			if codeOf(err) != tc.code {
				t.Fatalf("%v, want %v", err, tc.code)
			}
			if err == nil && ce.pe.Priority != tc.te.GetPriority() {
				t.Errorf("pipeline priority %d, want %d", ce.pe.Priority, tc.te.GetPriority())
			}
		})
	}
	// The same match in another field order is the same entry.
	a, _ := checkTableEntry(s, entry(3, p4.ActionDrop, tern([]byte{6}, []byte{0xff}), port), p4v1.Update_INSERT)
	b, _ := checkTableEntry(s, entry(3, p4.ActionDrop, port, tern([]byte{0, 6}, []byte{0, 0xff})), p4v1.Update_INSERT)
	if a == nil || b == nil || a.key != b.key {
		t.Error("field order or padding changed the entry identity")
	}
}

// fuzzServer is a server with tor.p4 committed, driven without gRPC.
func fuzzServer(f *testing.F) *Server {
	s := NewServer(Config{DeviceID: 1})
	info, err := p4.P4Info()
	if err != nil {
		f.Fatal(err)
	}
	fc, err := verifyConfig(&p4v1.ForwardingPipelineConfig{P4Info: info})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.commit(fc, newTableState()); err != nil {
		f.Fatal(err)
	}
	return s
}

func seedBytes(f *testing.F, msgs ...proto.Message) {
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzWriteValidation feeds arbitrary Update messages through validation
// and application; none may panic, and the pipeline must accept whatever
// the server stored.
func FuzzWriteValidation(f *testing.F) {
	seedBytes(f,
		update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{2})),
		update(p4v1.Update_MODIFY, &p4v1.TableEntry{TableId: p4.TableDSCPToQueue, IsDefaultAction: true, Action: action(p4.ActionSetQueue, []byte{7})}),
		update(p4v1.Update_DELETE, route([]byte{10, 0, 0, 0}, 24, nil)),
		update(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: p4.TableECNConfig, Match: []*p4v1.FieldMatch{exact(1, []byte{1, 0xff})}, Action: action(p4.ActionSetECNThreshold, []byte{7, 0xff, 0xff})}),
		&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: p4.CounterIngressQueue, Data: &p4v1.CounterData{PacketCount: 1}}}}},
		&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: p4.RegisterQueuePeak, Index: &p4v1.Index{Index: 3}, Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{1}}}}}}},
	)
	f.Add([]byte{})
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		u := &p4v1.Update{}
		if proto.Unmarshal(b, u) != nil {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, err := s.applyUpdate(s.committed.schema, s.live, u); err == nil {
			if err := s.pl.Install(s.live.contents()); err != nil {
				t.Fatalf("server accepted %v but the pipeline rejects it: %v", u, err)
			}
		}
	})
}

// FuzzReadValidation feeds arbitrary read entities; none may panic.
func FuzzReadValidation(f *testing.F) {
	seedBytes(f,
		&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}},
		&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: route([]byte{10, 0, 0, 2}, 32, nil)}},
		&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: p4.CounterEgressQueue, Index: &p4v1.Index{Index: 9}}}},
		&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{Index: &p4v1.Index{Index: 511}}}},
	)
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		e := &p4v1.Entity{}
		if proto.Unmarshal(b, e) != nil {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		_, _ = s.readEntity(s.committed.schema, s.live, e)
	})
}

// FuzzDeviceConfig: any bytes are accepted or rejected, never a panic.
func FuzzDeviceConfig(f *testing.F) {
	f.Add([]byte(`{"a":1}`))
	f.Add([]byte{0x08, 0x01, 0x1a, 0x02, '{', '}'})
	f.Add([]byte{0x1a, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) { _ = checkDeviceConfig(b) })
}
