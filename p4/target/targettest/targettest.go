// Package targettest runs an embedded switch without a dataplane for tests
// of P4Runtime clients, which hand frames to its pipeline themselves.
package targettest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/homatb/homatb/p4/target"
)

// Switch is a running embedded switch.
type Switch struct {
	*target.Switch
	device   uint64
	cancel   context.CancelFunc
	ran      chan error
	stopOnce sync.Once
}

// Start serves P4Runtime for device on addr ("127.0.0.1:0" for any port)
// until the test ends or Stop. A switch restarted on the address of one
// just stopped may wait for the port, up to 5 s.
func Start(t testing.TB, addr string, device uint64) *Switch {
	t.Helper()
	var sw *target.Switch
	var err error
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
	s := &Switch{Switch: sw, device: device, cancel: cancel, ran: make(chan error, 1)}
	go func() { s.ran <- sw.Run(ctx) }()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("switch on %s: %v", s.Addr(), err)
		}
	})
	return s
}

// DeviceID is the switch's P4Runtime device_id.
func (s *Switch) DeviceID() uint64 { return s.device }

// Stop ends the switch (as a crash would, for its clients) and returns what
// Run returned. Later calls return nil.
func (s *Switch) Stop() error {
	var err error
	s.stopOnce.Do(func() {
		s.cancel()
		err = <-s.ran
	})
	return err
}
