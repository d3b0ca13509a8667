package testbed

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

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
