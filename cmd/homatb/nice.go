package main

import (
	"log/slog"
	"time"

	"github.com/homatb/homatb/internal/schedprio"
)

// defaultNice is the scheduling priority switches and agents ask for when
// not real-time. The emulation is faithful only while they are scheduled
// on time, and on a shared machine a build or a test run next to them
// stalls an agent for tens of ms (measured: a probe sender's send lag P99
// went from 4 to 20 ms while other work ran); with nice -10 the kernel
// gives them about nine times the CPU share of ordinary processes.
const defaultNice = -10

// defaultSlice is the EEVDF time slice switches and agents ask for (0:
// the kernel's, 1.4 ms here).
const defaultSlice = 0

// applyScheduling gives this process's threads SCHED_FIFO at rtPrio, or,
// when rtPrio is 0 or the kernel refuses (no CAP_SYS_NICE, or a cgroup
// without a real-time budget), ordinary scheduling at the nice value. A
// process started by a real-time parent inherits its policy, hence the
// explicit return to ordinary scheduling. The kernel's real-time
// throttling (sched_rt_runtime_us, 95% by default) keeps a runaway thread
// from starving the rest of the machine. Under ordinary scheduling a
// non-zero slice asks for that EEVDF time slice (schedprio.Slice).
func applyScheduling(rtPrio, nice int, slice time.Duration, log *slog.Logger) {
	if rtPrio > 0 {
		err := schedprio.Realtime(rtPrio)
		if err == nil {
			return
		}
		log.Warn("real-time scheduling refused; using nice instead", "priority", rtPrio, "err", err)
	}
	if err := schedprio.Normal(); err != nil {
		log.Warn("ordinary scheduling refused", "err", err)
	}
	if nice != 0 {
		if err := schedprio.Nice(nice); err != nil {
			// Not fatal: the run's fidelity checks report what it costs.
			log.Warn("scheduling priority unchanged", "err", err)
		}
	}
	if slice != 0 {
		if err := schedprio.Slice(slice); err != nil {
			log.Warn("time slice unchanged", "err", err)
		}
	}
}
