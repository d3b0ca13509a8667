// Package schedprio sets the scheduling of every thread of the calling
// process: real-time (SCHED_FIFO), ordinary, or a nice value. Linux keeps
// these per thread and a new thread inherits them from the one that
// creates it, so setting the threads that exist covers those the Go
// runtime starts later; children inherit them too.
package schedprio

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Realtime moves every thread to SCHED_FIFO at prio (1-99).
func Realtime(prio int) error {
	if prio < 1 || prio > 99 {
		return fmt.Errorf("real-time priority %d: expected 1-99", prio)
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	return eachThread(func(tid int) error {
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
			return fmt.Errorf("SCHED_FIFO %d: %w (needs root or CAP_SYS_NICE)", prio, err)
		}
		return nil
	})
}

// Normal moves every thread back to ordinary scheduling (SCHED_OTHER),
// keeping its nice value.
func Normal() error {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
	return eachThread(func(tid int) error {
		cur, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			return fmt.Errorf("sched_getattr: %w", err)
		}
		if cur.Policy == unix.SCHED_NORMAL {
			return nil
		}
		attr.Nice = cur.Nice
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
			return fmt.Errorf("SCHED_OTHER: %w", err)
		}
		return nil
	})
}

// Nice sets every thread's nice value (negative needs root or
// CAP_SYS_NICE).
func Nice(nice int) error {
	return eachThread(func(tid int) error {
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil {
			return fmt.Errorf("nice %d: %w (needs root or CAP_SYS_NICE for negative values)", nice, err)
		}
		return nil
	})
}

// MinSlice and MaxSlice bound the time slice Linux (6.12 and later) lets
// an ordinary thread ask for.
const (
	MinSlice = 100 * time.Microsecond
	MaxSlice = 100 * time.Millisecond
)

// Slice asks the kernel's EEVDF scheduler for a time slice of d for every
// thread that is under ordinary scheduling, keeping its nice value. A
// thread with a shorter slice gets an earlier virtual deadline, so when it
// wakes (a packet, a timer) it preempts a busy thread with the default
// slice instead of waiting for that slice to end. The share of CPU is
// still set by the nice value. Kernels before 6.12 accept the call and
// ignore it.
func Slice(d time.Duration) error {
	if d < MinSlice || d > MaxSlice {
		return fmt.Errorf("time slice %v: expected %v to %v", d, MinSlice, MaxSlice)
	}
	return eachThread(func(tid int) error {
		cur, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			return fmt.Errorf("sched_getattr: %w", err)
		}
		if cur.Policy != unix.SCHED_NORMAL {
			return nil
		}
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: cur.Nice, Runtime: uint64(d)}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
			return fmt.Errorf("time slice %v: %w", d, err)
		}
		return nil
	})
}

// eachThread calls fn once with every thread of this process. It reads
// the list again until two passes in a row find no new thread: a thread
// that fn had not yet reached may start another, which inherits its old
// settings, and a thread being started can be missing from the list for a
// moment after its settings were copied (TestRealtimeAndBack saw one in
// CI), so the last pass waits a little first.
func eachThread(fn func(tid int) error) error {
	seen := map[int]bool{}
	quiet := 0 // passes in a row that found no new thread
	for range 20 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("threads: %w", err)
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || seen[tid] {
				continue
			}
			seen[tid], fresh = true, true
			if err := fn(tid); err != nil {
				return err
			}
		}
		switch {
		case fresh:
			quiet = 0
		case quiet == 1:
			return nil
		default:
			quiet++
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}
