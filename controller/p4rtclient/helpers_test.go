package p4rtclient

import (
	"context"
	"testing"
	"time"

	"github.com/homatb/homatb/p4/target"
)

// testSwitch is the embedded target without a dataplane on a loopback port.
type testSwitch struct {
	addr   string
	device uint64
	cancel context.CancelFunc
	ran    chan error
}

// startSwitch serves P4Runtime for device on addr ("127.0.0.1:0" for any
// port). Stopping is registered with t.Cleanup.
func startSwitch(t testing.TB, addr string, device uint64) *testSwitch {
	t.Helper()
	var sw *target.Switch
	var err error
	// A switch started on a port just released may need a moment to get it.
	for deadline := time.Now().Add(5 * time.Second); ; {
		sw, err = target.New(target.Config{DeviceID: device, Addr: addr})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("start switch on %s: %v", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &testSwitch{addr: sw.Addr(), device: device, cancel: cancel, ran: make(chan error, 1)}
	go func() { s.ran <- sw.Run(ctx) }()
	t.Cleanup(s.stop)
	return s
}

func (s *testSwitch) stop() {
	s.cancel()
	<-s.ran
	s.ran <- nil // later stops return at once
}

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dial(t testing.TB, s *testSwitch, opts ...Option) *Client {
	t.Helper()
	c, err := Dial(testContext(t), s.addr, s.device, append([]Option{WithDialTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitFor polls cond every few milliseconds until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
