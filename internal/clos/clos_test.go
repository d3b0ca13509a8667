package clos

import (
	"fmt"
	"testing"
)

func TestFatTreeShape(t *testing.T) {
	for _, tc := range []struct {
		k, perEdge                              int
		hosts, edge, agg, core, links, maxPorts int
	}{
		{4, 2, 16, 8, 8, 4, 32, 4},
		{16, 8, 1024, 128, 128, 64, 2048, 16},
		{32, 16, 8192, 512, 512, 256, 16384, 32},
		{4, 6, 48, 8, 8, 4, 32, 8}, // oversubscribed 3:1
	} {
		t.Run(fmt.Sprintf("k=%d/%d", tc.k, tc.perEdge), func(t *testing.T) {
			l, err := FatTree(tc.k, tc.perEdge)
			if err != nil {
				t.Fatal(err)
			}
			e, a, c := l.Count()
			if len(l.Hosts) != tc.hosts || e != tc.edge || a != tc.agg || c != tc.core || len(l.Links) != tc.links || l.MaxPorts() != tc.maxPorts {
				t.Errorf("hosts %d, switches %d/%d/%d, links %d, ports %d; want %d, %d/%d/%d, %d, %d",
					len(l.Hosts), e, a, c, len(l.Links), l.MaxPorts(), tc.hosts, tc.edge, tc.agg, tc.core, tc.links, tc.maxPorts)
			}
			checkPorts(t, l)
		})
	}
}

// checkPorts fails when a switch port is used twice or a device id repeats.
func checkPorts(t *testing.T, l *Layout) {
	t.Helper()
	used := map[string]bool{}
	use := func(sw string, port int) {
		key := fmt.Sprintf("%s:%d", sw, port)
		if used[key] {
			t.Errorf("port %s used twice", key)
		}
		used[key] = true
	}
	for _, h := range l.Hosts {
		use(h.Switch, h.Port)
	}
	for _, k := range l.Links {
		use(k.A, k.APort)
		use(k.B, k.BPort)
	}
	ids := map[uint64]string{}
	for _, s := range l.Switches {
		if o, dup := ids[s.DeviceID]; dup {
			t.Errorf("device id %d of %s and %s", s.DeviceID, o, s.Name)
		}
		ids[s.DeviceID] = s.Name
	}
}

// TestFatTreePaths: k/2 shortest paths between two edges of a pod (one per
// aggregation switch), (k/2)² between pods (one per core), each of the
// length the tiers give.
func TestFatTreePaths(t *testing.T) {
	l, err := FatTree(8, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, to   string
		paths, len int
	}{
		{"e1", "e1", 1, 1},
		{"e1", "e2", 4, 3},
		{"e1", "e5", 16, 5},
		{"e1", "e32", 16, 5},
		{"a1", "e2", 1, 2},
	} {
		ps := l.Paths(tc.from, tc.to)
		if len(ps) != tc.paths {
			t.Errorf("%s to %s: %d paths, want %d", tc.from, tc.to, len(ps), tc.paths)
		}
		for _, p := range ps {
			if len(p) != tc.len || p[0] != tc.from || p[len(p)-1] != tc.to {
				t.Errorf("%s to %s: path %v, want %d switches", tc.from, tc.to, p, tc.len)
			}
		}
	}
}

func TestRailShape(t *testing.T) {
	l, err := Rail(4, 8, 2, 4) // 2 groups of 8 servers with 4 NICs, 4 spines
	if err != nil {
		t.Fatal(err)
	}
	e, a, _ := l.Count()
	if len(l.Hosts) != 64 || e != 8 || a != 4 || len(l.Links) != 32 {
		t.Fatalf("hosts %d, leaves %d, spines %d, links %d; want 64, 8, 4, 32", len(l.Hosts), e, a, len(l.Links))
	}
	checkPorts(t, l)
	// A server's NICs are consecutive hosts on the rails' leaves; NIC 1 of
	// server 2 shares server 1's rail-1 leaf; group 2 has leaves of its own.
	for i, want := range map[int]string{0: "l1", 1: "l2", 3: "l4", 4: "l1", 32: "l5", 63: "l8"} {
		if got := l.Hosts[i].Switch; got != want {
			t.Errorf("host h%d on %s, want %s", i+1, got, want)
		}
	}
	if ps := l.Paths("l1", "l5"); len(ps) != 4 {
		t.Errorf("l1 to l5: %d paths, want one per spine", len(ps))
	}
}

func TestRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"odd k", func() error { _, err := FatTree(5, 2); return err }()},
		{"no hosts", func() error { _, err := FatTree(4, 0); return err }()},
		{"no rails", func() error { _, err := Rail(0, 4, 1, 2); return err }()},
		{"no spines", func() error { _, err := Rail(2, 4, 1, 0); return err }()},
	} {
		if tc.err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
