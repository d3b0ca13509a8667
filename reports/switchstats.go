package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// switchFile is the switch statistics format of docs/formats.md.
type switchFile struct {
	DeviceID uint64 `json:"device_id"`
	Ports    []struct {
		Port       int     `json:"port"`
		Iface      string  `json:"iface"`
		FaultDrops int64   `json:"fault_drops"`
		RateBps    float64 `json:"rate_bps"`
		Queues     []struct {
			Queue     int     `json:"queue"`
			DropPkts  int64   `json:"drop_pkts"`
			PeakPkts  int64   `json:"peak_pkts"`
			PeakBytes int64   `json:"peak_bytes"`
			DelayMax  float64 `json:"delay_max_us"`
		} `json:"queues"`
	} `json:"ports"`
}

// portKey names one switch egress port.
type portKey struct {
	sw   string
	port int
}

// readSwitchStats sums switch/<experiment>/*.json. It also returns the
// configured rate of every port, which telemetry utilisation divides by.
func readSwitchStats(dir, experiment string) (SwitchStats, map[portKey]float64, error) {
	st := SwitchStats{Switches: []string{}, DropsByQueue: []int64{}, MaxQueueBytes: []int64{},
		MaxQueuePkts: []int64{}, MaxDelayUs: []float64{}}
	rates := make(map[portKey]float64)
	files, err := filepath.Glob(filepath.Join(dir, "switch", experiment, "*.json"))
	if err != nil {
		return st, rates, fmt.Errorf("list switch statistics: %w", err)
	}
	slices.Sort(files)
	grow := func(s []int64, n int) []int64 {
		for len(s) < n {
			s = append(s, 0)
		}
		return s
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return st, rates, fmt.Errorf("read switch statistics: %w", err)
		}
		var sf switchFile
		if err := json.Unmarshal(b, &sf); err != nil {
			return st, rates, fmt.Errorf("parse %s: %w", f, err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		st.Present = true
		st.Switches = append(st.Switches, name)
		for _, p := range sf.Ports {
			st.FaultDrops += p.FaultDrops
			if p.RateBps > 0 {
				rates[portKey{name, p.Port}] = p.RateBps
			}
			for _, q := range p.Queues {
				if q.Queue < 0 || q.Queue > 63 {
					return st, rates, fmt.Errorf("%s: port %d: queue %d out of range", f, p.Port, q.Queue)
				}
				n := q.Queue + 1
				st.DropsByQueue = grow(st.DropsByQueue, n)
				st.MaxQueueBytes = grow(st.MaxQueueBytes, n)
				st.MaxQueuePkts = grow(st.MaxQueuePkts, n)
				for len(st.MaxDelayUs) < n {
					st.MaxDelayUs = append(st.MaxDelayUs, 0)
				}
				st.Drops += q.DropPkts
				st.DropsByQueue[q.Queue] += q.DropPkts
				st.MaxQueueBytes[q.Queue] = max(st.MaxQueueBytes[q.Queue], q.PeakBytes)
				st.MaxQueuePkts[q.Queue] = max(st.MaxQueuePkts[q.Queue], q.PeakPkts)
				st.MaxDelayUs[q.Queue] = max(st.MaxDelayUs[q.Queue], q.DelayMax)
			}
		}
	}
	return st, rates, nil
}

// readTransportCounters merges agents/<experiment>/*.json files, each a JSON
// object with a "transport" map of counters (the agent API's Counters).
// Absent files are not an error: most runs do not record them.
func readTransportCounters(dir, experiment string) (map[string]uint64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "agents", experiment, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list agent counters: %w", err)
	}
	var sum map[string]uint64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read agent counters: %w", err)
		}
		var c struct {
			Transport map[string]uint64 `json:"transport"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("parse %s: %w", f, err)
		}
		if sum == nil && len(c.Transport) > 0 {
			sum = make(map[string]uint64)
		}
		MergeCounters(sum, c.Transport)
	}
	return sum, nil
}

// IsGaugeCounter reports whether a transport counter (named with its
// transport prefix, such as homa_active_max) holds a level, not a count.
// Over hosts a gauge takes the maximum, since a sum of peaks means nothing.
func IsGaugeCounter(name string) bool {
	_, base, _ := strings.Cut(name, "_")
	switch base {
	case "active_messages", "active_max", "incoming_bytes", "cutoffs_version":
		return true
	}
	return false
}

// MergeCounters adds the transport counters src into dst: counts are
// summed, gauges keep the larger value.
func MergeCounters(dst, src map[string]uint64) {
	for k, v := range src {
		if IsGaugeCounter(k) {
			dst[k] = max(dst[k], v)
		} else {
			dst[k] += v
		}
	}
}
