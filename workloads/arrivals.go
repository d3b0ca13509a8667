package workloads

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Schedule yields the intended send times of an open-loop client as offsets
// from the client's start. The schedule never looks at completions, so a
// slow server cannot slow the offered load down (no coordinated omission).
type Schedule interface {
	// Next returns the offset of the next intended send.
	Next(r *rand.Rand) time.Duration
}

// Poisson is an open-loop Poisson arrival process.
type Poisson struct {
	rate float64 // RPCs per second
	at   float64 // seconds since start of the last arrival
}

// NewPoisson returns Poisson arrivals at rateRPS requests per second.
func NewPoisson(rateRPS float64) (*Poisson, error) {
	if !(rateRPS > 0) || math.IsInf(rateRPS, 0) {
		return nil, fmt.Errorf("poisson rate %v RPC/s: expected a positive finite rate", rateRPS)
	}
	return &Poisson{rate: rateRPS}, nil
}

// Next advances by an exponential inter-arrival time. Offsets accumulate in
// float seconds so that rounding to nanoseconds does not bias the rate.
func (p *Poisson) Next(r *rand.Rand) time.Duration {
	p.at += r.ExpFloat64() / p.rate
	return time.Duration(p.at * 1e9)
}

// Bursts sends at fixed instants k*interval (plus a uniform jitter in
// [0, jitter)), the same for every client that shares the start time, so N
// clients form an incast burst.
type Bursts struct {
	interval, jitter time.Duration
	k                int64
}

// NewBursts returns a burst schedule; jitter must be below the interval.
func NewBursts(interval, jitter time.Duration) (*Bursts, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("burst interval %v: expected a positive interval", interval)
	}
	if jitter < 0 || jitter >= interval {
		return nil, fmt.Errorf("burst jitter %v: expected 0 <= jitter < interval %v", jitter, interval)
	}
	return &Bursts{interval: interval, jitter: jitter}, nil
}

// Next returns the next burst instant.
func (b *Bursts) Next(r *rand.Rand) time.Duration {
	t := time.Duration(b.k) * b.interval
	b.k++
	if b.jitter > 0 {
		t += time.Duration(r.Int64N(int64(b.jitter)))
	}
	return t
}
