package testbed

import (
	"bytes"
	"os"
	"strconv"
)

// cpuTimes is a /proc/stat sample: busy and total jiffies of all CPUs.
type cpuTimes struct{ busy, total uint64 }

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
