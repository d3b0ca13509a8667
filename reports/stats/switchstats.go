package stats

import (
	"fmt"
	"slices"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
)

// portKey names one switch egress port.
type portKey struct {
	sw   string
	port int
}

// ReadSwitchStats sums the experiment's switch statistics
// (rundir.ReadSwitchStats). It also returns the configured rate of every
// port, which telemetry utilisation divides by.
func ReadSwitchStats(dir, experiment string) (SwitchStats, map[portKey]float64, error) {
	st := SwitchStats{Switches: []string{}, DropsByQueue: []int64{}, MaxQueueBytes: []int64{},
		MaxQueuePkts: []int64{}, MaxDelayUs: []float64{}, FaultDropsByPort: map[string]int64{}, CEMarksByQueue: []int64{},
		LostLinkMsByPort: map[string]float64{}, DefencesByPort: map[string]DefenceCounts{}}
	rates := make(map[portKey]float64)
	files, err := rundir.ReadSwitchStats(dir, experiment)
	if err != nil {
		return st, rates, err
	}
	isSwitch := make(map[string]bool, len(files))
	for _, sf := range files {
		isSwitch[sf.Switch] = true
	}
	for _, sf := range files {
		st.Present = true
		st.Switches = append(st.Switches, sf.Switch)
		for _, p := range sf.Stats.Ports {
			st.countDrops(sf.Switch, p, isSwitch)
			st.FaultDrops += int64(p.FaultDrops)
			st.RankDrops += int64(p.RankDrops)
			st.TrimmedPkts += int64(p.TrimmedPkts)
			if d := (DefenceCounts{Remarked: int64(p.RemarkedPkts), Metered: int64(p.MeteredPkts), Spoofed: int64(p.SpoofDrops)}); d != (DefenceCounts{}) {
				st.RemarkedPkts += d.Remarked
				st.MeteredPkts += d.Metered
				st.SpoofDrops += d.Spoofed
				st.DefencesByPort[fmt.Sprintf("%s/%d", sf.Switch, p.Port)] = d
			}
			if p.LostLinkNs > 0 {
				ms := float64(p.LostLinkNs) / 1e6
				st.LostLinkMs += ms
				st.LostLinkMsByPort[fmt.Sprintf("%s/%d", sf.Switch, p.Port)] += ms
			}
			if p.FaultDrops > 0 {
				st.FaultDropsByPort[fmt.Sprintf("%s/%d", sf.Switch, p.Port)] += int64(p.FaultDrops)
			}
			if p.RateBps > 0 {
				rates[portKey{sf.Switch, int(p.Port)}] = float64(p.RateBps)
			}
			for _, q := range p.Queues {
				if q.Queue < 0 || q.Queue > 63 {
					return st, rates, fmt.Errorf("%s: port %d: queue %d out of range",
						rundir.SwitchStatsPath(dir, experiment, sf.Switch), p.Port, q.Queue)
				}
				for len(st.DropsByQueue) <= q.Queue {
					st.DropsByQueue = append(st.DropsByQueue, 0)
					st.MaxQueueBytes = append(st.MaxQueueBytes, 0)
					st.MaxQueuePkts = append(st.MaxQueuePkts, 0)
					st.MaxDelayUs = append(st.MaxDelayUs, 0)
					st.CEMarksByQueue = append(st.CEMarksByQueue, 0)
				}
				if q.PFCPausesSent+q.PFCResumesSent+q.PFCPausesRecv+q.PFCResumesRecv+q.PFCPausedNs > 0 {
					st.PFC = append(st.PFC, PFCPort{Switch: sf.Switch, Port: int(p.Port), Iface: p.Iface, Priority: q.Queue,
						PausesSent: int64(q.PFCPausesSent), ResumesSent: int64(q.PFCResumesSent),
						PausesReceived: int64(q.PFCPausesRecv), ResumesRecv: int64(q.PFCResumesRecv),
						PausedMs: float64(q.PFCPausedNs) / 1e6})
				}
				if q.DropPkts > 0 {
					name := fmt.Sprintf("%s/%d", sf.Switch, p.Port)
					if p.Iface != "" {
						name += " (" + p.Iface + ")"
					}
					st.queueDrops = append(st.queueDrops, queueDrop{port: name, queue: q.Queue, drops: int64(q.DropPkts), peak: int64(q.PeakPkts)})
				}
				st.CEMarks += int64(q.CEMarkedPkts)
				st.CEMarksByQueue[q.Queue] += int64(q.CEMarkedPkts)
				st.Drops += int64(q.DropPkts)
				st.DropsByQueue[q.Queue] += int64(q.DropPkts)
				st.MaxQueueBytes[q.Queue] = max(st.MaxQueueBytes[q.Queue], int64(q.PeakBytes))
				st.MaxQueuePkts[q.Queue] = max(st.MaxQueuePkts[q.Queue], int64(q.PeakPkts))
				st.MaxDelayUs[q.Queue] = max(st.MaxDelayUs[q.Queue], float64(q.DelayMaxUs))
			}
		}
	}
	return st, rates, nil
}

// countDrops adds port p of switch sw's queue drops to the split by what
// the port faces.
func (st *SwitchStats) countDrops(sw string, p switchstats.Port, isSwitch map[string]bool) {
	var drops int64
	for _, q := range p.Queues {
		drops += int64(q.DropPkts)
	}
	if drops == 0 {
		return
	}
	switch {
	case p.Peer == "":
	case isSwitch[p.Peer]:
		st.DropsTowardSwitches += drops
	default:
		st.DropsTowardHosts += drops
	}
	if drops > st.WorstDropPkts {
		st.WorstDropPkts = drops
		st.WorstDropPort = fmt.Sprintf("%s/%d", sw, p.Port)
		if p.Peer != "" {
			st.WorstDropPort += " toward " + p.Peer
		}
	}
}

// DropsSentence says where an experiment's switches dropped packets: at
// hosts' downlinks or on links between switches, and the port that
// dropped the most; "" without drops.
func DropsSentence(st SwitchStats) string {
	if st.Drops == 0 {
		return ""
	}
	s := fmt.Sprintf("switch drops: %d packets", st.Drops)
	switch h, w := st.DropsTowardHosts, st.DropsTowardSwitches; {
	case h > 0 && w > 0:
		s += fmt.Sprintf(", %d at hosts' downlinks and %d on links between switches", h, w)
	case h == st.Drops:
		s += ", all at hosts' downlinks"
	case w == st.Drops:
		s += ", all on links between switches"
	}
	s += fmt.Sprintf("; the most at %s (%d)", st.WorstDropPort, st.WorstDropPkts)
	if st.DropsTowardSwitches > st.DropsTowardHosts {
		s += ": the fabric, not the receivers' links, lost most (an oversubscribed tier, a link down, or paths used unevenly)"
	}
	return s
}

// lostLinkWarning says when a switch port lost more than 2% of the
// experiment's time (window, in seconds) to late scheduling: its frames
// waited for a link that was free, so the port carried less than its rate
// and its queues grew for a reason that is not the network's.
func lostLinkWarning(st SwitchStats, window float64) string {
	if window <= 0 || len(st.LostLinkMsByPort) == 0 {
		return ""
	}
	worst, ms := "", 0.0
	for p, v := range st.LostLinkMsByPort {
		if v > ms || (v == ms && p < worst) {
			worst, ms = p, v
		}
	}
	share := ms / 1e3 / window
	if share <= 0.02 {
		return ""
	}
	return fmt.Sprintf("switch port %s lost %.0f ms of link time (%.0f%% of the experiment) while frames waited: the switch was scheduled too late to keep the link busy (this machine's CPU), so the port carried less than its rate and its queues grew for that reason; %d ports lost %.0f ms in all",
		worst, ms, 100*share, len(st.LostLinkMsByPort), st.LostLinkMs)
}

// losslessDropWarnings names every drop on a lossless priority (the
// scenario's switch.pfc): PFC should have paused the senders in time, so
// a drop there means frames kept arriving after the PAUSE went out, more
// than the headroom held.
func losslessDropWarnings(st SwitchStats, scenario any) []string {
	sw := MapOf(MapOf(scenario)["switch"])
	pfc := MapOf(sw["pfc"])
	if pfc == nil {
		return nil
	}
	lossless := map[int]bool{}
	for _, q := range ListOf(pfc["priorities"]) {
		if v, ok := q.(float64); ok {
			lossless[int(v)] = true
		}
	}
	headroom, _ := pfc["headroom_pkts"].(float64)
	depth, _ := sw["queue_depth_pkts"].(float64)
	var out []string
	for _, d := range st.queueDrops {
		if !lossless[d.queue] {
			continue
		}
		out = append(out, fmt.Sprintf("switch port %s dropped %d packets of lossless priority %d (peak %d packets): more frames arrived after its PAUSE frames went out than headroom_pkts %.0f held, because the senders or the switch reacted late (on an emulated run, their CPU) or the ports feeding it may together queue more than it holds before all have paused (homatb validate checks that); this run would have needed up to about %.0f packets of headroom (queue_depth_pkts %.0f)",
			d.port, d.drops, d.queue, d.peak, headroom, headroom+float64(d.drops), depth))
	}
	return out
}

// targetBMv2 is the scenario's name of the BMv2 switch target.
const targetBMv2 = "bmv2"

// switchTarget is the switch target in the manifest's scenario ("" when
// the manifest does not say).
func switchTarget(scenario any) string {
	m, _ := scenario.(map[string]any)
	sw, _ := m["switch"].(map[string]any)
	t, _ := sw["target"].(string)
	return t
}

// bmv2Unavailable are the statistics a BMv2 run lacks: tor.p4's queue
// registers (peaks, delays) cannot be read over P4Runtime on BMv2, and
// nothing counts its CE marks. The defences' counters it reads.
func bmv2Unavailable() []string {
	return []string{"peak_pkts", "peak_bytes", "delay_max_us", "ce_marked_pkts"}
}

// bmv2Note says, beside a BMv2 experiment's numbers, where BMv2 departs
// from the embedded target (docs/bmv2.md).
const bmv2Note = "switch target bmv2: queue peaks, queue delays and ECN mark counts are unavailable (tor.p4's registers cannot be read over P4Runtime on BMv2); " +
	"each port is capped at the link rate by a kernel htb with strict priority after BMv2's per-queue rate limits, so a queue can build in BMv2 (one priority over the link rate) or in the port shaper (several together), each up to the queue depth; " +
	"drops are BMv2's (enqueued minus dequeued) plus the shaper's; " +
	"measured on this kind of machine (docs/bmv2.md): a port whose traffic uses one queue (TCP) carries about 0.9 of its link, as BMv2 paces each queue on its own and does not catch up after a late wake-up, " +
	"and BMv2 forwards 15-19 kpps with about 0.1 ms more per crossing than the embedded target, which lengthens every short message"

// markUnavailable records what the target cannot measure.
func (st *SwitchStats) markUnavailable(target string) {
	st.Target = target
	if target == targetBMv2 {
		st.Unavailable = bmv2Unavailable()
	}
}

// Lacks reports whether the switch statistic field is unavailable.
func (st SwitchStats) Lacks(field string) bool {
	return slices.Contains(st.Unavailable, field)
}
