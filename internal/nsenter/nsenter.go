// Package nsenter runs a function inside a network namespace.
package nsenter

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn on an OS thread that has entered the network namespace at
// path (such as /proc/PID/ns/net or /var/run/netns/NAME) and returns its
// error. What fn makes there (sockets, attachments by interface index)
// stays in that namespace. The thread is discarded afterwards rather than
// moved back: its goroutine ends locked to it, which ends the thread, so
// no other goroutine ever runs in the namespace by accident.
func Do(path string, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		ns, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- fmt.Errorf("namespace %s: %w", path, err)
			return
		}
		defer unix.Close(ns)
		if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
			ch <- fmt.Errorf("enter namespace %s: %w", path, err)
			return
		}
		ch <- fn()
	}()
	return <-ch
}
