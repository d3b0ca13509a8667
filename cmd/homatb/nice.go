package main

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// defaultNice is the scheduling priority switches and agents ask for. The
// emulation is faithful only while they are scheduled on time, and on a
// shared machine a build or a test run next to them stalls an agent for
// tens of ms (measured: a probe sender's send lag P99 went from 4 to 20 ms
// while other work ran); with nice -10 the kernel gives them about nine
// times the CPU share of ordinary processes when they compete.
const defaultNice = -10

// setNice sets the nice value of every thread of this process. Linux keeps
// nice per thread, and threads inherit it from the thread that creates
// them, so renicing the threads that exist early covers those the Go
// runtime starts later. The list is read twice to catch a thread created
// during the first pass.
func setNice(nice int) error {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("nice: %w", err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil {
				return fmt.Errorf("nice %d: %w (needs root or CAP_SYS_NICE for negative values)", nice, err)
			}
		}
	}
	return nil
}
