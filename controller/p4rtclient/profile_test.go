package p4rtclient

import (
	"strings"
	"testing"
)

// TestProfileEncoding encodes members, groups and entries of the indirect
// table nexthop_group, and rejects the mix-ups.
func TestProfileEncoding(t *testing.T) {
	s := torSchema(t)
	m := Member{Profile: "uplink_selector", ID: 5, Action: "set_egress", Params: map[string]Value{"port": Uint(5)}}
	e, err := s.MemberEntity(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := s.Member(e.GetActionProfileMember())
	if err != nil || back.String() != "TorIngress.uplink_selector member 5 -> TorIngress.set_egress(port=0x05)" {
		t.Errorf("member round trip: %v, %v", back, err)
	}
	g, err := s.GroupEntity(Group{Profile: "TorIngress.uplink_selector", ID: 2, Members: []uint32{6, 5}})
	if err != nil {
		t.Fatal(err)
	}
	if gb, err := s.Group(g.GetActionProfileGroup()); err != nil || gb.String() != "TorIngress.uplink_selector group 2 [5 6]" {
		t.Errorf("group round trip: %v, %v", gb, err)
	}
	te, err := s.TableEntry(Entry{Table: "nexthop_group", Match: []Match{Exact("meta.nexthop_group", Uint(2))}, Group: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Entry(te); err != nil || got.Group != 2 || got.String() != "TorIngress.nexthop_group{meta.nexthop_group=0x02} -> group 2" {
		t.Errorf("entry round trip: %v, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"action in an indirect table", func() error {
			_, err := s.TableEntry(Entry{Table: "nexthop_group", Match: []Match{Exact("meta.nexthop_group", Uint(2))}, Action: "set_egress", Params: map[string]Value{"port": Uint(1)}})
			return err
		}, "names exactly one member or group"},
		{"member and group", func() error {
			_, err := s.TableEntry(Entry{Table: "nexthop_group", Match: []Match{Exact("meta.nexthop_group", Uint(2))}, Member: 1, Group: 2})
			return err
		}, "names exactly one member or group"},
		{"group in a direct table", func() error {
			_, err := s.TableEntry(Entry{Table: "dscp_to_queue", Match: []Match{Exact("hdr.ipv4.dscp", Uint(2))}, Action: "set_queue", Params: map[string]Value{"queue": Uint(1)}, Group: 2})
			return err
		}, "table without an action profile"},
		{"unknown profile", func() error { _, err := s.MemberEntity(Member{Profile: "nope", ID: 1}); return err }, `action profile "nope"`},
		{"member action of another table", func() error {
			_, err := s.MemberEntity(Member{Profile: "uplink_selector", ID: 1, Action: "set_queue", Params: map[string]Value{"queue": Uint(1)}})
			return err
		}, "not an action of this table"},
		{"member id 0", func() error {
			_, err := s.MemberEntity(Member{Profile: "uplink_selector", Action: "set_egress", Params: map[string]Value{"port": Uint(1)}})
			return err
		}, "member id 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}
