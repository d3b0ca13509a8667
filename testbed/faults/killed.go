package faults

import (
	"sync"
	"time"
)

// Killed names the processes fault injection killed on purpose, so that
// their exit does not end the run; each name's channel is closed when the
// runner reports the exit.
type Killed struct {
	mu    sync.Mutex
	names map[string]chan struct{}
}

// Add notes that name is being killed on purpose.
func (k *Killed) Add(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.names == nil {
		k.names = map[string]chan struct{}{}
	}
	k.names[name] = make(chan struct{})
}

// Forget drops name: its next exit is no longer expected.
func (k *Killed) Forget(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.names, name)
}

// Expected reports whether name's exit was caused on purpose, and notes
// that it happened.
func (k *Killed) Expected(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	ch, ok := k.names[name]
	if ok {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
	return ok
}

// WaitExit waits until name's exit is reported, at most timeout.
func (k *Killed) WaitExit(name string, timeout time.Duration) bool {
	k.mu.Lock()
	ch := k.names[name]
	k.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	case <-time.After(timeout):
		return false
	}
}
