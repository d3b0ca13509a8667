package testbed

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/testbed/scenario"
)

// lag is a client whose transport could not keep the open-loop schedule:
// a P99 send lag above a millisecond and above a tenth of the mean
// interarrival time means latencies include time the RPC waited to be sent.
type lag struct {
	host           string
	p99, max, gapU float64 // µs
}

// lagOf reports whether a client fell behind, and by how much.
func lagOf(host string, c *agentpb.Counters, w *agentpb.Workload) (lag, bool) {
	if w == nil || w.GetArrivals() != scenario.ArrivalsPoisson || w.GetRateRps() <= 0 {
		return lag{}, false
	}
	l := lag{host: host, p99: c.GetLagP99Us(), max: c.GetLagMaxUs(), gapU: 1e6 / w.GetRateRps()}
	return l, l.p99 > 1000 && l.p99 > l.gapU/10
}

// lagWarning says which clients fell behind, in one line however many
// (one line per host drowned the other warnings of a busy run).
func lagWarning(ls []lag, clients int) string {
	if len(ls) == 0 {
		return ""
	}
	// h2 before h10: shorter names first, then in order.
	slices.SortFunc(ls, func(a, b lag) int {
		if len(a.host) != len(b.host) {
			return len(a.host) - len(b.host)
		}
		return strings.Compare(a.host, b.host)
	})
	if len(ls) == 1 {
		l := ls[0]
		return fmt.Sprintf("agent %s send lag P99 %.0f µs (max %.0f µs) against a mean gap of %.0f µs: the host fell behind its schedule",
			l.host, l.p99, l.max, l.gapU)
	}
	lo, hi, worst, gLo, gHi := ls[0].p99, ls[0].p99, ls[0].max, ls[0].gapU, ls[0].gapU
	var hosts []string
	for _, l := range ls {
		lo, hi, worst = min(lo, l.p99), max(hi, l.p99), max(worst, l.max)
		gLo, gHi = min(gLo, l.gapU), max(gHi, l.gapU)
		hosts = append(hosts, l.host)
	}
	gap := fmt.Sprintf("%.0f µs", gLo)
	if gHi > gLo*1.01 {
		gap = fmt.Sprintf("%.0f–%.0f µs", gLo, gHi)
	}
	return fmt.Sprintf("%d of %d clients fell behind their schedule (%s): send lag P99 %.0f–%.0f µs (max %.0f µs) against a mean gap of %s",
		len(ls), clients, strings.Join(hosts, " "), lo, hi, worst, gap)
}

// loadWarning flags a client that issued clearly fewer RPCs than its
// open-loop rate asks for over warm-up and measurement: the RPCs it was too
// late to send before it was stopped never ran, so the load the network
// carried was below the configured one.
func loadWarning(host string, c *agentpb.Counters, w *agentpb.Workload) string {
	if w == nil || w.GetArrivals() != scenario.ArrivalsPoisson || w.GetRateRps() <= 0 ||
		w.GetBurstIntervalUs() > 0 || w.GetMaxRpcs() > 0 {
		return ""
	}
	want := w.GetRateRps() * float64(w.GetDurationMs()) / 1e3
	got := float64(c.GetIssued())
	// A Poisson count varies by about its square root: flag only a
	// shortfall well beyond that, and beyond 5%.
	if want < 20 || got >= want-max(4*math.Sqrt(want), 0.05*want) {
		return ""
	}
	return fmt.Sprintf("agent %s issued %d RPCs where its configured rate (%.0f/s over %.1f s) asks for about %.0f (%.0f%%): it could not keep to the configured load",
		host, c.GetIssued(), w.GetRateRps(), float64(w.GetDurationMs())/1e3, want, 100*got/want)
}

// cpuWarning flags an experiment during which the machine was nearly
// always busy: agents and switches then competed for the vCPUs, and
// latencies include waiting to be scheduled.
func cpuWarning(busy float64) string {
	if busy <= 0.95 {
		return ""
	}
	return fmt.Sprintf("CPU saturated: the machine was %.0f%% busy during the experiment; agents and switches competed for the vCPUs", busy*100)
}

// cpuTimes is a /proc/stat sample of all CPUs, in clock ticks: busy (all
// but idle and iowait), task time (user, nice and system: what processes
// are charged), steal (taken by the hypervisor) and total.
type cpuTimes struct{ busy, tasks, steal, total uint64 }

func readCPU() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	fields := bytes.Fields(line)
	var t cpuTimes
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(string(f), 10, 64)
		t.total += v
		switch i {
		case 0, 1, 2: // user, nice, system
			t.tasks += v
		case 7:
			t.steal += v
		}
		if i != 3 && i != 4 { // idle and iowait
			t.busy += v
		}
	}
	return t
}

func cpuBusyFraction(a, b cpuTimes) float64 {
	if b.total <= a.total {
		return 0
	}
	return float64(b.busy-a.busy) / float64(b.total-a.total)
}

// load is what the machine did besides the run during an experiment.
type load struct {
	cpus    int
	root    int
	t0, t1  cpuTimes
	tree    [2]uint64 // the run's processes' ticks at start and end
	before1 float64   // 1-minute load average at the start
}

// startLoad samples the machine at an experiment's start; the run's
// processes are root and its descendants.
func startLoad(cpus, root int) *load {
	return &load{cpus: cpus, root: root, t0: readCPU(), tree: [2]uint64{treeTicks(root)}, before1: loadAverage()}
}

// end samples it again at the experiment's end.
func (l *load) end() {
	l.t1 = readCPU()
	l.tree[1] = treeTicks(l.root)
}

// steal is the fraction of the CPUs' time the hypervisor took.
func (l *load) steal() float64 {
	if l.t1.total <= l.t0.total {
		return 0
	}
	return float64(l.t1.steal-l.t0.steal) / float64(l.t1.total-l.t0.total)
}

// otherCPUs is how many CPUs, on average, processes outside the run kept
// busy: task time of the machine less that of the run's own processes (this
// process and its descendants: Mininet, switches, agents). Interrupt and
// softirq time, mostly the run's packets, is left out of both.
func (l *load) otherCPUs() float64 {
	if l.t1.total <= l.t0.total || l.cpus == 0 {
		return 0
	}
	tasks := float64(l.t1.tasks - l.t0.tasks)
	mine := float64(l.tree[1]) - float64(l.tree[0])
	wall := float64(l.t1.total-l.t0.total) / float64(l.cpus) // ticks of one CPU
	return max(tasks-mine, 0) / wall
}

// loadWarning says when processes outside the run kept at least a quarter
// of a CPU busy: the run then measured the machine's other work too.
func (l *load) warning() string {
	other := l.otherCPUs()
	if other < 0.25 {
		return ""
	}
	return fmt.Sprintf("other processes kept %.2f vCPUs busy during the experiment (1-minute load average %.2f at its start): the run competed with them for the CPUs", other, l.before1)
}

// loadAverage is the 1-minute load average, 0 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(string(f[0]), 64)
	return v
}

// treeTicks sums the CPU ticks (user and system, with those of reaped
// children) of process root and all its descendants.
func treeTicks(root int) uint64 {
	type proc struct {
		ppid  int
		ticks uint64
	}
	procs := map[int]proc{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue // the process exited
		}
		// The command name is in parentheses and may hold spaces.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 15 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		ppid, _ := strconv.Atoi(string(f[1]))
		var ticks uint64
		for _, k := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
			v, _ := strconv.ParseUint(string(f[k]), 10, 64)
			ticks += v
		}
		procs[pid] = proc{ppid, ticks}
	}
	var sum uint64
	for pid, p := range procs {
		for q, n := pid, 0; q > 1 && n < 64; q, n = procs[q].ppid, n+1 {
			if q == root {
				sum += p.ticks
				break
			}
		}
	}
	return sum
}
