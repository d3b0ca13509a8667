package pipeline

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/p4"
)

// ecmpContents is torContents plus 10.0.1.0/24 behind next-hop group 1,
// an action profile group of the uplinks 5..8, and 10.0.2.0/24 behind
// group 2, whose entry is one member (set_egress(9)) without a group.
func ecmpContents(spray bool) map[uint32]TableContents {
	c := torContents()
	remote := lpm(0x0a000100, 24)
	remote.Action = ActionCall{ID: p4.ActionECMPForward, Params: [MaxParams]uint64{1, h2MAC}}
	single := lpm(0x0a000200, 24)
	single.Action = ActionCall{ID: p4.ActionECMPForward, Params: [MaxParams]uint64{2, h2MAC}}
	lp := c[p4.TableIPv4LPM]
	lp.Entries = append(lp.Entries, remote, single)
	c[p4.TableIPv4LPM] = lp
	var members []ActionCall
	for port := uint64(5); port <= 8; port++ {
		members = append(members, ActionCall{ID: p4.ActionSetEgress, Params: [MaxParams]uint64{port}})
	}
	c[p4.TableNexthop] = TableContents{
		Entries: []Entry{
			{Match: [MaxKeyFields]FieldMatch{{Value: 1, Mask: FieldMask(16)}}, Action: ActionCall{ID: ActionSelect, Params: [MaxParams]uint64{0}}},
			{Match: [MaxKeyFields]FieldMatch{{Value: 2, Mask: FieldMask(16)}}, Action: ActionCall{ID: p4.ActionSetEgress, Params: [MaxParams]uint64{9}}},
		},
		Groups: [][]ActionCall{members},
	}
	if spray {
		c[p4.TableLoadBalance] = TableContents{Default: &ActionCall{ID: p4.ActionSpray}}
	}
	return c
}

// udpFrame is a UDP frame to dst with the given source port.
func udpFrame(dst uint32, sport uint16) []byte {
	f := ipv4Frame(dst, 0, 64, 100)
	binary.BigEndian.PutUint16(f[ethLen+ipv4Len:], sport)
	binary.BigEndian.PutUint16(f[ethLen+ipv4Len+2:], 4000)
	return f
}

func installed(t testing.TB, c map[uint32]TableContents) *Pipeline {
	t.Helper()
	p := New()
	if err := p.Install(c); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestECMPFlowHashSpreadsFlowsAndPinsEach(t *testing.T) {
	p := installed(t, ecmpContents(false))
	perPort := map[uint16]int{}
	for sport := uint16(1000); sport < 1400; sport++ {
		var first uint16
		for i := range 5 {
			var v Verdict
			f := udpFrame(0x0a000107, sport)
			p.Ingress(f, 1, &v)
			if v.Drop || v.EgressPort < 5 || v.EgressPort > 8 {
				t.Fatalf("sport %d: verdict %+v, want an uplink 5..8", sport, v)
			}
			if i == 0 {
				first = v.EgressPort
				perPort[first]++
			} else if v.EgressPort != first {
				t.Fatalf("sport %d: packet %d on port %d, the flow's first on %d", sport, i, v.EgressPort, first)
			}
			if f[ipTTLOff] != 63 || binary.BigEndian.Uint16(f[4:6]) != uint16(h2MAC) || Checksum(f[ethLen:ethLen+ipv4Len]) != 0 {
				t.Fatalf("sport %d: frame not rewritten as ecmp_forward says", sport)
			}
		}
	}
	// 400 flows over 4 members: each member gets its share within 40%.
	for port := uint16(5); port <= 8; port++ {
		if n := perPort[port]; n < 60 || n > 140 {
			t.Errorf("port %d carries %d of 400 flows: %v", port, n, perPort)
		}
	}
}

func TestECMPHashesHomaPorts(t *testing.T) {
	p := installed(t, ecmpContents(false))
	seen := map[uint16]bool{}
	for sport := uint16(1); sport <= 64; sport++ {
		f := homaFrame(0, 0x10, 0, 0, 1000)
		binary.BigEndian.PutUint32(f[ipDstOff:], 0x0a000107)
		binary.BigEndian.PutUint16(f[ethLen+ipv4Len:], sport)
		var v Verdict
		p.Ingress(f, 1, &v)
		seen[v.EgressPort] = true
	}
	if len(seen) != 4 {
		t.Errorf("64 Homa flows by source port used ports %v, want all four uplinks", seen)
	}
	if FlowHash(homaFrame(0, 0x10, 0, 0, 1000), 0) == FlowHash(homaFrame(0, 0x10, 0, 0, 1000), 1) {
		t.Error("the nonce does not change the hash")
	}
}

func TestSprayMovesOneFlowAcrossUplinks(t *testing.T) {
	p := installed(t, ecmpContents(true))
	perPort := map[uint16]int{}
	const n = 400
	for range n {
		var v Verdict
		p.Ingress(udpFrame(0x0a000107, 1000), 1, &v)
		perPort[v.EgressPort]++
	}
	for port := uint16(5); port <= 8; port++ {
		if c := perPort[port]; c < n/4*6/10 || c > n/4*14/10 {
			t.Errorf("one sprayed flow: port %d got %d of %d packets: %v", port, c, n, perPort)
		}
	}
	if seq, _ := p.Register(p4.RegisterSpraySeq, 0); seq != n {
		t.Errorf("spray_seq = %d after %d sprayed packets", seq, n)
	}
	var v Verdict
	p.Ingress(udpFrame(0x0a000002, 1000), 1, &v)
	if seq, _ := p.Register(p4.RegisterSpraySeq, 0); seq != n {
		t.Errorf("a packet to a local host advanced spray_seq to %d", seq)
	}
}

func TestNexthopMemberMissAndEmptyGroup(t *testing.T) {
	c := ecmpContents(false)
	var v Verdict
	installed(t, c).Ingress(udpFrame(0x0a000201, 1), 1, &v)
	if v != (Verdict{EgressPort: 9}) {
		t.Errorf("member entry: verdict %+v, want port 9", v)
	}
	nh := c[p4.TableNexthop]
	nh.Groups = [][]ActionCall{nil}
	c[p4.TableNexthop] = nh
	installed(t, c).Ingress(udpFrame(0x0a000107, 1), 1, &v)
	if !v.Drop {
		t.Errorf("empty group: verdict %+v, want drop", v)
	}
	c[p4.TableNexthop] = TableContents{}
	installed(t, c).Ingress(udpFrame(0x0a000107, 1), 1, &v)
	if !v.Drop {
		t.Errorf("nexthop_group miss: verdict %+v, want drop", v)
	}
}

func TestInstallRejectsBadGroups(t *testing.T) {
	tests := []struct {
		name string
		edit func(c map[uint32]TableContents)
		want string
	}{
		{"groups on a direct table", func(c map[uint32]TableContents) {
			x := c[p4.TableIPv4LPM]
			x.Groups = [][]ActionCall{{{ID: p4.ActionSetEgress}}}
			c[p4.TableIPv4LPM] = x
		}, "without a selector"},
		{"group index beyond the groups", func(c map[uint32]TableContents) {
			x := c[p4.TableNexthop]
			x.Groups = nil
			c[p4.TableNexthop] = x
		}, "group index 0 of 0"},
		{"member action not of the table", func(c map[uint32]TableContents) {
			x := c[p4.TableNexthop]
			x.Groups = [][]ActionCall{{{ID: p4.ActionIPv4Forward}}}
			c[p4.TableNexthop] = x
		}, "not a member action"},
		{"selection outside the selector table", func(c map[uint32]TableContents) {
			x := c[p4.TableIPv4LPM]
			x.Entries[0].Action = ActionCall{ID: ActionSelect}
			c[p4.TableIPv4LPM] = x
		}, "not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ecmpContents(false)
			tc.edit(c)
			err := New().Install(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Install: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestSelectorAllocatesNothing(t *testing.T) {
	for _, spray := range []bool{false, true} {
		p := installed(t, ecmpContents(spray))
		f := udpFrame(0x0a000107, 1000)
		var v Verdict
		allocs := testing.AllocsPerRun(1000, func() {
			f[ipTTLOff] = 64
			p.Ingress(f, 1, &v)
		})
		if allocs != 0 {
			t.Errorf("spray %v: Ingress through the selector allocates %.1f times per packet", spray, allocs)
		}
	}
}

func TestFlowHashIsCRC32(t *testing.T) {
	f := udpFrame(0x0a000107, 1000)
	var in []byte
	in = binary.BigEndian.AppendUint32(in, 7)
	in = append(in, f[ethLen+ipv4Len:ethLen+ipv4Len+4]...)
	in = append(in, f[ipSrcOff:ipSrcOff+8]...)
	in = append(in, f[ipProtoOff])
	if got, want := FlowHash(f, 7), uint16(crc32.ChecksumIEEE(in)); got != want {
		t.Errorf("FlowHash = %#04x, CRC-32 of the selector fields %#04x", got, want)
	}
}

// TestECMPSeedsDecorrelateSwitches: two switches that pick among 4
// uplinks by flow_hash choose alike for every flow when they share a
// seed (a fat tree's aggregation switch would reach one core in k/2 of
// those its edge switch's choice allows: polarisation), and independently
// with seeds of their own: every pair of choices occurs, near its 1/16
// share; each flow still keeps its uplink at a seeded switch.
func TestECMPSeedsDecorrelateSwitches(t *testing.T) {
	seeded := func(seed uint64) *Pipeline {
		c := ecmpContents(false)
		c[p4.TableLoadBalance] = TableContents{Default: &ActionCall{ID: p4.ActionFlowHash, Params: [MaxParams]uint64{seed}}}
		return installed(t, c)
	}
	port := func(p *Pipeline, sport uint16) uint16 {
		var v Verdict
		p.Ingress(udpFrame(0x0a000107, sport), 1, &v)
		if v.Drop || v.EgressPort < 5 || v.EgressPort > 8 {
			t.Fatalf("sport %d: verdict %+v, want an uplink 5..8", sport, v)
		}
		return v.EgressPort
	}
	const flows = 1600
	for _, tt := range []struct {
		name  string
		a, b  uint64
		polar bool
	}{
		{"one seed", 0, 0, true},
		{"same seed", 0x9e3779b1, 0x9e3779b1, true},
		{"own seeds", 0x9e3779b1, 0x85ebca6b, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := seeded(tt.a), seeded(tt.b)
			var pairs [4][4]int
			for sport := range uint16(flows) {
				pa, pb := port(a, 0xc000+sport), port(b, 0xc000+sport)
				if again := port(b, 0xc000+sport); again != pb {
					t.Fatalf("sport %d: port %d then %d at one switch", sport, pb, again)
				}
				pairs[pa-5][pb-5]++
			}
			same := pairs[0][0] + pairs[1][1] + pairs[2][2] + pairs[3][3]
			if tt.polar {
				if same != flows {
					t.Errorf("%d of %d flows chose alike at two switches with one seed, want all: %v", same, flows, pairs)
				}
				return
			}
			// 100 flows a pair expected; 50..150 is over 5 sigma.
			for i := range pairs {
				for j, n := range pairs[i] {
					if n < 50 || n > 150 {
						t.Errorf("uplinks %d then %d for %d of %d flows, want near %d: %v", i+5, j+5, n, flows, flows/16, pairs)
					}
				}
			}
		})
	}
}

// TestShareGroups: groups of the same members share one copy, in the
// order given, and a group of other members or order gets its own.
func TestShareGroups(t *testing.T) {
	call := func(port uint64) ActionCall {
		return ActionCall{ID: p4.ActionSetEgress, Params: [MaxParams]uint64{port}}
	}
	a := []ActionCall{call(5), call(6)}
	in := [][]ActionCall{a, {call(5), call(6)}, {call(6), call(5)}, {call(5)}, a}
	out := shareGroups(in)
	if len(out) != len(in) {
		t.Fatalf("%d groups out of %d", len(out), len(in))
	}
	for i := range in {
		if !slices.Equal(out[i], in[i]) {
			t.Errorf("group %d = %v, want %v", i, out[i], in[i])
		}
	}
	same := func(x, y []ActionCall) bool { return &x[0] == &y[0] }
	if !same(out[0], out[1]) || !same(out[0], out[4]) {
		t.Error("groups of the same members do not share a copy")
	}
	if same(out[0], out[2]) || same(out[0], out[3]) || same(out[0], a) {
		t.Error("groups of other members, or the caller's slice, share the copy")
	}
}
