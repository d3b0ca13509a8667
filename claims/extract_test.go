package claims

import (
	"math"
	"slices"
	"testing"

	"github.com/homatb/homatb/anatomy"
	"github.com/homatb/homatb/reports/stats"
)

func fp(v float64) *float64 { return &v }

// exp is a synthetic experiment of transport t on workload w with a
// shortest-half P99 slowdown s99.
func exp(t, w string, s99 float64) stats.Experiment {
	return stats.Experiment{Transport: t, Params: map[string]any{"phases.all2all.sizes": w},
		ShortestHalf: &stats.ShortestHalf{MaxLength: 1000, S99: fp(s99)},
		BySize: []stats.SizeRow{{Length: 100, S99: fp(s99 - 0.5), S99CI: determined(s99 - 0.5)}, {Length: 500, S99: fp(s99 + 9)},
			{Length: 1000, S99: fp(s99 + 0.5), S99CI: determined(s99 + 0.5)}, {Length: 5000, S99: fp(50), S99CI: determined(50)}}}
}

// determined is the confidence interval of a bin whose P99 v the run
// determines (an upper bound exists); a bin without one has too few
// messages for a P99.
func determined(v float64) stats.Interval { return stats.Interval{fp(v - 0.1), fp(v + 0.1)} }

func TestTwinExtraction(t *testing.T) {
	exps := []stats.Experiment{
		exp("homa", "w1", 2), exp("pias", "w1", 3), exp("phost", "w1", 8),
		exp("homa", "w4,max=1000000", 1.5), exp("pias", "w4,max=1000000", 1.5), exp("phost", "w4,max=1000000", 6),
	}
	got, err := homaHalfBins(exps)
	if err != nil {
		t.Fatal(err)
	}
	// W1 and W4: the largest bin of the shortest half (s99 + 0.5), not the
	// 5,000-byte bin nor the 500-byte one, whose P99 has no upper bound
	// (too few messages); W2, W3, W5 not in the run.
	if got[0] != 2.5 || got[3] != 2 || !math.IsNaN(got[1]) {
		t.Errorf("homaHalfBins = %v, want [2.5 NaN NaN 2 NaN]", got)
	}
	// No bin of the shortest half determined: the half as one bin when
	// its P99 is, else nothing.
	few := exp("homa", "w5", 1.8)
	for i := range few.BySize {
		few.BySize[i].S99CI = stats.Interval{}
	}
	few.ShortestHalf.S99CI = determined(1.8)
	undetermined := exp("homa", "w2", 1.8)
	undetermined.BySize = few.BySize
	if got, err := homaHalfBins([]stats.Experiment{few, undetermined}); err != nil || got[4] != 1.8 || !math.IsNaN(got[1]) {
		t.Errorf("homaHalfBins = %v, %v, want W5 1.8 (the half as one bin), W2 NaN (nothing determined)", got, err)
	}
	r, err := ratios([]string{"pias", "pias", "phost", "pias"}, []over{overMin, overMax, overMin, overMedian})(exps)
	if err != nil {
		t.Fatal(err)
	}
	// PIAS/Homa 1.5 on W1, 1 on W4: median of two is their mean.
	if r[0] != 1 || r[1] != 1.5 || r[2] != 4 || r[3] != 1.25 {
		t.Errorf("ratios = %v, want [1 1.5 4 1.25]", r)
	}
	odd := append(exps, exp("homa", "w2", 1), exp("pias", "w2", 5))
	if r, err := ratios([]string{"pias"}, []over{overMedian})(odd); err != nil || r[0] != 1.5 {
		t.Errorf("median over three workloads (1, 1.5, 5) = %v, %v, want 1.5", r, err)
	}
	if _, err := ratios([]string{"ndp"}, []over{overMin})(exps); err == nil {
		t.Error("a transport not in the run gave no error")
	}
}

func TestMaxLoads(t *testing.T) {
	at := func(tr string, load, offered, goodput float64, inFlight int64) stats.Experiment {
		return stats.Experiment{Transport: tr, Params: map[string]any{maxLoadKey: load}, OfferedGbps: offered, GoodputGbps: goodput,
			RPCs: stats.RPCCounts{Issued: 1000, InFlight: inFlight}}
	}
	exps := []stats.Experiment{
		at("homa", 0.7, 100, 99, 0), at("homa", 0.8, 100, 95, 5), at("homa", 0.9, 100, 80, 300),
		at("ndp", 0.7, 100, 99, 0), at("ndp", 0.8, 100, 99, 50), at("ndp", 0.9, 100, 60, 500),
		at("pfabric", 0.7, 100, 50, 400),
	}
	got, err := homaLoadRatios(exps)
	if err != nil {
		t.Fatal(err)
	}
	// Homa sustains 0.8; NDP 0.7 (too many left in flight at 0.8);
	// pFabric none (Homa's over it: infinite); pHost and PIAS not run.
	if got[0] != 0.8 || !math.IsInf(got[1], 1) || !math.IsNaN(got[2]) || math.Abs(got[3]-0.8/0.7) > 1e-12 || !math.IsNaN(got[4]) {
		t.Errorf("homaLoadRatios = %v", got)
	}
	none := []stats.Experiment{at("homa", 0.7, 100, 50, 400), at("ndp", 0.7, 100, 50, 400)}
	if got, _ := homaLoadRatios(none); got[0] != 0 || !math.IsNaN(got[3]) {
		t.Errorf("neither sustaining a load: homaLoadRatios = %v, want [0 ... NaN for NDP]", got)
	}
	if n, _ := ndpMaxLoad(exps); n[0] != 0.7 {
		t.Errorf("ndpMaxLoad = %v, want 0.7", n)
	}

	// B7: the same reading per degree of overcommitment.
	oc := func(degree float64, e stats.Experiment) stats.Experiment {
		e.Params["transports.homa.homa.overcommit"] = degree
		return e
	}
	ocs := []stats.Experiment{
		oc(1, at("homa", 0.6, 100, 97, 5)), oc(1, at("homa", 0.65, 100, 85, 30)), oc(1, at("homa", 0.7, 100, 80, 40)),
		oc(7, at("homa", 0.6, 100, 99, 0)), oc(7, at("homa", 0.9, 100, 92, 9)), oc(7, at("homa", 0.95, 100, 91, 11)),
	}
	if got, err := overcommitMaxLoads(ocs); err != nil || got[0] != 0.6 || got[1] != 0.9 {
		t.Errorf("overcommitMaxLoads = %v, %v; want [0.6 0.9]", got, err)
	}
	if _, err := overcommitMaxLoads(ocs[:3]); err == nil {
		t.Error("a run without overcommitment 7 gave no error")
	}
}

func TestNVExtraction(t *testing.T) {
	exps := []stats.Experiment{
		{Config: "tcp-cubic", GoodputGbps: 0.05, DurationS: 10, TCPConns: []stats.TCPConn{{Retrans: 432, SRTTP99us: 100_000}}},
		{Config: "tcp-nv", Label: "nv", GoodputGbps: 0.05, DurationS: 10, TCPConns: []stats.TCPConn{{Retrans: 0, SRTTP99us: 10_000}}},
	}
	loss, err := nvLoss(exps)
	if err != nil {
		t.Fatal(err)
	}
	// 0.05 Gbit/s for 10 s is 62.5 MB, 43,163 segments of 1,448 bytes.
	if math.Abs(loss[0]-432/(62.5e6/1448)) > 1e-12 || loss[1] != 0 {
		t.Errorf("nvLoss = %v", loss)
	}
	rtt, err := nvRTT(exps)
	if err != nil {
		t.Fatal(err)
	}
	if rtt[0] != 5 || rtt[1] != 0.5 {
		t.Errorf("nvRTT = %v, want [5 0.5] (ms at 1 Gbit/s)", rtt)
	}
}

func TestImplementationExtraction(t *testing.T) {
	short := func(v float64) stats.Short { return stats.Short{P99us: fp(v)} }
	exps := []stats.Experiment{
		{Transport: "homa", Config: "homa", Short: short(100)},
		{Transport: "homa", Label: "basic", Config: "homa-basic", Short: short(800)},
		{Transport: "tcp", Config: "tcp-cubic", Short: short(10_000),
			BySize: []stats.SizeRow{{Length: 100, S99: fp(90)}, {Length: 1e6, S99: fp(9)}}},
	}
	for _, tt := range []struct {
		name string
		f    func([]stats.Experiment) ([]float64, error)
		want float64
	}{
		{"basic over homa", overHoma(isBasic), 8},
		{"tcp over homa", overHoma(isTCP), 100},
		{"tcp short over long", tcpShortOverLong, 10},
	} {
		got, err := tt.f(exps)
		if err != nil || len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s = %v, %v; want [%g]", tt.name, got, err, tt.want)
		}
	}
	if _, err := overHoma(isBasic)(exps[:1]); err == nil {
		t.Error("a run without Basic gave no error")
	}
}

// TestNewClaimExtraction checks E3's, F1's, F2's, B3's and B10's readings
// on hand-made summaries.
func TestNewClaimExtraction(t *testing.T) {
	pfc := []stats.Experiment{
		{Config: "tcp-cubic", GoodputGbps: 0.05, DurationS: 10, Switch: stats.SwitchStats{Present: true, Drops: 0, PFC: []stats.PFCPort{{PausesSent: 300}, {PausesSent: 200}}}},
		{Config: "tcp-nv", Label: "nv", GoodputGbps: 0.05, DurationS: 10, Switch: stats.SwitchStats{Present: true, Drops: 43}},
	}
	got, err := pfcLoss(pfc)
	if err != nil || len(got) != 3 || got[0] != 0 || math.Abs(got[1]-43/(62.5e6/1448)) > 1e-12 || got[2] != 500 {
		t.Errorf("pfcLoss = %v, %v; want [0, 43 of 43,163 segments, 500 PAUSEs]", got, err)
	}

	impl := []stats.Experiment{
		{Transport: "homa", Config: "homa", Short: stats.Short{P99us: fp(100)}, BySize: []stats.SizeRow{{Length: 100, P99us: 90}, {Length: 1e6, P99us: 5000}}},
		{Transport: "tcp", Config: "tcp-cubic", Short: stats.Short{P99us: fp(1300)}, BySize: []stats.SizeRow{{Length: 100, P99us: 900}, {Length: 1e6, P99us: 9000}}},
	}
	if got, err := tcpOverHomaShortAndLongest(impl); err != nil || len(got) != 2 || got[0] != 13 || got[1] != 1.8 {
		t.Errorf("tcpOverHomaShortAndLongest = %v, %v; want [13 1.8]", got, err)
	}

	incast := []stats.Experiment{{Transport: "tcp", Config: "tcp-cubic", Anatomy: &anatomy.Summary{Tail: anatomy.Parts{RTT: 200, Queue: 100, Host: 80, HostHOL: 50}}}}
	if got, err := tcpTailQueueShare(incast); err != nil || len(got) != 1 || got[0] != 0.75 {
		t.Errorf("tcpTailQueueShare = %v, %v; want [0.75]", got, err)
	}
	if _, err := tcpTailQueueShare([]stats.Experiment{{Transport: "tcp"}}); err == nil {
		t.Error("a TCP run without an anatomy gave no error")
	}

	rd := []stats.Experiment{
		{Transport: "homa", Config: "homa", ShortestHalf: &stats.ShortestHalf{S99: fp(2)}},
		{Transport: "homa", Label: "rd", Config: "homa-rd", ShortestHalf: &stats.ShortestHalf{S99: fp(4)}},
	}
	if got, err := receiverDrivenCut(rd); err != nil || len(got) != 1 || got[0] != 0.5 {
		t.Errorf("receiverDrivenCut = %v, %v; want [0.5]", got, err)
	}

	incasts := []stats.Experiment{
		{RPCs: stats.RPCCounts{Issued: 200}, Switch: stats.SwitchStats{MaxQueueBytes: []int64{0, 1_600_000}}},
		{RPCs: stats.RPCCounts{Issued: 800}, Switch: stats.SwitchStats{Drops: 5, MaxQueueBytes: []int64{0, 6_400_000}}},
		{RPCs: stats.RPCCounts{Issued: 400}, Switch: stats.SwitchStats{Drops: 1, MaxQueueBytes: []int64{0, 3_200_000}}},
	}
	if got, err := smallestLossyIncast(incasts); err != nil || len(got) != 2 || got[0] != 400 || got[1] != 8 {
		t.Errorf("smallestLossyIncast = %v, %v; want [400 8]", got, err)
	}
	if got, _ := smallestLossyIncast(incasts[:1]); !math.IsInf(got[0], 1) {
		t.Errorf("no lossy incast: %v, want +Inf", got)
	}

	probes := []stats.Experiment{
		{Config: "tcp-bic", Short: stats.Short{P99us: fp(9900)}},
		{Config: "tcp-nv", Label: "nv", Short: stats.Short{P99us: fp(820)}},
	}
	if got, err := nvProbeP99(probes); err != nil || len(got) != 2 || got[0] != 9.9 || got[1] != 0.82 {
		t.Errorf("nvProbeP99 = %v, %v; want [9.9 0.82]", got, err)
	}
	if got, err := nvProbeP99(probes[1:]); err == nil {
		t.Errorf("nvProbeP99 without BIC's experiment = %v, want an error", got)
	}

	lag := []stats.Experiment{{Transport: "homa", Config: "homa", Anatomy: &anatomy.Summary{PreemptionKnown: true, HalfTailRPCs: 20,
		HalfTail: anatomy.Parts{RTT: 6, Queue: 2, PreemptLag: 0.5, LastHopQueue: 1.5}}}}
	if got, err := halfTailPreemptShare(lag); err != nil || len(got) != 2 || got[0] != 0.25 || got[1] != 0.75 {
		t.Errorf("halfTailPreemptShare = %v, %v; want [0.25 0.75]", got, err)
	}
	lag[0].Anatomy.PreemptionKnown = false
	if got, err := halfTailPreemptShare(lag); err == nil {
		t.Errorf("halfTailPreemptShare of sampled records = %v, want an error", got)
	}
	if got, err := halfTailPreemptShare([]stats.Experiment{{Transport: "homa"}}); err == nil {
		t.Errorf("halfTailPreemptShare without an anatomy = %v, want an error", got)
	}

	// The longest wait in a data queue is 11 µs (queue 0; the trimmed
	// headers' queue 7 is left out), five and a half times the 2 µs ideal
	// of a 200-byte message between racks (the ideal's base itself). The
	// first bin of at least 200 bytes: P99 12 µs at slowdown 6, so 10 µs
	// added end to end.
	zero := 0.0
	ndp := []stats.Experiment{{Transport: "ndp", Params: map[string]any{"phases.all2all.sizes": "w4"},
		Switch: stats.SwitchStats{MaxDelayUs: []float64{11, 0, 0, 0, 0, 0, 0, 30}},
		BySize: []stats.SizeRow{{Length: 100, P99us: 4, S99: fp(2)}, {Length: 300, P99us: 12, S99: fp(6)}},
		Ideal: &stats.Ideal{BaseRTTus: 2, BaseRequest: 200, BaseLinks: 4, LinkBps: 10e9, MTU: 1500, FrameOverhead: 38,
			HeaderBytes: 40, HopNs: &zero, OneWay: true}}}
	adds, err := ndpQueueAdds(ndp)
	if err != nil || len(adds) != 4 || !slices.Equal(adds[:3], []float64{11, 5.5, 10}) {
		t.Errorf("ndpQueueAdds = %v, %v; want [11 5.5 10 ...]", adds, err)
	} else if inRack := ndp[0].Ideal.Us(200, 0, 2); inRack >= 2 || adds[3] != 11/inRack {
		t.Errorf("within a rack: %v over an ideal of %v µs, want 11 over an ideal under the 2 µs between racks", adds[3], inRack)
	}
	ndp[0].Ideal.HopNs = nil
	if got, err := ndpQueueAdds(ndp); err == nil {
		t.Errorf("ndpQueueAdds of a summary without hop_ns = %v, want an error", got)
	}
	ndp[0].Ideal.HopNs = &zero
	ndp[0].Switch.MaxDelayUs = nil
	if got, err := ndpQueueAdds(ndp); err == nil {
		t.Errorf("ndpQueueAdds without queue delays = %v, want an error", got)
	}
}
