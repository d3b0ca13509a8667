package p4rt

import (
	"cmp"
	"maps"
	"slices"

	"github.com/homatb/homatb/p4/pipeline"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// profileState is the control-plane content of one action profile: its
// members and groups by id.
type profileState struct {
	members map[uint32]*memberState
	groups  map[uint32]*groupState
}

type memberState struct {
	msg  *p4v1.ActionProfileMember // canonical, what Read returns
	call pipeline.ActionCall
}

// groupState is a group as Read returns it (its members in id order),
// kept as plain numbers rather than the message: a fabric of a thousand
// switches holds half a million groups of 16 members, 1.2 kB each as
// messages and 150 bytes so.
type groupState struct {
	id      uint32
	maxSize int32
	members []groupMember
}

type groupMember struct {
	id     uint32
	weight int32
}

// proto is the group's canonical message.
func (g *groupState) proto(profile uint32) *p4v1.ActionProfileGroup {
	out := &p4v1.ActionProfileGroup{ActionProfileId: profile, GroupId: g.id, MaxSize: g.maxSize,
		Members: make([]*p4v1.ActionProfileGroup_Member, len(g.members))}
	for i, m := range g.members {
		out.Members[i] = &p4v1.ActionProfileGroup_Member{MemberId: m.id, Weight: m.weight}
	}
	return out
}

func newProfileState() *profileState {
	return &profileState{members: map[uint32]*memberState{}, groups: map[uint32]*groupState{}}
}

// profile returns the state of action profile id, creating it.
func (ts *tableState) profile(id uint32) *profileState {
	p, ok := ts.profiles[id]
	if !ok {
		p = newProfileState()
		ts.profiles[id] = p
	}
	return p
}

// profileSchema is one action profile of the P4Info with the table whose
// actions its members may use.
type profileSchema struct {
	info  *p4configv1.ActionProfile
	table *tableSchema // the first of table_ids
}

func (ps *profileSchema) name() string { return ps.info.GetPreamble().GetName() }

func (s *schema) profileOf(id uint32) (*profileSchema, error) {
	ps, ok := s.profiles[id]
	if !ok {
		return nil, errorf(codes.NotFound, "action profile id %#08x not in the P4Info", id)
	}
	return ps, nil
}

// referenced reports whether a table entry of ts refers to the member
// (group false) or group (group true) id of profile.
func (ts *tableState) referenced(profile, id uint32, group bool) bool {
	for _, t := range ts.tables {
		for _, e := range t.entries {
			if e.profile != profile {
				continue
			}
			if e.ref == (profileRef{id: id, group: group}) {
				return true
			}
		}
	}
	return false
}

func (s *Server) writeMember(sc *schema, ts *tableState, typ p4v1.Update_Type, m *p4v1.ActionProfileMember) error {
	ps, err := sc.profileOf(m.GetActionProfileId())
	if err != nil {
		return err
	}
	name := ps.name()
	st := ts.profile(m.GetActionProfileId())
	_, exists := st.members[m.GetMemberId()]
	if typ == p4v1.Update_DELETE {
		if !exists {
			return errorf(codes.NotFound, "%s: no member %d to delete", name, m.GetMemberId())
		}
		for gid, g := range st.groups {
			for _, gm := range g.members {
				if gm.id == m.GetMemberId() {
					return errorf(codes.FailedPrecondition, "%s: member %d is in group %d; remove it from the group first", name, m.GetMemberId(), gid)
				}
			}
		}
		if ts.referenced(m.GetActionProfileId(), m.GetMemberId(), false) {
			return errorf(codes.FailedPrecondition, "%s: member %d is used by a table entry", name, m.GetMemberId())
		}
		delete(st.members, m.GetMemberId())
		return nil
	}
	switch {
	case typ == p4v1.Update_INSERT && exists:
		return errorf(codes.AlreadyExists, "%s: member %d exists, use MODIFY to change it", name, m.GetMemberId())
	case typ == p4v1.Update_MODIFY && !exists:
		return errorf(codes.NotFound, "%s: no member %d to modify", name, m.GetMemberId())
	case typ == p4v1.Update_INSERT && int64(len(st.members)) >= ps.info.GetSize() && ps.info.GetSize() > 0:
		return errorf(codes.ResourceExhausted, "%s: profile full (%d members)", name, ps.info.GetSize())
	}
	if m.GetAction() == nil {
		return errorf(codes.InvalidArgument, "%s: member %d has no action", name, m.GetMemberId())
	}
	ta, call, err := checkAction(sc, ps.table, &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: m.GetAction()}}, false)
	if err != nil {
		return err
	}
	st.members[m.GetMemberId()] = &memberState{
		msg:  &p4v1.ActionProfileMember{ActionProfileId: m.GetActionProfileId(), MemberId: m.GetMemberId(), Action: ta.GetAction()},
		call: call,
	}
	return nil
}

func (s *Server) writeGroup(sc *schema, ts *tableState, typ p4v1.Update_Type, g *p4v1.ActionProfileGroup) error {
	ps, err := sc.profileOf(g.GetActionProfileId())
	if err != nil {
		return err
	}
	name := ps.name()
	if !ps.info.GetWithSelector() {
		return errorf(codes.InvalidArgument, "%s: an action profile without a selector has no groups", name)
	}
	st := ts.profile(g.GetActionProfileId())
	old, exists := st.groups[g.GetGroupId()]
	if typ == p4v1.Update_DELETE {
		if !exists {
			return errorf(codes.NotFound, "%s: no group %d to delete", name, g.GetGroupId())
		}
		if ts.referenced(g.GetActionProfileId(), g.GetGroupId(), true) {
			return errorf(codes.FailedPrecondition, "%s: group %d is used by a table entry", name, g.GetGroupId())
		}
		delete(st.groups, g.GetGroupId())
		return nil
	}
	switch {
	case typ == p4v1.Update_INSERT && exists:
		return errorf(codes.AlreadyExists, "%s: group %d exists, use MODIFY to change it", name, g.GetGroupId())
	case typ == p4v1.Update_MODIFY && !exists:
		return errorf(codes.NotFound, "%s: no group %d to modify", name, g.GetGroupId())
	case typ == p4v1.Update_MODIFY && g.GetMaxSize() != old.maxSize:
		return errorf(codes.InvalidArgument, "%s: group %d: max_size %d cannot change (was %d)", name, g.GetGroupId(), g.GetMaxSize(), old.maxSize)
	}
	limit := int64(ps.info.GetMaxGroupSize())
	if g.GetMaxSize() < 0 || (limit > 0 && int64(g.GetMaxSize()) > limit) {
		return errorf(codes.InvalidArgument, "%s: group %d: max_size %d outside 0..%d", name, g.GetGroupId(), g.GetMaxSize(), limit)
	}
	if g.GetMaxSize() > 0 {
		limit = int64(g.GetMaxSize())
	}
	out := &groupState{id: g.GetGroupId(), maxSize: g.GetMaxSize(), members: make([]groupMember, 0, len(g.GetMembers()))}
	seen := map[uint32]bool{}
	weight := int64(0)
	for _, gm := range g.GetMembers() {
		switch {
		case seen[gm.GetMemberId()]:
			return errorf(codes.InvalidArgument, "%s: group %d lists member %d twice", name, g.GetGroupId(), gm.GetMemberId())
		case st.members[gm.GetMemberId()] == nil:
			return errorf(codes.NotFound, "%s: group %d: no member %d", name, g.GetGroupId(), gm.GetMemberId())
		case gm.GetWeight() < 1:
			return errorf(codes.InvalidArgument, "%s: group %d member %d: weight %d, want >= 1", name, g.GetGroupId(), gm.GetMemberId(), gm.GetWeight())
		case gm.GetWatchKind() != nil:
			return errorf(codes.Unimplemented, "%s: group %d member %d: watch ports are not supported by this target", name, g.GetGroupId(), gm.GetMemberId())
		}
		seen[gm.GetMemberId()] = true
		weight += int64(gm.GetWeight())
		out.members = append(out.members, groupMember{id: gm.GetMemberId(), weight: gm.GetWeight()})
	}
	if limit > 0 && weight > limit {
		return errorf(codes.ResourceExhausted, "%s: group %d: total weight %d beyond max size %d", name, g.GetGroupId(), weight, limit)
	}
	slices.SortFunc(out.members, func(a, b groupMember) int { return cmp.Compare(a.id, b.id) })
	st.groups[g.GetGroupId()] = out
	return nil
}

// checkIndirect validates the action of an entry of table tsch, which has
// an action profile: it must name a member or a group of that profile that
// exists in ts.
func checkIndirect(ts *tableState, tsch *tableSchema, ta *p4v1.TableAction) (*p4v1.TableAction, error) {
	tname := tsch.info.GetPreamble().GetName()
	profile := tsch.info.GetImplementationId()
	st := ts.profiles[profile]
	switch a := ta.GetType().(type) {
	case *p4v1.TableAction_ActionProfileMemberId:
		if st == nil || st.members[a.ActionProfileMemberId] == nil {
			return nil, errorf(codes.NotFound, "%s: no member %d in its action profile", tname, a.ActionProfileMemberId)
		}
	case *p4v1.TableAction_ActionProfileGroupId:
		if st == nil || st.groups[a.ActionProfileGroupId] == nil {
			return nil, errorf(codes.NotFound, "%s: no group %d in its action profile", tname, a.ActionProfileGroupId)
		}
	default:
		return nil, errorf(codes.InvalidArgument, "%s: an indirect table takes a member or group id, not %T", tname, ta.GetType())
	}
	return proto.Clone(ta).(*p4v1.TableAction), nil
}

// calls is the pipeline form of a group: its members' actions in member id
// order, a member of weight w w times (the selector picks hash % length).
func (st *profileState) calls(group uint32) []pipeline.ActionCall {
	var out []pipeline.ActionCall
	for _, gm := range st.groups[group].members {
		for range gm.weight {
			out = append(out, st.members[gm.id].call)
		}
	}
	return out
}

func (s *Server) readMembers(sc *schema, ts *tableState, q *p4v1.ActionProfileMember) ([]*p4v1.Entity, error) {
	return readProfiles(sc, ts, q.GetActionProfileId(), q.GetMemberId(),
		func(st *profileState) map[uint32]*memberState { return st.members },
		func(_ uint32, m *memberState) *p4v1.Entity {
			return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: proto.Clone(m.msg).(*p4v1.ActionProfileMember)}}
		})
}

func (s *Server) readGroups(sc *schema, ts *tableState, q *p4v1.ActionProfileGroup) ([]*p4v1.Entity, error) {
	return readProfiles(sc, ts, q.GetActionProfileId(), q.GetGroupId(),
		func(st *profileState) map[uint32]*groupState { return st.groups },
		func(profile uint32, g *groupState) *p4v1.Entity {
			return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: g.proto(profile)}}
		})
}

// readProfiles reads the members or groups (objects) of action profile
// profile (0: every profile) with id (0: every id), in profile then id
// order.
func readProfiles[T any](sc *schema, ts *tableState, profile, id uint32, objects func(*profileState) map[uint32]T, entity func(profile uint32, obj T) *p4v1.Entity) ([]*p4v1.Entity, error) {
	ids, err := sc.profileIDs(profile)
	if err != nil {
		return nil, err
	}
	var out []*p4v1.Entity
	for _, pid := range ids {
		st := ts.profiles[pid]
		if st == nil {
			continue
		}
		m := objects(st)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if id == 0 || id == k {
				out = append(out, entity(pid, m[k]))
			}
		}
	}
	return out, nil
}

// profileIDs is the profile a read names, or every profile for id 0.
func (sc *schema) profileIDs(id uint32) ([]uint32, error) {
	if id == 0 {
		return sc.profileList, nil
	}
	if _, err := sc.profileOf(id); err != nil {
		return nil, err
	}
	return []uint32{id}, nil
}
