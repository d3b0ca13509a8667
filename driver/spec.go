package driver

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/pias"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// ConfigError is a bad setting in a workload; the agent's API maps it to
// InvalidArgument.
type ConfigError struct {
	Field string // proto field path, e.g. "client.rate_rps"
	Value string
	Msg   string // what was expected
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s = %s: %s", e.Field, e.Value, e.Msg)
}

// Invalid is a ConfigError for field's value.
func Invalid(field string, value any, format string, args ...any) error {
	return &ConfigError{Field: field, Value: fmt.Sprintf("%q", fmt.Sprint(value)), Msg: fmt.Sprintf(format, args...)}
}

// ClientSpec is a validated client workload.
type ClientSpec struct {
	Sizes workloads.SizeDist
	// Schedule draws an open loop's arrivals; nil for a closed loop.
	Schedule       workloads.Schedule
	Rate           float64
	MaxOutstanding int
	Targets        []Target
	RespBytes      uint32
	Seed           uint64
	// Duration bounds the arrivals from the start (0: none); RPCs due in
	// the first Warmup are in the warm-up phase.
	Duration, Warmup time.Duration
	MaxRPCs          uint64
	// StartNs is when the client begins (Unix ns); 0 at Start.
	StartNs int64
}

// maxResponse bounds response_bytes before the transport's own limit is
// known.
const maxResponse = 64 << 20

// ParseWorkload checks every setting of a client workload and returns the
// first problem as a ConfigError.
func ParseWorkload(w *agentpb.Workload) (*ClientSpec, error) {
	sizes, err := workloads.ParseSizeSpec(w.GetSizes())
	if err != nil {
		return nil, &ConfigError{Field: "client.sizes", Value: strconv.Quote(w.GetSizes()), Msg: err.Error()}
	}
	s := &ClientSpec{
		Sizes:          sizes,
		Rate:           w.GetRateRps(),
		MaxOutstanding: int(w.GetMaxOutstanding()),
		RespBytes:      w.GetResponseBytes(),
		Seed:           w.GetSeed(),
		Duration:       exactOr(w.GetDurationNs(), w.GetDurationMs()),
		MaxRPCs:        w.GetMaxRpcs(),
		Warmup:         exactOr(w.GetWarmupNs(), w.GetWarmupMs()),
		StartNs:        w.GetStartUnixNs(),
	}
	burst, jitter := time.Duration(w.GetBurstIntervalUs())*time.Microsecond, time.Duration(w.GetBurstJitterUs())*time.Microsecond
	if s.StartNs < 0 {
		return nil, Invalid("client.start_unix_ns", s.StartNs, "expected a Unix time in ns, or 0 to start at once")
	}
	if math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) || s.Rate < 0 {
		return nil, Invalid("client.rate_rps", s.Rate, "expected a non-negative RPC rate per second")
	}
	switch w.GetArrivals() {
	case "", "poisson":
		if burst == 0 && s.Rate == 0 {
			return nil, Invalid("client.rate_rps", s.Rate, "poisson arrivals need a positive rate (or burst_interval_us for bursts)")
		}
		if burst > 0 && jitter >= burst {
			return nil, Invalid("client.burst_jitter_us", w.GetBurstJitterUs(), "expected less than burst_interval_us %d", w.GetBurstIntervalUs())
		}
		if burst > 0 {
			s.Schedule, err = workloads.NewBursts(burst, jitter)
		} else {
			s.Schedule, err = workloads.NewPoisson(s.Rate)
		}
		if err != nil {
			return nil, Invalid("client.rate_rps", s.Rate, "%v", err)
		}
	case "closed":
		if s.MaxOutstanding < 1 {
			return nil, Invalid("client.max_outstanding", s.MaxOutstanding, "closed-loop arrivals need at least 1 outstanding RPC")
		}
		if burst > 0 {
			return nil, Invalid("client.burst_interval_us", w.GetBurstIntervalUs(), "bursts are an open-loop schedule: use arrivals \"poisson\"")
		}
	default:
		return nil, Invalid("client.arrivals", w.GetArrivals(), "expected \"poisson\" or \"closed\"")
	}
	if len(w.GetTargets()) == 0 {
		return nil, Invalid("client.targets", "", "expected at least one server \"ip:port\"")
	}
	for _, t := range w.GetTargets() {
		ap, err := parseTarget(t)
		if err != nil {
			return nil, Invalid("client.targets", t, "%v", err)
		}
		s.Targets = append(s.Targets, Target{Addr: ap, Name: t})
	}
	if s.RespBytes > maxResponse {
		return nil, Invalid("client.response_bytes", s.RespBytes, "at most %d", maxResponse)
	}
	if s.Duration > 0 && s.Warmup >= s.Duration {
		return nil, Invalid("client.warmup_ms", s.Warmup, "expected less than the duration %v", s.Duration)
	}
	return s, nil
}

// exactOr is a bound given to the nanosecond (ns), or else in whole
// milliseconds (ms): a simulated run measures fractions of a millisecond.
func exactOr(ns uint64, ms uint32) time.Duration {
	if ns > 0 {
		return time.Duration(ns)
	}
	return time.Duration(ms) * time.Millisecond
}

// parseTarget reads "ip:port" with a port of 1 to 65535.
func parseTarget(t string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(t)
	if err != nil {
		return ap, fmt.Errorf("expected \"ip:port\"")
	}
	if ap.Port() == 0 {
		return ap, fmt.Errorf("port must be 1..65535")
	}
	return ap, nil
}

// CollectiveSpec is a validated agentpb.Collective: a host's part in a
// collective or, with Matrix set, in a connection matrix.
type CollectiveSpec struct {
	Phase, Kind string
	ID          uint32
	Targets     []Target
	Rank        int
	Bytes       int
	Iterations  int
	Compute     time.Duration
	Jitter      time.Duration
	Seed        uint64
	// StartNs is when the part begins (Unix ns); 0 at Start.
	StartNs  int64
	Duration time.Duration
	// Matrix is a connection-matrix phase's, nil for a collective.
	Matrix *workloads.Matrix
	// Window bounds the member's step messages unanswered at once; 0:
	// the kind's default.
	Window int
}

// ConfigOf is the workload a Configure request gives its host, read as
// the agent and the simulated agent both read it: the client, whose
// messages transport carries if at most maxMessage bytes, and the host's
// parts in collectives (their targets and matrices taken from shared when
// another member parsed them; nil: parsed); phase measure when the
// request names none.
func ConfigOf(req *agentpb.ConfigureRequest, transport string, maxMessage int, shared *Shared) (Config, error) {
	c := Config{Experiment: req.GetExperiment(), Transport: transport, Phase: req.GetPhase(), Host: req.GetHost()}
	if c.Phase == "" {
		c.Phase = rundir.PhaseMeasure
	}
	if w := req.GetClient(); w != nil {
		spec, err := ParseWorkload(w)
		if err != nil {
			return c, err
		}
		if longest := max(spec.Sizes.Max(), int(spec.RespBytes)); longest > maxMessage {
			return c, Invalid("client.sizes", w.GetSizes(), "messages up to %d bytes, but %s carries at most %d: truncate with \",max=%d\"",
				longest, transport, maxMessage, maxMessage)
		}
		c.Client = spec
	}
	ids := map[uint32]string{}
	for i, pc := range req.GetCollectives() {
		cs, err := ParseCollective(pc, i, maxMessage, shared)
		if err == nil && ids[cs.ID] != "" {
			err = Invalid("collectives["+strconv.Itoa(i)+"].phase", cs.Phase, "its id collides with phase %q's: rename one", ids[cs.ID])
		}
		if err != nil {
			return c, err
		}
		ids[cs.ID] = cs.Phase
		c.Collectives = append(c.Collectives, cs)
	}
	return c, nil
}

// Shared holds what the members of a collective parse alike, its members'
// addresses and its matrix, for a process that runs many members (the
// twin): each member parsing its own would hold N² targets among N
// members (a 64 B target each: 4 GB among 8,192). The requests of one
// collective share their Targets slice and matrix text, which key it.
type Shared struct {
	targets  map[*string][]Target
	matrices map[*byte]*workloads.Matrix // by the text's first byte
}

// NewShared is an empty Shared.
func NewShared() *Shared {
	return &Shared{targets: map[*string][]Target{}, matrices: map[*byte]*workloads.Matrix{}}
}

// ParseCollective checks the i-th collective of a Configure request
// against the transport's longest message, taking the members' targets and
// the matrix from shared when another member parsed them (nil: parse).
func ParseCollective(c *agentpb.Collective, i, maxMessage int, shared *Shared) (*CollectiveSpec, error) {
	f := func(name string) string { return "collectives[" + strconv.Itoa(i) + "]." + name }
	s := &CollectiveSpec{
		Phase: c.GetPhase(), Kind: c.GetKind(), ID: CollectiveID(c.GetPhase()), Rank: int(c.GetRank()),
		Bytes: int(c.GetBytes()), Iterations: int(c.GetIterations()),
		Compute: time.Duration(c.GetComputeNs()), Jitter: time.Duration(c.GetJitterNs()),
		Seed: c.GetSeed(), Duration: exactOr(c.GetDurationNs(), c.GetDurationMs()), StartNs: c.GetStartUnixNs(),
		Window: int(c.GetWindow()),
	}
	if s.Phase == "" {
		return nil, Invalid(f("phase"), "", "expected the phase's name")
	}
	if s.StartNs < 0 {
		return nil, Invalid(f("start_unix_ns"), s.StartNs, "expected a Unix time in ns, or 0 to start at once")
	}
	n := len(c.GetTargets())
	if n < 2 || len(c.GetHosts()) != n {
		return nil, Invalid(f("targets"), n, "expected at least 2 members, each with a host name (got %d names)", len(c.GetHosts()))
	}
	if shared != nil && n > 0 {
		s.Targets = shared.targets[&c.GetTargets()[0]]
	}
	if s.Targets == nil {
		for k, t := range c.GetTargets() {
			ap, err := parseTarget(t)
			if err != nil {
				return nil, Invalid(f("targets"), t, "%v", err)
			}
			s.Targets = append(s.Targets, Target{Addr: ap, Name: t, Host: c.GetHosts()[k]})
		}
		if shared != nil {
			shared.targets[&c.GetTargets()[0]] = s.Targets
		}
	}
	if s.Rank >= n {
		return nil, Invalid(f("rank"), s.Rank, "expected less than the %d members", n)
	}
	if s.Kind == workloads.KindConnectionMatrix {
		var m *workloads.Matrix
		if shared != nil && len(c.GetMatrix()) > 0 {
			m = shared.matrices[&c.GetMatrix()[0]]
		}
		if m == nil {
			var err error
			if m, err = workloads.ParseMatrix(c.GetMatrixFile(), c.GetMatrix()); err != nil {
				return nil, Invalid(f("matrix"), c.GetMatrixFile(), "%v", err)
			}
			if shared != nil && len(c.GetMatrix()) > 0 {
				shared.matrices[&c.GetMatrix()[0]] = m
			}
		}
		if m.Nodes != n {
			return nil, Invalid(f("targets"), n, "expected one member per node of the matrix's %d", m.Nodes)
		}
		for _, fl := range m.Flows {
			if fl.Size > int64(maxMessage) {
				return nil, Invalid(f("matrix"), c.GetMatrixFile(), "%s:%d: flow %d is %d bytes, but the transport carries at most %d", m.File, fl.Line, fl.ID, fl.Size, maxMessage)
			}
		}
		s.Matrix = m
		return s, nil
	}
	known := false
	for _, k := range workloads.CollectiveKinds {
		known = known || k == s.Kind
	}
	if !known {
		return nil, Invalid(f("kind"), s.Kind, "expected one of %v", workloads.CollectiveKinds)
	}
	if s.Bytes/n < workloads.MinCollectiveMessage || s.Bytes/n > maxMessage {
		return nil, Invalid(f("bytes"), s.Bytes, "each of the %d members' messages (bytes/%d) must be %d to %d bytes", n, n, workloads.MinCollectiveMessage, maxMessage)
	}
	if s.Iterations < 1 {
		return nil, Invalid(f("iterations"), s.Iterations, "expected at least 1")
	}
	return s, nil
}

// PIASOf is the PIAS tagging a TCP Configure request asks for, as the
// agent attaches it and the simulator's TCP model tags; false when it
// asks for none.
func PIASOf(tp *agentpb.TcpParams) (pias.Config, bool, error) {
	if !tp.GetPias() {
		return pias.Config{}, false, nil
	}
	if tp.GetLinkBps() == 0 {
		return pias.Config{}, false, Invalid("tcp.link_bps", 0, "PIAS sizes its thresholds from the host's link rate")
	}
	us := time.Microsecond
	cfg := pias.ForRun(tp.GetLinkBps(), time.Duration(max(tp.GetBaseRttUs(), 1))*us, tp.GetPiasThresholds(),
		time.Duration(tp.GetPiasIdleResetUs())*us)
	if err := cfg.Validate(); err != nil {
		return cfg, false, Invalid("tcp.pias_thresholds", tp.GetPiasThresholds(), "%v", err)
	}
	return cfg, true, nil
}
