package claims

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/reports/stats"
)

// workloadOf names an experiment's workload by the first built-in name
// (w1..w5) in its params (a sweep over phases.<name>.sizes), "" when none.
func workloadOf(e *stats.Experiment) string {
	for k, v := range e.Params {
		if !strings.HasSuffix(k, ".sizes") {
			continue
		}
		s := strings.ToLower(fmt.Sprint(v))
		if len(s) >= 2 && s[0] == 'w' && s[1] >= '1' && s[1] <= '5' {
			return s[:2]
		}
	}
	return ""
}

// byWorkload indexes one repetition's experiments by workload and
// transport.
func byWorkload(exps []stats.Experiment) map[string]map[string]*stats.Experiment {
	m := map[string]map[string]*stats.Experiment{}
	for i := range exps {
		e := &exps[i]
		w := workloadOf(e)
		if m[w] == nil {
			m[w] = map[string]*stats.Experiment{}
		}
		m[w][e.Transport] = e
	}
	return m
}

// halfBinsMax is the largest P99 slowdown over the size bins of the
// shortest half of e's messages whose P99 the run determines (NaN when
// none). A bin of fewer than about 370 messages has no upper confidence
// bound on its P99 (its estimate is one of its three or four slowest
// messages): W5's bins of 247-321 messages in 100 ms read 1.42 to 2.60
// over three seeds. Such a bin is left out rather than read as a P99.
// When no bin is determined (W5's 25 ms in a quick run), the shortest
// half is read as one bin, if its P99 is.
func halfBinsMax(e *stats.Experiment) float64 {
	if e == nil || e.ShortestHalf == nil {
		return math.NaN()
	}
	v := math.NaN()
	for _, b := range e.BySize {
		if b.Length > e.ShortestHalf.MaxLength || b.S99 == nil || b.S99CI[1] == nil {
			continue
		}
		if math.IsNaN(v) || *b.S99 > v {
			v = *b.S99
		}
	}
	if h := e.ShortestHalf; math.IsNaN(v) && h.S99 != nil && h.S99CI[1] != nil {
		v = *h.S99
	}
	return v
}

// halfP99 is the P99 slowdown of the shortest half pooled (NaN when
// unknown).
func halfP99(e *stats.Experiment) float64 {
	if e == nil || e.ShortestHalf == nil || e.ShortestHalf.S99 == nil {
		return math.NaN()
	}
	return *e.ShortestHalf.S99
}

var paperWorkloads = []string{"w1", "w2", "w3", "w4", "w5"}

// homaHalfBins is B1: Homa's halfBinsMax on W1-W5.
func homaHalfBins(exps []stats.Experiment) ([]float64, error) {
	m := byWorkload(exps)
	out := make([]float64, len(paperWorkloads))
	for i, w := range paperWorkloads {
		out[i] = halfBinsMax(m[w]["homa"])
	}
	return out, nil
}

// receiverDrivenCut is B3: how much lower Homa's shortest-half P99 is than
// that of Homa with one priority and overcommitment 1 (label "rd"), as a
// fraction of the latter.
func receiverDrivenCut(exps []stats.Experiment) ([]float64, error) {
	h, rd := halfP99(findExp(exps, isHoma)), halfP99(byLabel(exps, "rd"))
	if math.IsNaN(h) || math.IsNaN(rd) || rd <= 0 {
		return nil, errors.New("the run lacks homa's or receiver-driven homa's shortest-half P99")
	}
	return []float64{1 - h/rd}, nil
}

// ndpQueueAdds reads B10 on NDP's W4 run: the longest a data packet waited
// in a switch queue (what a full queue of NDP's 8 packets adds: at a 10
// Gbit/s port 8 full frames ahead and one on the wire are 11 µs; trimmed
// headers, in TrimQueue, are left out), that over the ideal one-way time
// of a 200-byte message between racks (the slowdowns' denominator for it:
// host, leaf, spine, leaf, host), and, for reference, what W4's first size
// bin of 200 bytes or more adds to its ideal at its P99 end to end (every
// hop's queue, the sender's NIC and the resends of trimmed packets) and the
// wait over the message's ideal within a rack.
func ndpQueueAdds(exps []stats.Experiment) ([]float64, error) {
	e := byWorkload(exps)["w4"]["ndp"]
	if e == nil {
		return nil, errors.New("the run lacks NDP on W4")
	}
	wait := math.NaN()
	for q, d := range e.Switch.MaxDelayUs {
		if q != dataplane.TrimQueue && d > 0 && !(wait >= d) {
			wait = d
		}
	}
	if math.IsNaN(wait) {
		return nil, errors.New("NDP's W4 run has no switch queue delays")
	}
	ideal, inRack := e.Ideal.Us(200, 0, betweenRacks), e.Ideal.Us(200, 0, withinRack)
	if math.IsNaN(ideal) || ideal <= 0 || inRack <= 0 {
		return nil, errors.New("NDP's W4 run has no ideal to divide by (its summary.json predates ideal.hop_ns: rebuild it with homatb report)")
	}
	for _, b := range e.BySize {
		if b.Length < 200 || b.S99 == nil || *b.S99 <= 0 {
			continue
		}
		return []float64{wait, wait / ideal, b.P99us - b.P99us / *b.S99, wait / inRack}, nil
	}
	return nil, errors.New("NDP's W4 run has no size bin of 200 bytes or more")
}

// The links a message crosses on a leaf-spine fabric: between racks host
// to leaf, leaf to spine, spine to leaf, leaf to host; within a rack host
// to leaf to host.
const (
	betweenRacks = 4
	withinRack   = 2
)

// over says how a claim reduces a ratio over the workloads.
type over int

const (
	overMin over = iota
	overMax
	// overMedian: the middle workload, for a claim the paper makes of the
	// workloads in general rather than of each one.
	overMedian
)

// ratios reads, for each named transport, its shortest-half P99 over
// Homa's on each of W1-W5 (the workloads the run has), and returns that
// ratio reduced over the workloads as how says.
func ratios(transports []string, how []over) func([]stats.Experiment) ([]float64, error) {
	return func(exps []stats.Experiment) ([]float64, error) {
		m := byWorkload(exps)
		out := make([]float64, len(transports))
		for i, t := range transports {
			var rs []float64
			for _, w := range paperWorkloads {
				h, o := halfP99(m[w]["homa"]), halfP99(m[w][t])
				if !math.IsNaN(h) && !math.IsNaN(o) && h > 0 {
					rs = append(rs, o/h)
				}
			}
			if len(rs) == 0 {
				return nil, fmt.Errorf("no workload with both homa's and %s's shortest-half P99", t)
			}
			slices.Sort(rs)
			switch how[i] {
			case overMax:
				out[i] = rs[len(rs)-1]
			case overMedian:
				out[i] = rs[len(rs)/2]
				if len(rs)%2 == 0 {
					out[i] = (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
				}
			default:
				out[i] = rs[0]
			}
		}
		return out, nil
	}
}

// repetitions groups a run's experiments by repetition, in order.
func repetitions(exps []stats.Experiment) [][]stats.Experiment {
	var keys []string
	groups := map[string][]stats.Experiment{}
	for _, e := range exps {
		k := fmt.Sprint(e.Params["repetition"])
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], e)
	}
	slices.Sort(keys)
	out := make([][]stats.Experiment, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}

// paramFloat is an experiment's sweep value of key as a number (NaN when
// absent or not a number).
func paramFloat(e *stats.Experiment, key string) float64 {
	v, ok := e.Params[key]
	if !ok {
		return math.NaN()
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(fmt.Sprint(v)), 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// sustained says whether e delivered what it was offered: goodput at
// least 90% of the offered load and at most 1% of its messages still in
// flight when the drain ended.
func sustained(e *stats.Experiment) bool {
	return e.OfferedGbps > 0 && e.GoodputGbps >= 0.9*e.OfferedGbps && e.RPCs.InFlight*100 <= e.RPCs.Issued
}

// maxLoads is, per transport, the highest offered load (sweep key
// loadKey) it sustained; 0 when it sustained none.
func maxLoads(exps []stats.Experiment, loadKey string) map[string]float64 {
	m := map[string]float64{}
	for i := range exps {
		e := &exps[i]
		l := paramFloat(e, loadKey)
		if _, ok := m[e.Transport]; !ok {
			m[e.Transport] = 0
		}
		if !math.IsNaN(l) && sustained(e) && l > m[e.Transport] {
			m[e.Transport] = l
		}
	}
	return m
}

const maxLoadKey = "phases.all2all.load"

// homaLoadRatios is B6: Homa's highest sustained load, then Homa's over
// each other transport's.
func homaLoadRatios(exps []stats.Experiment) ([]float64, error) {
	m := maxLoads(exps, maxLoadKey)
	h, ok := m["homa"]
	if !ok {
		return nil, errors.New("no homa experiments")
	}
	out := []float64{h}
	for _, t := range []string{"pfabric", "phost", "ndp", "pias"} {
		o, ok := m[t]
		switch {
		case !ok || (o == 0 && h == 0):
			out = append(out, math.NaN()) // neither sustained a load: no ratio
		case o == 0:
			out = append(out, math.Inf(1))
		default:
			out = append(out, h/o)
		}
	}
	return out, nil
}

// ndpMaxLoad is B8: NDP's highest sustained load.
func ndpMaxLoad(exps []stats.Experiment) ([]float64, error) {
	m := maxLoads(exps, maxLoadKey)
	v, ok := m["ndp"]
	if !ok {
		return nil, errors.New("no ndp experiments")
	}
	return []float64{v}, nil
}

// overcommitMaxLoads is B7: the highest load Homa sustained (as B6 reads
// it: sustained) with overcommitment 1 and with 7; NaN for a degree that
// did not run.
func overcommitMaxLoads(exps []stats.Experiment) ([]float64, error) {
	out := []float64{math.NaN(), math.NaN()}
	for i := range exps {
		e := &exps[i]
		k := slices.Index([]float64{1, 7}, paramFloat(e, "transports.homa.homa.overcommit"))
		l := paramFloat(e, maxLoadKey)
		if k < 0 || math.IsNaN(l) {
			continue
		}
		if math.IsNaN(out[k]) {
			out[k] = 0
		}
		if sustained(e) && l > out[k] {
			out[k] = l
		}
	}
	if math.IsNaN(out[0]) || math.IsNaN(out[1]) {
		return nil, errors.New("no homa experiments with overcommitment 1 and 7")
	}
	return out, nil
}

// nvScale is how much slower the TCP-NV claims' emulated links are than
// the talk's 1 Gbit/s (scenarios/claims/tcp-nv.yaml runs at 50 Mbit/s):
// a queue of the same packets lasts this many times longer here.
const nvScale = 1000.0 / 50

// byLabel finds a repetition's experiment of a configuration: by its
// label, or by its configuration's name ("tcp-cubic") ending in it;
// "" is the unlabelled one.
func byLabel(exps []stats.Experiment, label string) *stats.Experiment {
	for i := range exps {
		if exps[i].Label == label || (label != "" && strings.HasSuffix(exps[i].Config, "-"+label)) {
			return &exps[i]
		}
	}
	return nil
}

// cubicAndNV reads one value of the unlabelled experiment (cubic's; BIC's
// in E4) and one of NV's.
func cubicAndNV(exps []stats.Experiment, f func(*stats.Experiment) float64) ([]float64, error) {
	out := make([]float64, 2)
	for i, l := range []string{"", "nv"} {
		e := byLabel(exps, l)
		if e == nil {
			return nil, fmt.Errorf("no experiment labelled %q", l)
		}
		out[i] = f(e)
	}
	return out, nil
}

// nvLoss is E1: the retransmitted fraction of the packets cubic's and
// NV's connections delivered (retransmissions from tcp.csv over the
// goodput's full-size segments).
func nvLoss(exps []stats.Experiment) ([]float64, error) {
	return cubicAndNV(exps, func(e *stats.Experiment) float64 {
		var re uint64
		for _, c := range e.TCPConns {
			re += c.Retrans
		}
		pkts := e.GoodputGbps * 1e9 / 8 * e.DurationS / 1448
		if pkts <= 0 || len(e.TCPConns) == 0 {
			return math.NaN()
		}
		return float64(re) / pkts
	})
}

// pfcLoss is E3: the fraction of cubic's and NV's packets the switch
// dropped (every drop: only their segments cross it), and the PAUSE
// frames the switch sent in cubic's experiment, which must be some for it
// to have tested anything (NV may keep its queue below XOFF and never be
// paused).
func pfcLoss(exps []stats.Experiment) ([]float64, error) {
	lost, err := cubicAndNV(exps, func(e *stats.Experiment) float64 {
		pkts := e.GoodputGbps * 1e9 / 8 * e.DurationS / 1448
		if pkts <= 0 || !e.Switch.Present {
			return math.NaN()
		}
		return float64(e.Switch.Drops) / pkts
	})
	if err != nil {
		return nil, err
	}
	var pauses int64
	for _, p := range byLabel(exps, "").Switch.PFC {
		pauses += p.PausesSent
	}
	return append(lost, float64(pauses)), nil
}

// nvRTT is E2: the largest P99 smoothed RTT of cubic's and NV's
// connections, in ms scaled to 1 Gbit/s (divided by nvScale).
func nvRTT(exps []stats.Experiment) ([]float64, error) {
	return cubicAndNV(exps, func(e *stats.Experiment) float64 {
		v := math.NaN()
		for _, c := range e.TCPConns {
			if ms := float64(c.SRTTP99us) / 1000 / nvScale; math.IsNaN(v) || ms > v {
				v = ms
			}
		}
		return v
	})
}

// nvProbeP99 is E4: the short-message P99 RTT (the probes') of BIC's and
// NV's experiments, in ms.
func nvProbeP99(exps []stats.Experiment) ([]float64, error) {
	return cubicAndNV(exps, func(e *stats.Experiment) float64 { return shortP99(e) / 1000 })
}

// baseRTT is C1's floor: the emulated fabric's unloaded base RTT (µs)
// that calibration measured.
func baseRTT(exps []stats.Experiment) ([]float64, error) {
	for i := range exps {
		if id := exps[i].Ideal; id != nil && id.BaseRTTus > 0 {
			return []float64{id.BaseRTTus}, nil
		}
	}
	return nil, errors.New("no calibrated base RTT")
}

// findExp is the first experiment of a repetition that match accepts.
func findExp(exps []stats.Experiment, match func(*stats.Experiment) bool) *stats.Experiment {
	for i := range exps {
		if match(&exps[i]) {
			return &exps[i]
		}
	}
	return nil
}

func isHoma(e *stats.Experiment) bool  { return e.Transport == "homa" && e.Label == "" }
func isBasic(e *stats.Experiment) bool { return e.Label == "basic" || e.Config == "homa-basic" }
func isTCP(e *stats.Experiment) bool {
	return e.Transport == "tcp" || strings.HasPrefix(e.Transport, "tcp-") || strings.HasPrefix(e.Config, "tcp")
}

// shortP99 is an experiment's short-message P99 RTT (NaN when unknown).
func shortP99(e *stats.Experiment) float64 {
	if e == nil || e.Short.P99us == nil {
		return math.NaN()
	}
	return *e.Short.P99us
}

// overHoma is the short-message P99 of the experiment match finds over
// Homa's (C2: Basic, C3: TCP).
func overHoma(match func(*stats.Experiment) bool) func([]stats.Experiment) ([]float64, error) {
	return func(exps []stats.Experiment) ([]float64, error) {
		h, o := findExp(exps, isHoma), findExp(exps, match)
		if h == nil || o == nil {
			return nil, errors.New("the run lacks homa or the configuration compared with it")
		}
		return []float64{shortP99(o) / shortP99(h)}, nil
	}
}

// tcpOverHomaShortAndLongest is F1: TCP's short-message P99 over Homa's,
// and the P99 of TCP's largest size bin over Homa's.
func tcpOverHomaShortAndLongest(exps []stats.Experiment) ([]float64, error) {
	h, t := findExp(exps, isHoma), findExp(exps, isTCP)
	if h == nil || t == nil || len(h.BySize) == 0 || len(t.BySize) == 0 {
		return nil, errors.New("the run lacks homa or tcp with size bins")
	}
	hl, tl := h.BySize[len(h.BySize)-1], t.BySize[len(t.BySize)-1]
	longest := math.NaN()
	if hl.Length == tl.Length && hl.P99us > 0 {
		longest = tl.P99us / hl.P99us
	}
	return []float64{shortP99(t) / shortP99(h), longest}, nil
}

// smallestLossyIncast is C4: the fewest messages of the incasts (an
// experiment each, its issued RPCs) whose switches dropped a packet (+Inf
// when none did), and the bytes the largest one queued per message (its
// deepest queue over its messages), in KB.
func smallestLossyIncast(exps []stats.Experiment) ([]float64, error) {
	if len(exps) == 0 {
		return nil, errors.New("no incast experiment")
	}
	lossy, perMsg, largest := math.Inf(1), math.NaN(), 0.0
	for i := range exps {
		e := &exps[i]
		n := float64(e.RPCs.Issued)
		if e.Switch.Drops > 0 {
			lossy = min(lossy, n)
		}
		if n > largest && len(e.Switch.MaxQueueBytes) > 0 {
			largest, perMsg = n, float64(slices.Max(e.Switch.MaxQueueBytes))/n/1e3
		}
	}
	return []float64{lossy, perMsg}, nil
}

// tcpTailQueueShare is F2: the share of TCP's short RPCs' tail (the
// anatomy's mean over the RPCs at or above the P99) spent in switch
// queues: the RPCs' own packets' queueing and the time they waited in the
// host behind earlier bytes of their connection that a switch held (the
// anatomy's host_hol, part of its host time).
func tcpTailQueueShare(exps []stats.Experiment) ([]float64, error) {
	t := findExp(exps, isTCP)
	if t == nil || t.Anatomy == nil || t.Anatomy.Tail.RTT <= 0 {
		return nil, errors.New("no TCP experiment with a latency anatomy of its short RPCs")
	}
	tail := t.Anatomy.Tail
	return []float64{(tail.Queue + tail.HostHOL) / tail.RTT}, nil
}

// halfTailPreemptShare is B9: of Homa's shortest half's P99 tail (the
// anatomy's half_tail_mean), the shares of its switch queueing that were
// preemption lag and that were at the receiver's downlink.
func halfTailPreemptShare(exps []stats.Experiment) ([]float64, error) {
	h := findExp(exps, isHoma)
	if h == nil || h.Anatomy == nil || h.Anatomy.HalfTailRPCs == 0 {
		return nil, errors.New("no Homa experiment with a latency anatomy of its shortest half")
	}
	a := h.Anatomy
	if !a.PreemptionKnown {
		return nil, errors.New("the switches' records are sampled: preemption lag needs switch.records: all")
	}
	if q := a.HalfTail.Queue; q > 0 {
		return []float64{a.HalfTail.PreemptLag / q, a.HalfTail.LastHopQueue / q}, nil
	}
	return []float64{math.NaN(), math.NaN()}, nil
}

// tcpShortOverLong is D2: TCP's P99 slowdown of its smallest size bin
// over that of its largest.
func tcpShortOverLong(exps []stats.Experiment) ([]float64, error) {
	e := findExp(exps, isTCP)
	if e == nil || len(e.BySize) == 0 {
		return nil, errors.New("no TCP experiment with size bins")
	}
	first, last := e.BySize[0].S99, e.BySize[len(e.BySize)-1].S99
	if first == nil || last == nil || *last <= 0 {
		return []float64{math.NaN()}, nil
	}
	return []float64{*first / *last}, nil
}
