package dataplane

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestFaultDirections checks that the loss rules apply to the frames of
// the fault's direction only, and that a down link drops both ways
// whatever the rules, until its time is up.
func TestFaultDirections(t *testing.T) {
	tests := []struct {
		name            string
		f               Fault
		downUntil, now  int64
		egress, ingress bool // dropped
	}{
		{"egress by default", Fault{DropProb: 1}, 0, 10, true, false},
		{"ingress", Fault{DropProb: 1, Direction: Ingress}, 0, 10, false, true},
		{"both", Fault{DropProb: 1, Direction: Both}, 0, 10, true, true},
		{"every 1st, ingress", Fault{EveryN: 1, Direction: Ingress}, 0, 10, false, true},
		{"down, no loss", Fault{}, 100, 50, true, true},
		{"down ends", Fault{}, 100, 100, false, false},
		{"down, ingress loss", Fault{DropProb: 1, Direction: Ingress}, 100, 99, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fi := newFaultInjector(3, tc.f)
			fi.setDown(tc.downUntil)
			eg, in := fi.dropEgress(tc.now), fi.dropIngress(tc.now)
			if eg != tc.egress || in != tc.ingress {
				t.Errorf("dropped egress %v ingress %v, want %v %v", eg, in, tc.egress, tc.ingress)
			}
			want := uint64(0)
			for _, d := range []bool{tc.egress, tc.ingress} {
				if d {
					want++
				}
			}
			if got := fi.drops.Load(); got != want {
				t.Errorf("fault drops %d, want %d", got, want)
			}
		})
	}
	if err := (Fault{Direction: Both + 1}).check(); err == nil {
		t.Error("an unknown direction accepted")
	}
	for _, s := range []string{"egress", "ingress", "both"} {
		if d, err := ParseDirection(s); err != nil || d.String() != s {
			t.Errorf("ParseDirection(%q) = %v, %v", s, d, err)
		}
	}
	if _, err := ParseDirection("up"); err == nil {
		t.Error(`ParseDirection("up") accepted`)
	}
}

// TestIngressFaultAndLinkDown sends frames through a running dataplane:
// ingress loss on port 2 drops what port 2 receives and leaves what it
// sends; a down window drops what port 2 sends and ends by itself.
func TestIngressFaultAndLinkDown(t *testing.T) {
	r := startRig(t, func(c *Config) { c.Faults = map[uint16]Fault{2: {DropProb: 1, Direction: Ingress}} })
	faultDrops := func() uint64 { return r.d.Stats().Ports[1].FaultDrops }
	waitDrops := func(n uint64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for faultDrops() < n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if got := faultDrops(); got != n {
			t.Fatalf("fault drops %d, want %d", got, n)
		}
	}
	for i := range 5 {
		r.ports[2].in <- makeFrame(100, 1, 0, uint32(i)) // from port 2's host: lost
	}
	waitDrops(5)
	r.ports[1].in <- makeFrame(100, 2, 0, 10) // towards port 2's host: passes
	if f := r.recvN(t, 2, 1)[0]; frameSeq(f) != 10 {
		t.Errorf("got frame %d, want 10", frameSeq(f))
	}

	if err := r.d.SetFault(2, Fault{}); err != nil {
		t.Fatal(err)
	}
	const window = 300 * time.Millisecond
	if err := r.d.SetLinkDown(2, window); err != nil {
		t.Fatal(err)
	}
	downAt := time.Now()
	if left, err := r.d.LinkDown(2); err != nil || left <= 0 || left > window {
		t.Errorf("LinkDown = %v, %v; want up to %v", left, err, window)
	}
	for i := range 3 {
		r.ports[1].in <- makeFrame(100, 2, 0, uint32(20+i))
		r.ports[2].in <- makeFrame(100, 1, 0, uint32(30+i))
	}
	waitDrops(11)
	if time.Since(downAt) >= window {
		t.Skip("the machine was too slow to send inside the window")
	}
	time.Sleep(time.Until(downAt.Add(window)))
	r.ports[1].in <- makeFrame(100, 2, 0, 40)
	if f := r.recvN(t, 2, 1)[0]; frameSeq(f) != 40 {
		t.Errorf("after the window got frame %d, want 40", frameSeq(f))
	}
	if left, _ := r.d.LinkDown(2); left != 0 {
		t.Errorf("link still down for %v after its window", left)
	}
	if err := r.d.SetLinkDown(9, time.Second); err == nil {
		t.Error("link down on a missing port accepted")
	}
}

// TestAdminFaultDirectionAndDown posts direction and down_for settings.
func TestAdminFaultDirectionAndDown(t *testing.T) {
	r := startRig(t, nil)
	h := r.d.AdminHandler()
	tests := []struct {
		body    string
		code    int
		wantDir Direction
		down    bool
	}{
		{`{"port": 2, "drop_prob": 0.1, "direction": "both"}`, 200, Both, false},
		{`{"port": 2, "direction": "ingress"}`, 200, Ingress, false},
		{`{"port": 2, "direction": "sideways"}`, 400, Ingress, false},
		{`{"port": 2, "down_for": "10s"}`, 200, Ingress, true},
		{`{"port": 2, "down_for": "-1s"}`, 400, Ingress, true},
		{`{"port": 2, "down_for": "soon"}`, 400, Ingress, true},
		{`{"port": 2, "down_for": "0s", "direction": "egress"}`, 200, Egress, false},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/faults", strings.NewReader(tc.body)))
		if rec.Code != tc.code {
			t.Errorf("POST %s: %d %s, want %d", tc.body, rec.Code, rec.Body, tc.code)
		}
		f, _ := r.d.Fault(2)
		left, _ := r.d.LinkDown(2)
		if f.Direction != tc.wantDir || (left > 0) != tc.down {
			t.Errorf("after %s: direction %v, down for %v; want %v, down %v", tc.body, f.Direction, left, tc.wantDir, tc.down)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/faults", nil))
	if !strings.Contains(rec.Body.String(), `"direction": "egress"`) || !strings.Contains(rec.Body.String(), `"down_for": "0s"`) {
		t.Errorf("GET /faults: %s", rec.Body)
	}
}
