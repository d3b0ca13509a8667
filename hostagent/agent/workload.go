package agent

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/workloads"
)

// ConfigError is a bad setting in a Configure request; the API maps it to
// InvalidArgument.
type ConfigError struct {
	Field string // proto field path, e.g. "client.rate_rps"
	Value string
	Msg   string // what was expected
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s = %s: %s", e.Field, e.Value, e.Msg)
}

func invalid(field string, value any, format string, args ...any) error {
	return &ConfigError{Field: field, Value: fmt.Sprintf("%q", fmt.Sprint(value)), Msg: fmt.Sprintf(format, args...)}
}

// clientSpec is a validated client workload.
type clientSpec struct {
	sizes          workloads.SizeDist
	closed         bool
	rate           float64
	maxOutstanding int
	targets        []string
	respBytes      uint32
	seed           uint64
	duration       time.Duration
	maxRPCs        uint64
	warmup         time.Duration
	burstInterval  time.Duration
	burstJitter    time.Duration
	startAt        time.Time // zero: at Start
}

// maxResponse bounds response_bytes before the transport's own limit is
// known.
const maxResponse = 64 << 20

// parseWorkload checks every setting of a client workload and returns the
// first problem as a ConfigError.
func parseWorkload(w *agentpb.Workload) (*clientSpec, error) {
	sizes, err := workloads.ParseSizeSpec(w.GetSizes())
	if err != nil {
		return nil, &ConfigError{Field: "client.sizes", Value: strconv.Quote(w.GetSizes()), Msg: err.Error()}
	}
	s := &clientSpec{
		sizes:          sizes,
		rate:           w.GetRateRps(),
		maxOutstanding: int(w.GetMaxOutstanding()),
		respBytes:      w.GetResponseBytes(),
		seed:           w.GetSeed(),
		duration:       time.Duration(w.GetDurationMs()) * time.Millisecond,
		maxRPCs:        w.GetMaxRpcs(),
		warmup:         time.Duration(w.GetWarmupMs()) * time.Millisecond,
		burstInterval:  time.Duration(w.GetBurstIntervalUs()) * time.Microsecond,
		burstJitter:    time.Duration(w.GetBurstJitterUs()) * time.Microsecond,
	}
	if ns := w.GetStartUnixNs(); ns < 0 {
		return nil, invalid("client.start_unix_ns", ns, "expected a Unix time in ns, or 0 to start at once")
	} else if ns > 0 {
		s.startAt = time.Unix(0, ns)
	}
	if math.IsNaN(s.rate) || math.IsInf(s.rate, 0) || s.rate < 0 {
		return nil, invalid("client.rate_rps", s.rate, "expected a non-negative RPC rate per second")
	}
	switch w.GetArrivals() {
	case "", "poisson":
		if s.burstInterval == 0 && s.rate == 0 {
			return nil, invalid("client.rate_rps", s.rate, "poisson arrivals need a positive rate (or burst_interval_us for bursts)")
		}
		if s.burstInterval > 0 && s.burstJitter >= s.burstInterval {
			return nil, invalid("client.burst_jitter_us", w.GetBurstJitterUs(), "expected less than burst_interval_us %d", w.GetBurstIntervalUs())
		}
	case "closed":
		s.closed = true
		if s.maxOutstanding < 1 {
			return nil, invalid("client.max_outstanding", s.maxOutstanding, "closed-loop arrivals need at least 1 outstanding RPC")
		}
		if s.burstInterval > 0 {
			return nil, invalid("client.burst_interval_us", w.GetBurstIntervalUs(), "bursts are an open-loop schedule: use arrivals \"poisson\"")
		}
	default:
		return nil, invalid("client.arrivals", w.GetArrivals(), "expected \"poisson\" or \"closed\"")
	}
	if len(w.GetTargets()) == 0 {
		return nil, invalid("client.targets", "", "expected at least one server \"ip:port\"")
	}
	for _, t := range w.GetTargets() {
		host, port, err := net.SplitHostPort(t)
		if err != nil || net.ParseIP(host) == nil {
			return nil, invalid("client.targets", t, "expected \"ip:port\"")
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return nil, invalid("client.targets", t, "port must be 1..65535")
		}
		s.targets = append(s.targets, t)
	}
	if s.respBytes > maxResponse {
		return nil, invalid("client.response_bytes", s.respBytes, "at most %d", maxResponse)
	}
	if s.duration > 0 && s.warmup >= s.duration {
		return nil, invalid("client.warmup_ms", w.GetWarmupMs(), "expected less than duration_ms %d", w.GetDurationMs())
	}
	return s, nil
}
