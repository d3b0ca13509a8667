package pipeline

import (
	"fmt"
	"sync/atomic"

	"github.com/homatb/homatb/p4"
)

// Colours v1model's execute_meter returns.
const (
	ColorGreen  = 0
	ColorYellow = 1
	ColorRed    = 2
)

// MeterConfig is one meter cell's P4Runtime MeterConfig: committed and
// peak rates in the meter's unit per second (bytes for priority_meter) and
// their bursts in the unit. The zero config leaves the cell unconfigured,
// which marks every packet green (P4Runtime's default).
type MeterConfig struct {
	CIR, CBurst, PIR, PBurst int64
}

// Limits of a MeterConfig this target accepts: the token arithmetic counts
// nanobytes in an int64.
const (
	MaxMeterRate  = 1 << 40 // bytes per second, ~8.8 Tbit/s
	MaxMeterBurst = 1 << 32 // bytes
)

// Check reports whether the target can run c.
func (c MeterConfig) Check() error {
	for _, v := range [...]struct {
		name     string
		val, max int64
	}{{"cir", c.CIR, MaxMeterRate}, {"cburst", c.CBurst, MaxMeterBurst}, {"pir", c.PIR, MaxMeterRate}, {"pburst", c.PBurst, MaxMeterBurst}} {
		if v.val < 0 || v.val > v.max {
			return fmt.Errorf("%s %d: expected 0..%d", v.name, v.val, v.max)
		}
	}
	if c.PIR < c.CIR {
		return fmt.Errorf("pir %d below cir %d: a two-rate meter's peak rate is at least its committed rate", c.PIR, c.CIR)
	}
	return nil
}

// meterCell is one cell of priority_meter: a two-rate three-colour marker
// (RFC 2698, colour-blind), as v1model's meter is in BMv2. Only the
// ingress port the cell belongs to executes it (its index holds the port),
// so its token state has one writer; the atomics keep the control plane's
// concurrent reconfiguration race-free.
type meterCell struct {
	cir, cburst, pir, pburst atomic.Int64
	// tc and tp are the buckets in nanobytes (bytes × 1e9), so a refill
	// is rate × elapsed ns with no division.
	tc, tp atomic.Int64
	last   atomic.Int64 // clock of the last packet or configuration, ns
}

const nano = 1_000_000_000

func (m *meterCell) set(c MeterConfig, now int64) {
	m.cir.Store(c.CIR)
	m.cburst.Store(c.CBurst)
	m.pir.Store(c.PIR)
	m.pburst.Store(c.PBurst)
	m.tc.Store(c.CBurst * nano)
	m.tp.Store(c.PBurst * nano)
	m.last.Store(now)
}

func (m *meterCell) config() MeterConfig {
	return MeterConfig{CIR: m.cir.Load(), CBurst: m.cburst.Load(), PIR: m.pir.Load(), PBurst: m.pburst.Load()}
}

// execute meters a packet of n bytes at now and returns its colour.
func (m *meterCell) execute(now int64, n int) int {
	pir, cir := m.pir.Load(), m.cir.Load()
	if pir == 0 && cir == 0 && m.pburst.Load() == 0 {
		return ColorGreen // unconfigured
	}
	elapsed := max(now-m.last.Load(), 0)
	tp := refill(m.tp.Load(), pir, m.pburst.Load(), elapsed)
	tc := refill(m.tc.Load(), cir, m.cburst.Load(), elapsed)
	b := int64(n) * nano
	color := ColorGreen
	switch {
	case tp < b:
		color = ColorRed
	case tc < b:
		color = ColorYellow
		tp -= b
	default:
		tp -= b
		tc -= b
	}
	m.tp.Store(tp)
	m.tc.Store(tc)
	m.last.Store(now)
	return color
}

// refill adds rate × elapsed to a bucket of tok nanobytes, up to burst
// bytes; the comparison by division keeps the product from overflowing.
func refill(tok, rate, burst, elapsed int64) int64 {
	full := burst * nano
	if tok >= full || rate == 0 {
		return min(tok, full)
	}
	if elapsed > (full-tok)/rate {
		return full
	}
	return tok + rate*elapsed
}

// SetMeter writes one cell's configuration (P4Runtime MeterEntry MODIFY)
// and fills its buckets.
func (p *Pipeline) SetMeter(id uint32, index int, c MeterConfig) error {
	if id != p4.MeterPriority {
		return fmt.Errorf("meter %#08x: %w", id, ErrUnknownObject)
	}
	if index < 0 || index >= len(p.meters) {
		return fmt.Errorf("meter %#08x index %d: %w", id, index, ErrIndex)
	}
	if err := c.Check(); err != nil {
		return fmt.Errorf("meter %#08x index %d: %w", id, index, err)
	}
	p.meters[index].set(c, p.clock())
	return nil
}

// Meter reads one cell's configuration.
func (p *Pipeline) Meter(id uint32, index int) (MeterConfig, error) {
	if id != p4.MeterPriority {
		return MeterConfig{}, fmt.Errorf("meter %#08x: %w", id, ErrUnknownObject)
	}
	if index < 0 || index >= len(p.meters) {
		return MeterConfig{}, fmt.Errorf("meter %#08x index %d: %w", id, index, ErrIndex)
	}
	return p.meters[index].config(), nil
}

// DefenceCounters reads remark_counter, meter_counter and spoof_counter
// of ingress port inPort (packets).
func (p *Pipeline) DefenceCounters(inPort uint16) (remarked, metered, spoofed uint64) {
	if inPort >= p4.PortSlots {
		return 0, 0, 0
	}
	return p.remarkCtr[inPort].pkts.Load(), p.meterCtr[inPort].pkts.Load(), p.spoofCtr[inPort].pkts.Load()
}
