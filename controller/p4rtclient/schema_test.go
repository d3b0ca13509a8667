package p4rtclient

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/homatb/homatb/p4"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

func torSchema(t testing.TB) *Schema {
	t.Helper()
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSchema(info)
	if err != nil {
		t.Fatalf("NewSchema(tor.p4info): %v", err)
	}
	return s
}

func TestSchemaResolvesTorNames(t *testing.T) {
	s := torSchema(t)
	tests := []struct {
		name string
		want uint32
	}{
		{"TorIngress.ipv4_lpm", p4.TableIPv4LPM},
		{"ipv4_lpm", p4.TableIPv4LPM}, // alias
		{"TorIngress.dscp_to_queue", p4.TableDSCPToQueue},
		{"TorIngress.arp_proxy", p4.TableARPProxy},
		{"TorEgress.ecn_config", p4.TableECNConfig},
	}
	for _, tt := range tests {
		got, err := s.TableID(tt.name)
		if err != nil || got != tt.want {
			t.Errorf("TableID(%q) = %#x, %v; want %#x", tt.name, got, err, tt.want)
		}
	}
	for name, want := range map[string]uint32{
		"TorIngress.ingress_queue_counter": p4.CounterIngressQueue,
		"TorEgress.egress_queue_counter":   p4.CounterEgressQueue,
	} {
		c, err := s.Counter(name)
		if err != nil || c.GetPreamble().GetId() != want {
			t.Errorf("Counter(%q) = %v, %v; want id %#x", name, c.GetPreamble(), err, want)
		}
	}
	r, err := s.Register("TorEgress.queue_peak")
	if err != nil || r.GetPreamble().GetId() != p4.RegisterQueuePeak {
		t.Errorf("Register(queue_peak) = %v, %v", r.GetPreamble(), err)
	}
}

func TestTableEntryEncoding(t *testing.T) {
	s := torSchema(t)
	ip := IPv4(netip.MustParseAddr("10.0.0.2"))
	tests := []struct {
		name  string
		entry Entry
		want  *p4v1.TableEntry
	}{
		{
			name: "lpm forward",
			entry: Entry{Table: "TorIngress.ipv4_lpm", Match: []Match{LPM("hdr.ipv4.dstAddr", ip, 32)},
				Action: "TorIngress.ipv4_forward", Params: map[string]Value{"port": Uint(3), "dst_mac": Value{0, 0, 0, 0, 0, 0x0b}}},
			want: &p4v1.TableEntry{
				TableId: p4.TableIPv4LPM,
				Match: []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Lpm{
					Lpm: &p4v1.FieldMatch_LPM{Value: []byte{10, 0, 0, 2}, PrefixLen: 32}}}},
				Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
					ActionId: p4.ActionIPv4Forward,
					Params:   []*p4v1.Action_Param{{ParamId: 1, Value: []byte{3}}, {ParamId: 2, Value: []byte{0x0b}}},
				}}},
			},
		},
		{
			name: "dscp zero by alias",
			entry: Entry{Table: "dscp_to_queue", Match: []Match{Exact("hdr.ipv4.dscp", Uint(0))},
				Action: "set_queue", Params: map[string]Value{"queue": Uint(0)}},
			want: &p4v1.TableEntry{
				TableId: p4.TableDSCPToQueue,
				Match: []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{
					Exact: &p4v1.FieldMatch_Exact{Value: []byte{0}}}}},
				Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
					ActionId: p4.ActionSetQueue, Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{0}}}}}},
			},
		},
		{
			name:  "default entry",
			entry: Entry{Table: "TorEgress.ecn_config", Default: true, Action: "NoAction"},
			want: &p4v1.TableEntry{TableId: p4.TableECNConfig, IsDefaultAction: true,
				Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: p4.ActionNoAction}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.TableEntry(tt.entry)
			if err != nil {
				t.Fatalf("TableEntry: %v", err)
			}
			if !proto.Equal(got, tt.want) {
				t.Fatalf("TableEntry(%v) =\n%v\nwant\n%v", tt.entry, got, tt.want)
			}
			back, err := s.Entry(got)
			if err != nil {
				t.Fatalf("Entry: %v", err)
			}
			again, err := s.TableEntry(back)
			if err != nil || !proto.Equal(again, got) {
				t.Fatalf("decode/encode round trip: %v, %v", again, err)
			}
		})
	}
}

func TestTableEntryErrorsNameTheCulprit(t *testing.T) {
	s := torSchema(t)
	fwd := func(port Value) Entry {
		return Entry{Table: "TorIngress.ipv4_lpm", Match: []Match{LPM("hdr.ipv4.dstAddr", IPv4(netip.MustParseAddr("10.0.0.1")), 32)},
			Action: "ipv4_forward", Params: map[string]Value{"port": port, "dst_mac": Uint(1)}}
	}
	tests := []struct {
		name  string
		entry Entry
		want  []string // substrings of the error
	}{
		{"unknown table", Entry{Table: "TorIngress.nope"}, []string{`"TorIngress.nope"`, "no such table"}},
		{"unknown field", Entry{Table: "ipv4_lpm", Match: []Match{Exact("hdr.ipv4.srcAddr", Uint(1))}, Action: "drop"},
			[]string{`"TorIngress.ipv4_lpm"`, `"hdr.ipv4.srcAddr"`, "no such match field"}},
		{"dscp too wide", Entry{Table: "dscp_to_queue", Match: []Match{Exact("hdr.ipv4.dscp", Uint(64))}, Action: "set_queue", Params: map[string]Value{"queue": Uint(1)}},
			[]string{`"TorIngress.dscp_to_queue"`, `"hdr.ipv4.dscp"`, "0x40", "6 bits"}},
		{"port too wide", fwd(Uint(512)), []string{`"TorIngress.ipv4_lpm"`, `"port"`, "0x0200", "9 bits"}},
		{"queue too wide", Entry{Table: "dscp_to_queue", Match: []Match{Exact("hdr.ipv4.dscp", Uint(8))}, Action: "set_queue", Params: map[string]Value{"queue": Uint(8)}},
			[]string{`"queue"`, "0x08", "3 bits"}},
		{"host bits beyond prefix", Entry{Table: "ipv4_lpm", Match: []Match{LPM("hdr.ipv4.dstAddr", IPv4(netip.MustParseAddr("10.0.0.1")), 24)}, Action: "drop"},
			[]string{`"hdr.ipv4.dstAddr"`, "0x0a000001", "/24"}},
		{"wrong kind", Entry{Table: "ipv4_lpm", Match: []Match{Exact("hdr.ipv4.dstAddr", Uint(1))}, Action: "drop"},
			[]string{`"hdr.ipv4.dstAddr"`, "lpm", "exact"}},
		{"missing exact field", Entry{Table: "arp_proxy", Action: "drop"}, []string{`"hdr.arp.tpa"`, "missing"}},
		{"action of another table", Entry{Table: "arp_proxy", Match: []Match{Exact("hdr.arp.tpa", Uint(1))}, Action: "set_queue", Params: map[string]Value{"queue": Uint(1)}},
			[]string{`"TorIngress.set_queue"`, "not an action of this table"}},
		{"missing param", Entry{Table: "arp_proxy", Match: []Match{Exact("hdr.arp.tpa", Uint(1))}, Action: "arp_reply"},
			[]string{`"mac"`, "missing"}},
		{"unknown param", Entry{Table: "arp_proxy", Match: []Match{Exact("hdr.arp.tpa", Uint(1))}, Action: "arp_reply", Params: map[string]Value{"mac": Uint(1), "vlan": Uint(1)}},
			[]string{`"vlan"`, "no such parameter"}},
		{"priority on exact table", Entry{Table: "arp_proxy", Match: []Match{Exact("hdr.arp.tpa", Uint(1))}, Action: "drop", Priority: 5},
			[]string{"priority 5"}},
		{"empty value", Entry{Table: "arp_proxy", Match: []Match{Exact("hdr.arp.tpa", nil)}, Action: "drop"},
			[]string{`"hdr.arp.tpa"`, "empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.TableEntry(tt.entry)
			if err == nil {
				t.Fatalf("TableEntry(%v) succeeded, want an error", tt.entry)
			}
			var ee *EntryError
			if !errors.As(err, &ee) {
				t.Fatalf("error %v is not an *EntryError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

func TestNewSchemaRejectsInconsistentP4Info(t *testing.T) {
	base := func() *p4configv1.P4Info {
		info, err := p4.P4Info()
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	tests := []struct {
		name   string
		mutate func(*p4configv1.P4Info)
		want   string
	}{
		{"duplicate id", func(i *p4configv1.P4Info) { i.Tables[1].Preamble.Id = i.Tables[0].Preamble.Id }, "already used"},
		{"dangling action ref", func(i *p4configv1.P4Info) {
			i.Tables[0].ActionRefs = append(i.Tables[0].ActionRefs, &p4configv1.ActionRef{Id: 0x01999999})
		}, "not a declared action"},
		{"zero-width field", func(i *p4configv1.P4Info) { i.Tables[0].MatchFields[0].Bitwidth = 0 }, "bitwidth"},
		{"unnamed table", func(i *p4configv1.P4Info) { i.Tables[0].Preamble.Name = "" }, "missing id or name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := base()
			tt.mutate(info)
			if _, err := NewSchema(info); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewSchema error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
