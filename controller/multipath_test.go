package controller

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/p4/pipeline"
	"github.com/homatb/homatb/p4/target/targettest"
)

// leafSpine is two leaves (l1, l2) and two spines (s1, s2), leaf port 1 to
// a host, ports 3 and 4 to spines s1 and s2; spine port 1 to l1, 2 to l2.
func leafSpine(t *testing.T) (*Topology, map[string]*targettest.Switch) {
	t.Helper()
	sws := map[string]*targettest.Switch{}
	topo := &Topology{}
	for i, name := range []string{"l1", "l2", "s1", "s2"} {
		sw := targettest.Start(t, "127.0.0.1:0", uint64(i+1))
		sws[name] = sw
		topo.Switches = append(topo.Switches, Switch{Name: name, DeviceID: sw.DeviceID(), Address: sw.Addr()})
	}
	for i, leaf := range []string{"l1", "l2"} {
		topo.Hosts = append(topo.Hosts, Host{Name: fmt.Sprintf("h%d", i+1), IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}),
			MAC: MAC{2, 0, 0, 0, 0, byte(i + 1)}, Switch: leaf, Port: 1})
		for j, spine := range []string{"s1", "s2"} {
			topo.Links = append(topo.Links, Link{A: leaf, APort: 3 + j, B: spine, BPort: i + 1})
		}
	}
	return topo, sws
}

// udpTo is a UDP frame to dst from source port sport.
func udpTo(dst netip.Addr, sport uint16) []byte {
	f := ipv4Frame(dst, 0, 40)
	binary.BigEndian.PutUint16(f[34:], sport)
	binary.BigEndian.PutUint16(f[36:], 80)
	return f
}

// uplinks counts the egress ports of n frames from h1 to h2 through l1:
// n flows (sport varies) or one flow (sport fixed).
func uplinks(pl *pipeline.Pipeline, n int, oneFlow bool) map[uint16]int {
	out := map[uint16]int{}
	for i := range n {
		sport := uint16(1000 + i)
		if oneFlow {
			sport = 1000
		}
		var v pipeline.Verdict
		pl.Ingress(udpTo(netip.MustParseAddr("10.0.0.2"), sport), 1, &v)
		if v.Drop {
			out[pipeline.DropPort]++
		} else {
			out[v.EgressPort]++
		}
	}
	return out
}

func TestLeafSpineSpreadsOverBothSpines(t *testing.T) {
	for _, tc := range []struct {
		lb      string
		oneFlow bool
	}{{LoadBalanceECMP, false}, {LoadBalanceSpray, true}, {"", true}} {
		t.Run("lb="+tc.lb, func(t *testing.T) {
			topo, sws := leafSpine(t)
			f := programmed(t, topo, Policy{LoadBalancing: tc.lb})
			got := uplinks(sws["l1"].Pipeline(), 200, tc.oneFlow)
			if got[3] < 60 || got[4] < 60 || got[3]+got[4] != 200 {
				t.Errorf("200 frames h1->h2 on l1's uplinks 3, 4: %v", got)
			}
			if tc.lb == LoadBalanceECMP {
				if one := uplinks(sws["l1"].Pipeline(), 50, true); len(one) != 1 {
					t.Errorf("ECMP split one flow over %v", one)
				}
			}
			// The spines have one path to each leaf: plain routes, no groups.
			members, groups, err := f.Client("s1").ReadProfiles(testContext(t))
			if err != nil || len(members)+len(groups) != 0 {
				t.Errorf("spine s1 holds members %v groups %v (%v)", members, groups, err)
			}
			if err := f.Verify(testContext(t), Policy{LoadBalancing: tc.lb}); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestLinkDownMovesFlowsToTheOtherSpine(t *testing.T) {
	topo, sws := leafSpine(t)
	f := programmed(t, topo, Policy{LoadBalancing: LoadBalanceECMP})
	ctx := testContext(t)
	// l2-s1 down: l1 must stop sending h2's traffic to s1 (port 3), and l2
	// its own uplink to s1 (port 3) for h1.
	if err := f.SetLinkDown(ctx, "l2", "s1", true); err != nil {
		t.Fatal(err)
	}
	if got := uplinks(sws["l1"].Pipeline(), 100, false); got[4] != 100 {
		t.Errorf("l2-s1 down: l1's flows to h2 went %v, want all on port 4 (s2)", got)
	}
	var v pipeline.Verdict
	sws["l2"].Pipeline().Ingress(udpTo(netip.MustParseAddr("10.0.0.1"), 7), 1, &v)
	if v.EgressPort != 4 {
		t.Errorf("l2-s1 down: l2 sent h1's flow to port %d, want 4", v.EgressPort)
	}
	if err := f.Verify(ctx, Policy{LoadBalancing: LoadBalanceECMP}); err != nil {
		t.Errorf("Verify with the link down: %v", err)
	}
	if err := f.SetLinkDown(ctx, "l2", "s1", false); err != nil {
		t.Fatal(err)
	}
	if got := uplinks(sws["l1"].Pipeline(), 100, false); got[3] == 0 || got[4] == 0 {
		t.Errorf("l2-s1 up again: l1's flows to h2 went %v, want both spines", got)
	}
	if err := f.SetLinkDown(ctx, "l1", "l2", true); err == nil {
		t.Error("SetLinkDown of two switches without a link succeeded")
	}
	_, groups, err := f.Client("l1").ReadProfiles(ctx)
	if err != nil || len(groups) != 1 || fmt.Sprint(groups[0].Members) != "[3 4]" {
		t.Errorf("l1's groups after the link came back: %v (%v)", groups, err)
	}
}

func TestPolicyRejectsUnknownLoadBalancing(t *testing.T) {
	if err := (Policy{LoadBalancing: "flowlet"}).Validate(); err == nil {
		t.Error("load balancing \"flowlet\" accepted")
	}
}

// TestRepushRestoresGroups restarts a leaf: the client pushes its members
// and groups back before the routes that name them, and flows spread again.
func TestRepushRestoresGroups(t *testing.T) {
	topo, sws := leafSpine(t)
	f := programmed(t, topo, Policy{LoadBalancing: LoadBalanceSpray})
	c := f.Client("l1")
	if err := sws["l1"].Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the client to notice the stream broke", func() bool { return !c.IsPrimary() })
	restarted := targettest.Start(t, sws["l1"].Addr(), sws["l1"].DeviceID())
	waitFor(t, 10*time.Second, "the re-push", func() bool { return c.Stats().Repushes == 1 })
	ctx := testContext(t)
	if err := c.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Verify(ctx, Policy{LoadBalancing: LoadBalanceSpray}); err != nil {
		t.Fatalf("Verify after the re-push: %v", err)
	}
	if got := uplinks(restarted.Pipeline(), 100, true); got[3] == 0 || got[4] == 0 {
		t.Errorf("restarted l1 sprays one flow over %v, want ports 3 and 4", got)
	}
}
