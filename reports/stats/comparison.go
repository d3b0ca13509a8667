package stats

// Comparison is compare.json: the experiments of two runs paired up.
type Comparison struct {
	A, B     string   `json:"-"`
	RunA     string   `json:"run_a"`
	RunB     string   `json:"run_b"`
	Pairs    []Pair   `json:"pairs"`
	OnlyA    []string `json:"only_a"`
	OnlyB    []string `json:"only_b"`
	Fidelity []string `json:"fidelity"`
}

// Pair is one experiment in both runs with its headline numbers; ratios are
// B over A (above 1: B is slower).
type Pair struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	Config    string   `json:"config"`
	A         Headline `json:"a"`
	B         Headline `json:"b"`
	RatioP50  *float64 `json:"ratio_short_p50"`
	RatioP99  *float64 `json:"ratio_short_p99"`
	// RatioCCT is B's collective completion time P50 over A's, for the
	// first collective both have.
	RatioCCT *float64 `json:"ratio_cct_p50,omitempty"`

	ExpA, ExpB *Experiment `json:"-"`
}

// Headline is the numbers a comparison puts side by side.
type Headline struct {
	Experiment  string   `json:"experiment"`
	Completed   int64    `json:"completed"`
	ShortP50us  *float64 `json:"short_p50_us"`
	ShortP99us  *float64 `json:"short_p99_us"`
	ShortP50CI  Interval `json:"short_p50_ci_us"`
	ShortP99CI  Interval `json:"short_p99_ci_us"`
	RTTP99us    *float64 `json:"rtt_p99_us"`
	SlowdownP99 *float64 `json:"slowdown_p99"`
	GoodputGbps float64  `json:"goodput_gbps"`
	Drops       int64    `json:"switch_drops"`
	// LongP50us is the median RTT of the longest requests (the by-size
	// table's last row, from LongMinBytes up); MaxQueuePkts the deepest
	// any switch queue became.
	LongP50us    *float64 `json:"long_p50_us"`
	LongMinBytes int64    `json:"long_min_bytes"`
	MaxQueuePkts int64    `json:"max_queue_pkts"`
	// TailHostShare is the part of the short-message tail (the mean at or
	// above the P99) the latency anatomy puts on the hosts (their
	// software and send lag, not waits behind the same connection's
	// queued bytes); null without an anatomy.
	TailHostShare *float64 `json:"tail_host_share"`
	// CCTPhase and CCTP50us are the experiment's first collective phase
	// and the median completion time of its iterations (µs); absent
	// without a collective.
	CCTPhase string   `json:"cct_phase,omitempty"`
	CCTP50us *float64 `json:"cct_p50_us,omitempty"`
}

func headlineOf(e *Experiment) Headline {
	h := Headline{Experiment: e.Name, Completed: e.RPCs.Completed,
		ShortP50us: e.Short.P50us, ShortP99us: e.Short.P99us, ShortP50CI: e.Short.P50CI, ShortP99CI: e.Short.P99CI,
		RTTP99us: e.RTT.P99, GoodputGbps: e.GoodputGbps, Drops: e.Switch.Drops}
	if e.Slowdown != nil {
		h.SlowdownP99 = e.Slowdown.P99
	}
	if n := len(e.BySize); n > 0 {
		last := e.BySize[n-1]
		h.LongP50us, h.LongMinBytes = &last.P50us, last.MinLength
	}
	for _, q := range e.Switch.MaxQueuePkts {
		h.MaxQueuePkts = max(h.MaxQueuePkts, q)
	}
	if len(e.Collectives) > 0 {
		h.CCTPhase, h.CCTP50us = e.Collectives[0].Phase, e.Collectives[0].CCT.P50
	}
	if a := e.Anatomy; a != nil && a.TailRPCs > 0 && a.Tail.RTT > 0 {
		share := (a.Tail.Host - a.Tail.HostHOL + a.Tail.SendLag) / a.Tail.RTT
		h.TailHostShare = &share
	}
	return h
}

// PairExperiments matches experiments by name, then the rest by transport
// and configuration (params without the transport).
func PairExperiments(a, b []Experiment) (pairs []Pair, onlyA, onlyB []string) {
	usedB := make([]bool, len(b))
	byName := map[string]int{}
	for i, e := range b {
		byName[e.Name] = i
	}
	var rest []int
	for i := range a {
		if j, ok := byName[a[i].Name]; ok {
			usedB[j] = true
			pairs = append(pairs, newPair(&a[i], &b[j]))
		} else {
			rest = append(rest, i)
		}
	}
	for _, i := range rest {
		found := false
		for j := range b {
			if !usedB[j] && b[j].Transport == a[i].Transport && GroupKey(b[j]) == GroupKey(a[i]) {
				usedB[j], found = true, true
				pairs = append(pairs, newPair(&a[i], &b[j]))
				break
			}
		}
		if !found {
			onlyA = append(onlyA, a[i].Name)
		}
	}
	for j := range b {
		if !usedB[j] {
			onlyB = append(onlyB, b[j].Name)
		}
	}
	return pairs, onlyA, onlyB
}

func newPair(ea, eb *Experiment) Pair {
	p := Pair{Name: ea.Name, Transport: ea.Transport, Config: GroupKey(*ea), A: headlineOf(ea), B: headlineOf(eb), ExpA: ea, ExpB: eb}
	if eb.Name != ea.Name {
		p.Name = ea.Name + " / " + eb.Name
	}
	p.RatioP50 = ratio(ea.Short.P50us, eb.Short.P50us)
	p.RatioP99 = ratio(ea.Short.P99us, eb.Short.P99us)
	if p.A.CCTPhase == p.B.CCTPhase {
		p.RatioCCT = ratio(p.A.CCTP50us, p.B.CCTP50us)
	}
	return p
}
