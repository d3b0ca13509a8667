package p4rtclient

import (
	"context"
	"errors"
	"fmt"
	"slices"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Member is an action profile member addressed by names: the profile, the
// member id and the action the member runs.
type Member struct {
	Profile string
	ID      uint32
	Action  string
	Params  map[string]Value
}

// Group is an action profile group: the ids of its members, each of
// weight 1 (a selector picks one per packet).
type Group struct {
	Profile string
	ID      uint32
	Members []uint32
}

func (m Member) String() string {
	return fmt.Sprintf("%s member %d -> %s", m.Profile, m.ID, actionString(m.Action, m.Params))
}

func (g Group) String() string { return fmt.Sprintf("%s group %d %v", g.Profile, g.ID, g.Members) }

// profile resolves an action profile by name or alias.
func (s *Schema) profile(name string) (*p4configv1.ActionProfile, error) {
	if p := s.profiles[name]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("action profile %q: no such action profile in the P4Info", name)
}

// MemberEntity encodes a named member; its action is checked against the
// profile's first table like an entry's.
func (s *Schema) MemberEntity(m Member) (*p4v1.Entity, error) {
	p, err := s.profile(m.Profile)
	if err != nil {
		return nil, err
	}
	if m.ID == 0 {
		return nil, fmt.Errorf("%s: member id 0", p.GetPreamble().GetName())
	}
	if len(p.GetTableIds()) == 0 {
		return nil, fmt.Errorf("%s: the profile has no table", p.GetPreamble().GetName())
	}
	t := s.tableIDs[p.GetTableIds()[0]]
	act, aerr := s.encodeAction(t, Entry{Action: m.Action, Params: m.Params})
	if aerr != nil {
		aerr.Table = p.GetPreamble().GetName()
		return nil, aerr
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{
		ActionProfileId: p.GetPreamble().GetId(), MemberId: m.ID, Action: act}}}, nil
}

// GroupEntity encodes a named group with its members in id order.
func (s *Schema) GroupEntity(g Group) (*p4v1.Entity, error) {
	p, err := s.profile(g.Profile)
	if err != nil {
		return nil, err
	}
	if g.ID == 0 {
		return nil, fmt.Errorf("%s: group id 0", p.GetPreamble().GetName())
	}
	if !p.GetWithSelector() {
		return nil, fmt.Errorf("%s: a profile without a selector has no groups", p.GetPreamble().GetName())
	}
	out := &p4v1.ActionProfileGroup{ActionProfileId: p.GetPreamble().GetId(), GroupId: g.ID}
	for _, id := range slices.Sorted(slices.Values(g.Members)) {
		out.Members = append(out.Members, &p4v1.ActionProfileGroup_Member{MemberId: id, Weight: 1})
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: out}}, nil
}

// Member decodes a member read from a switch.
func (s *Schema) Member(m *p4v1.ActionProfileMember) (Member, error) {
	p := s.profIDs[m.GetActionProfileId()]
	if p == nil {
		return Member{}, fmt.Errorf("action profile id %#x is not in the P4Info", m.GetActionProfileId())
	}
	a := s.actionIDs[m.GetAction().GetActionId()]
	if a == nil {
		return Member{}, fmt.Errorf("%s member %d: action id %#x is not in the P4Info", p.GetPreamble().GetName(), m.GetMemberId(), m.GetAction().GetActionId())
	}
	out := Member{Profile: p.GetPreamble().GetName(), ID: m.GetMemberId(), Action: a.a.GetPreamble().GetName(), Params: map[string]Value{}}
	for _, prm := range m.GetAction().GetParams() {
		pi := a.paramIDs[prm.GetParamId()]
		if pi == nil {
			return Member{}, fmt.Errorf("%s member %d: param id %d is not in the P4Info", out.Profile, out.ID, prm.GetParamId())
		}
		out.Params[pi.GetName()] = Value(prm.GetValue())
	}
	return out, nil
}

// Group decodes a group read from a switch (weights other than 1 are an
// error: Group has none).
func (s *Schema) Group(g *p4v1.ActionProfileGroup) (Group, error) {
	p := s.profIDs[g.GetActionProfileId()]
	if p == nil {
		return Group{}, fmt.Errorf("action profile id %#x is not in the P4Info", g.GetActionProfileId())
	}
	out := Group{Profile: p.GetPreamble().GetName(), ID: g.GetGroupId()}
	for _, m := range g.GetMembers() {
		if m.GetWeight() != 1 {
			return Group{}, fmt.Errorf("%s group %d member %d: weight %d", out.Profile, out.ID, m.GetMemberId(), m.GetWeight())
		}
		out.Members = append(out.Members, m.GetMemberId())
	}
	return out, nil
}

// WriteProfiles sends members and groups as updates of one type, in one
// Write: members first for INSERT and MODIFY (groups list them), groups
// first for DELETE (a member still in a group cannot go).
func (c *Client) WriteProfiles(ctx context.Context, typ p4v1.Update_Type, members []Member, groups []Group) error {
	s, err := c.NeedSchema()
	if err != nil {
		return err
	}
	var ms, gs []*p4v1.Update
	for i, m := range members {
		e, err := s.MemberEntity(m)
		if err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
		ms = append(ms, &p4v1.Update{Type: typ, Entity: e})
	}
	for i, g := range groups {
		e, err := s.GroupEntity(g)
		if err != nil {
			return fmt.Errorf("group %d: %w", i, err)
		}
		gs = append(gs, &p4v1.Update{Type: typ, Entity: e})
	}
	if typ == p4v1.Update_DELETE {
		return c.Write(ctx, append(gs, ms...)...)
	}
	return c.Write(ctx, append(ms, gs...)...)
}

// ReadProfiles reads every member and group of every action profile.
func (c *Client) ReadProfiles(ctx context.Context) ([]Member, []Group, error) {
	s, err := c.NeedSchema()
	if err != nil {
		return nil, nil, err
	}
	ents, err := c.Read(ctx,
		&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{}}},
		&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: &p4v1.ActionProfileGroup{}}})
	if err != nil {
		return nil, nil, err
	}
	var (
		members []Member
		groups  []Group
		errs    []error
	)
	for _, e := range ents {
		switch x := e.GetEntity().(type) {
		case *p4v1.Entity_ActionProfileMember:
			m, err := s.Member(x.ActionProfileMember)
			errs = append(errs, err)
			members = append(members, m)
		case *p4v1.Entity_ActionProfileGroup:
			g, err := s.Group(x.ActionProfileGroup)
			errs = append(errs, err)
			groups = append(groups, g)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, fmt.Errorf("%s: decode action profiles read back: %w", c.addr, err)
	}
	return members, groups, nil
}
