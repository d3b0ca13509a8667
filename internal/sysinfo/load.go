package sysinfo

import (
	"bytes"
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

// Load is what the machine did over a span (an experiment): how busy its
// CPUs were, and how much of that was processes outside the measured
// ones.
type Load struct {
	cpus    int
	root    int
	t0, t1  cpuTimes
	tree    [2]uint64 // the measured processes' ticks at start and end
	before1 float64   // 1-minute load average at the start
}

// StartLoad samples the machine at the span's start; the measured
// processes are root and its descendants, on cpus CPUs.
func StartLoad(cpus, root int) *Load {
	return &Load{cpus: cpus, root: root, t0: readCPU(), tree: [2]uint64{treeTicks(root)}, before1: loadAverage()}
}

// End samples it again at the span's end.
func (l *Load) End() {
	l.t1 = readCPU()
	l.tree[1] = treeTicks(l.root)
}

// Busy is the fraction of the CPUs' time spent busy (all but idle and
// iowait).
func (l *Load) Busy() float64 {
	if l.t1.total <= l.t0.total {
		return 0
	}
	return float64(l.t1.busy-l.t0.busy) / float64(l.t1.total-l.t0.total)
}

// LoadAverage1 is the 1-minute load average at the start.
func (l *Load) LoadAverage1() float64 { return l.before1 }

// Steal is the fraction of the CPUs' time the hypervisor took.
func (l *Load) Steal() float64 {
	if l.t1.total <= l.t0.total {
		return 0
	}
	return float64(l.t1.steal-l.t0.steal) / float64(l.t1.total-l.t0.total)
}

// OtherCPUs is how many CPUs, on average, processes outside the measured
// ones kept busy: task time of the machine less that of root's tree (for
// a run: this process and its descendants, Mininet, switches, agents).
// Interrupt and softirq time, mostly the run's packets, is left out of
// both.
func (l *Load) OtherCPUs() float64 {
	if l.t1.total <= l.t0.total || l.cpus == 0 {
		return 0
	}
	tasks := float64(l.t1.tasks - l.t0.tasks)
	mine := float64(l.tree[1]) - float64(l.tree[0])
	wall := float64(l.t1.total-l.t0.total) / float64(l.cpus) // ticks of one CPU
	return max(tasks-mine, 0) / wall
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
