package p4rt

import (
	"testing"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/pipeline"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

func member(id uint32, port byte) *p4v1.ActionProfileMember {
	return &p4v1.ActionProfileMember{ActionProfileId: p4.ProfileUplinkSelector, MemberId: id,
		Action: &p4v1.Action{ActionId: p4.ActionSetEgress, Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{port}}}}}
}

func group(id uint32, members ...uint32) *p4v1.ActionProfileGroup {
	g := &p4v1.ActionProfileGroup{ActionProfileId: p4.ProfileUplinkSelector, GroupId: id}
	for _, m := range members {
		g.Members = append(g.Members, &p4v1.ActionProfileGroup_Member{MemberId: m, Weight: 1})
	}
	return g
}

func memberUpdate(typ p4v1.Update_Type, m *p4v1.ActionProfileMember) *p4v1.Update {
	return &p4v1.Update{Type: typ, Entity: &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: m}}}
}

func groupUpdate(typ p4v1.Update_Type, g *p4v1.ActionProfileGroup) *p4v1.Update {
	return &p4v1.Update{Type: typ, Entity: &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: g}}}
}

// nexthop is a nexthop_group entry for group key g running member or group
// ref of uplink_selector.
func nexthop(g byte, ref *p4v1.TableAction) *p4v1.TableEntry {
	return &p4v1.TableEntry{TableId: p4.TableNexthop, Match: []*p4v1.FieldMatch{exact(1, []byte{g})}, Action: ref}
}

func groupRef(id uint32) *p4v1.TableAction {
	return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: id}}
}

func memberRef(id uint32) *p4v1.TableAction {
	return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: id}}
}

// ecmpRoute is an ipv4_lpm entry sending dst/plen to next-hop group g.
func ecmpRoute(dst []byte, plen int32, g byte) *p4v1.TableEntry {
	return &p4v1.TableEntry{TableId: p4.TableIPv4LPM, Match: []*p4v1.FieldMatch{lpmMatch(dst, plen)},
		Action: action(p4.ActionECMPForward, []byte{g}, []byte{2, 0, 0, 0, 0, 2})}
}

// flowFrame is testFrame sent by UDP source port sport to 10.0.1.7.
func flowFrame(sport uint16) []byte {
	f := testFrame()
	f[23] = 17
	copy(f[30:34], []byte{10, 0, 1, 7})
	f[34], f[35] = byte(sport>>8), byte(sport)
	return f
}

// portsUsed sends n flows through the pipeline and returns the ports used.
func portsUsed(pl *pipeline.Pipeline, n int) map[uint16]int {
	out := map[uint16]int{}
	for i := range n {
		var v pipeline.Verdict
		pl.Ingress(flowFrame(uint16(1000+i)), 1, &v)
		if v.Drop {
			out[pipeline.DropPort]++
			continue
		}
		out[v.EgressPort]++
	}
	return out
}

// TestActionProfileLifecycle writes members, a group and an ECMP route
// over P4Runtime, reads them back (by id and wildcard), checks the pipeline
// spreads flows over the group, modifies the group and a member, and
// deletes everything in the order the references allow.
func TestActionProfileLifecycle(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	w := func(updates ...*p4v1.Update) {
		t.Helper()
		if err := h.write(ctl.id, updates...); err != nil {
			t.Fatal(err)
		}
	}
	w(memberUpdate(p4v1.Update_INSERT, member(1, 5)), memberUpdate(p4v1.Update_INSERT, member(2, 6)),
		memberUpdate(p4v1.Update_INSERT, &p4v1.ActionProfileMember{ActionProfileId: p4.ProfileUplinkSelector, MemberId: 3,
			Action: &p4v1.Action{ActionId: p4.ActionSetEgress, Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{0, 7}}}}}),
		groupUpdate(p4v1.Update_INSERT, group(10, 3, 1, 2)),
		update(p4v1.Update_INSERT, nexthop(1, groupRef(10))),
		update(p4v1.Update_INSERT, ecmpRoute([]byte{10, 0, 1, 0}, 24, 1)))

	got, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{}}})
	if err != nil || len(got) != 3 {
		t.Fatalf("wildcard member read: %v, %d members", err, len(got))
	}
	if want := member(3, 7); !proto.Equal(got[2].GetActionProfileMember(), want) {
		t.Errorf("member 3 read back %v, want the canonical %v", got[2].GetActionProfileMember(), want)
	}
	got, err = h.read(&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{ActionProfileId: p4.ProfileUplinkSelector, MemberId: 2}}})
	if err != nil || len(got) != 1 || !proto.Equal(got[0].GetActionProfileMember(), member(2, 6)) {
		t.Fatalf("member 2 read: %v, %v", err, got)
	}
	got, err = h.read(&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: &p4v1.ActionProfileGroup{}}})
	if err != nil || len(got) != 1 || !proto.Equal(got[0].GetActionProfileGroup(), group(10, 1, 2, 3)) {
		t.Fatalf("wildcard group read: %v, %v (members sorted by id)", err, got)
	}
	got, err = h.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4.TableNexthop}}})
	if err != nil || len(got) != 1 || !proto.Equal(got[0].GetTableEntry(), nexthop(1, groupRef(10))) {
		t.Fatalf("nexthop_group read: %v, %v", err, got)
	}

	if used := portsUsed(h.srv.Pipeline(), 300); len(used) != 3 || used[5] == 0 || used[6] == 0 || used[7] == 0 {
		t.Errorf("300 flows through group {5,6,7} used %v", used)
	}
	w(groupUpdate(p4v1.Update_MODIFY, group(10, 1)))
	if used := portsUsed(h.srv.Pipeline(), 50); len(used) != 1 || used[5] != 50 {
		t.Errorf("group {5} after MODIFY: ports %v", used)
	}
	w(memberUpdate(p4v1.Update_MODIFY, member(1, 9)))
	if used := portsUsed(h.srv.Pipeline(), 50); used[9] != 50 {
		t.Errorf("member 1 modified to port 9: ports %v", used)
	}
	w(update(p4v1.Update_MODIFY, nexthop(1, memberRef(2))))
	if used := portsUsed(h.srv.Pipeline(), 50); used[6] != 50 {
		t.Errorf("entry pointing at member 2 (port 6): ports %v", used)
	}

	w(groupUpdate(p4v1.Update_DELETE, &p4v1.ActionProfileGroup{ActionProfileId: p4.ProfileUplinkSelector, GroupId: 10}),
		update(p4v1.Update_DELETE, nexthop(1, nil)))
	for _, id := range []uint32{1, 2, 3} {
		w(memberUpdate(p4v1.Update_DELETE, &p4v1.ActionProfileMember{ActionProfileId: p4.ProfileUplinkSelector, MemberId: id}))
	}
	if used := portsUsed(h.srv.Pipeline(), 10); used[pipeline.DropPort] != 10 {
		t.Errorf("without a nexthop_group entry the route drops: %v", used)
	}
	got, err = h.read(&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{}}},
		&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: &p4v1.ActionProfileGroup{}}})
	if err != nil || len(got) != 0 {
		t.Errorf("after deleting everything read %d entities (%v)", len(got), err)
	}
}

// TestActionProfileErrors checks each failure the spec defines for members,
// groups and the table entries that refer to them, one update per batch so
// each error code is the only one.
func TestActionProfileErrors(t *testing.T) {
	setup := []*p4v1.Update{
		memberUpdate(p4v1.Update_INSERT, member(1, 5)), memberUpdate(p4v1.Update_INSERT, member(2, 6)),
		memberUpdate(p4v1.Update_INSERT, member(4, 8)),
		groupUpdate(p4v1.Update_INSERT, group(10, 1, 2)),
		update(p4v1.Update_INSERT, nexthop(1, groupRef(10))),
		update(p4v1.Update_INSERT, nexthop(2, memberRef(4))),
		update(p4v1.Update_INSERT, ecmpRoute([]byte{10, 0, 1, 0}, 24, 1)),
	}
	del := p4v1.Update_DELETE
	tests := []struct {
		name string
		u    *p4v1.Update
		want codes.Code
	}{
		{"member insert twice", memberUpdate(p4v1.Update_INSERT, member(1, 5)), codes.AlreadyExists},
		{"modify a missing member", memberUpdate(p4v1.Update_MODIFY, member(9, 5)), codes.NotFound},
		{"delete a missing member", memberUpdate(del, member(9, 5)), codes.NotFound},
		{"delete a member still in a group", memberUpdate(del, member(1, 5)), codes.FailedPrecondition},
		{"delete a member a table entry uses", memberUpdate(del, member(4, 8)), codes.FailedPrecondition},
		{"member of an unknown profile", memberUpdate(p4v1.Update_INSERT, &p4v1.ActionProfileMember{ActionProfileId: 0x11000099, MemberId: 5,
			Action: member(5, 5).GetAction()}), codes.NotFound},
		{"member without an action", memberUpdate(p4v1.Update_INSERT, &p4v1.ActionProfileMember{ActionProfileId: p4.ProfileUplinkSelector, MemberId: 5}), codes.InvalidArgument},
		{"member action not of the table", memberUpdate(p4v1.Update_INSERT, &p4v1.ActionProfileMember{ActionProfileId: p4.ProfileUplinkSelector, MemberId: 5,
			Action: action(p4.ActionSetQueue, []byte{1}).GetAction()}), codes.InvalidArgument},
		{"member action default only", memberUpdate(p4v1.Update_INSERT, &p4v1.ActionProfileMember{ActionProfileId: p4.ProfileUplinkSelector, MemberId: 5,
			Action: &p4v1.Action{ActionId: p4.ActionNoAction}}), codes.PermissionDenied},
		{"member param too wide", memberUpdate(p4v1.Update_INSERT, &p4v1.ActionProfileMember{ActionProfileId: p4.ProfileUplinkSelector, MemberId: 5,
			Action: action(p4.ActionSetEgress, []byte{2, 0}).GetAction()}), codes.OutOfRange},
		{"group insert twice", groupUpdate(p4v1.Update_INSERT, group(10, 1)), codes.AlreadyExists},
		{"group with a missing member", groupUpdate(p4v1.Update_INSERT, group(11, 1, 9)), codes.NotFound},
		{"group lists a member twice", groupUpdate(p4v1.Update_INSERT, group(11, 1, 1)), codes.InvalidArgument},
		{"group member weight 0", groupUpdate(p4v1.Update_INSERT, &p4v1.ActionProfileGroup{ActionProfileId: p4.ProfileUplinkSelector, GroupId: 11,
			Members: []*p4v1.ActionProfileGroup_Member{{MemberId: 1}}}), codes.InvalidArgument},
		{"group with a watch port", groupUpdate(p4v1.Update_INSERT, &p4v1.ActionProfileGroup{ActionProfileId: p4.ProfileUplinkSelector, GroupId: 11,
			Members: []*p4v1.ActionProfileGroup_Member{{MemberId: 1, Weight: 1, WatchKind: &p4v1.ActionProfileGroup_Member_WatchPort{WatchPort: []byte{5}}}}}), codes.Unimplemented},
		{"group max_size changed", groupUpdate(p4v1.Update_MODIFY, &p4v1.ActionProfileGroup{ActionProfileId: p4.ProfileUplinkSelector, GroupId: 10, MaxSize: 4}), codes.InvalidArgument},
		{"group beyond its max_size", groupUpdate(p4v1.Update_INSERT, &p4v1.ActionProfileGroup{ActionProfileId: p4.ProfileUplinkSelector, GroupId: 11, MaxSize: 1,
			Members: []*p4v1.ActionProfileGroup_Member{{MemberId: 1, Weight: 1}, {MemberId: 2, Weight: 1}}}), codes.ResourceExhausted},
		{"modify a missing group", groupUpdate(p4v1.Update_MODIFY, group(11, 1)), codes.NotFound},
		{"delete a missing group", groupUpdate(del, group(11)), codes.NotFound},
		{"delete a group a table entry uses", groupUpdate(del, group(10)), codes.FailedPrecondition},
		{"entry naming a missing group", update(p4v1.Update_INSERT, nexthop(3, groupRef(99))), codes.NotFound},
		{"entry naming a missing member", update(p4v1.Update_INSERT, nexthop(3, memberRef(99))), codes.NotFound},
		{"direct action in an indirect table", update(p4v1.Update_INSERT, nexthop(3, action(p4.ActionSetEgress, []byte{5}))), codes.InvalidArgument},
		{"member id in a direct table", update(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: p4.TableIPv4LPM,
			Match: []*p4v1.FieldMatch{lpmMatch([]byte{10, 0, 3, 0}, 24)}, Action: memberRef(1)}), codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ctl := h.primary()
			if err := h.write(ctl.id, setup...); err != nil {
				t.Fatal(err)
			}
			err := h.write(ctl.id, tc.u)
			if err == nil {
				t.Fatalf("write succeeded, want %v", tc.want)
			}
			d := details(t, err)
			if len(d) != 1 || codes.Code(d[0].GetCanonicalCode()) != tc.want {
				t.Fatalf("error %v, want one detail with %v", err, tc.want)
			}
			// The failed update changed nothing: flows still use group 10.
			if used := portsUsed(h.srv.Pipeline(), 100); used[5] == 0 || used[6] == 0 {
				t.Errorf("after the failed write the group's ports carry %v", used)
			}
		})
	}
}
