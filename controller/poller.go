package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/homatb/homatb/controller/p4rtclient"
	"github.com/homatb/homatb/p4"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/homatb/homatb/rundir"
)

// Sample is the state of one (switch, port, queue) at one instant: one row
// of telemetry.csv without its experiment.
type Sample = rundir.TelemetrySample

// pollTarget is one switch a Poller reads.
type pollTarget struct {
	Name   string
	Client *p4rtclient.Client
	// Ports to sample (all 8 queues of each).
	Ports []int
}

// Poller samples switch counters and registers at a fixed interval into an
// in-memory time series.
type Poller struct {
	targets  []pollTarget
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	samples []Sample
	// emit, when set, takes each sample's rows instead of samples (a long
	// run's series is written as it goes, not held).
	emit   func([]Sample)
	noRegs map[string]bool // switches without register reads (BMv2)
}

// newPoller returns a poller of the targets; interval must be positive.
// The clients need a schema (SetPipeline or FetchPipeline).
func newPoller(targets []pollTarget, interval time.Duration, log *slog.Logger) (*Poller, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("poller: interval %v must be positive", interval)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, t := range targets {
		for _, p := range t.Ports {
			if p < 0 || p > p4.MaxPort {
				return nil, fmt.Errorf("poller: switch %q: port %d outside 0..%d", t.Name, p, p4.MaxPort)
			}
		}
	}
	return &Poller{targets: targets, interval: interval, log: log, noRegs: map[string]bool{}}, nil
}

// NewPoller returns a poller of every switch of the fabric and its ports.
func (f *Switches) NewPoller(interval time.Duration) (*Poller, error) {
	var targets []pollTarget
	for _, sw := range f.topo.Switches {
		targets = append(targets, pollTarget{Name: sw.Name, Client: f.clients[sw.Name], Ports: f.topo.switchPorts(sw.Name)})
	}
	p, err := newPoller(targets, interval, f.log)
	if err != nil {
		return nil, err
	}
	// BMv2 is known not to read registers over P4Runtime: do not try (and
	// warn) again in every experiment.
	for _, sw := range f.topo.Switches {
		if sw.Target == TargetBMv2 {
			p.noRegs[sw.Name] = true
		}
	}
	return p, nil
}

// Run samples every interval until ctx ends, then takes one last sample (with
// a short fresh deadline) so the series ends at the switches' final counts.
// A failed sample is logged and skipped: a switch restarting mid-run must
// not end the time series.
func (p *Poller) Run(ctx context.Context) error {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		if err := p.sampleOnce(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("telemetry sample failed", "err", err)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := p.sampleOnce(fctx); err != nil {
				return fmt.Errorf("telemetry: final sample: %w", err)
			}
			return nil
		}
	}
}

// sampleOnce reads every target once and appends the rows. Targets are read
// one after another; each row carries the time its switch was read.
func (p *Poller) sampleOnce(ctx context.Context) error {
	var rows []Sample
	for _, t := range p.targets {
		r, err := p.sampleTarget(ctx, t)
		if err != nil {
			return fmt.Errorf("switch %q: %w", t.Name, err)
		}
		rows = append(rows, r...)
	}
	p.mu.Lock()
	emit := p.emit
	if emit == nil {
		p.samples = append(p.samples, rows...)
	}
	p.mu.Unlock()
	if emit != nil {
		emit(rows)
	}
	return nil
}

// Stream hands each sample's rows to emit, from Run's goroutine, instead
// of keeping them for Samples; set it before Run.
func (p *Poller) Stream(emit func([]Sample)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit = emit
}

func (p *Poller) sampleTarget(ctx context.Context, t pollTarget) ([]Sample, error) {
	p.mu.Lock()
	withRegs := !p.noRegs[t.Name]
	p.mu.Unlock()
	now := time.Now().UnixNano()
	st, err := readQueueState(ctx, t.Client, t.Ports, withRegs)
	if withRegs && status.Code(err) == codes.Unimplemented {
		// BMv2 cannot read registers over P4Runtime; keep the counters.
		p.log.Warn("switch cannot read registers over P4Runtime: depth, peak and delay stay 0", "switch", t.Name)
		p.mu.Lock()
		p.noRegs[t.Name] = true
		p.mu.Unlock()
		now = time.Now().UnixNano()
		st, err = readQueueState(ctx, t.Client, t.Ports, false)
	}
	if err != nil {
		return nil, err
	}
	enqBy, sentBy, regs := st.counters[counterIngressQueue], st.counters[counterEgressQueue], st.registers
	rows := make([]Sample, 0, len(t.Ports)*p4.QueuesPerPort)
	for _, port := range t.Ports {
		for q := range p4.QueuesPerPort {
			i := int64(p4.QueueIndex(uint16(port), uint8(q)))
			rows = append(rows, Sample{
				Switch: t.Name, UnixNano: now, Port: port, Queue: q,
				EnqPkts: enqBy[i].Packets, EnqBytes: enqBy[i].Bytes,
				SentPkts: sentBy[i].Packets, SentBytes: sentBy[i].Bytes,
				DepthPkts: regs[registerQueueDepth][i], PeakPkts: regs[registerQueuePeak][i], DelayUS: regs[registerQueueDelay][i],
			})
		}
	}
	return rows, nil
}

// queueState is one read of the per-(port, queue) counters and registers,
// by object name and index.
type queueState struct {
	counters  map[string]map[int64]p4rtclient.CounterValue
	registers map[string]map[int64]uint64
}

// readQueueState reads both queue counters and (withRegs) the three queue
// registers at the indices of the given ports' queues, in one Read request:
// one round trip per sample, and only the cells that exist (a 4-port switch
// uses 32 of the 512 indices), keep the poller's share of two shared vCPUs
// small.
func readQueueState(ctx context.Context, c *p4rtclient.Client, ports []int, withRegs bool) (queueState, error) {
	s, err := c.NeedSchema()
	if err != nil {
		return queueState{}, err
	}
	var indices []*p4v1.Index
	for _, port := range ports {
		for q := range p4.QueuesPerPort {
			indices = append(indices, &p4v1.Index{Index: int64(p4.QueueIndex(uint16(port), uint8(q)))})
		}
	}
	names := map[uint32]string{}
	var ents []*p4v1.Entity
	for _, name := range []string{counterIngressQueue, counterEgressQueue} {
		ctr, err := s.Counter(name)
		if err != nil {
			return queueState{}, err
		}
		names[ctr.GetPreamble().GetId()] = name
		for _, i := range indices {
			ents = append(ents, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: ctr.GetPreamble().GetId(), Index: i}}})
		}
	}
	if withRegs {
		for _, name := range []string{registerQueueDepth, registerQueuePeak, registerQueueDelay} {
			reg, err := s.Register(name)
			if err != nil {
				return queueState{}, err
			}
			names[reg.GetPreamble().GetId()] = name
			for _, i := range indices {
				ents = append(ents, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: reg.GetPreamble().GetId(), Index: i}}})
			}
		}
	}
	got, err := c.Read(ctx, ents...)
	if err != nil {
		return queueState{}, err
	}
	st := queueState{counters: map[string]map[int64]p4rtclient.CounterValue{}, registers: map[string]map[int64]uint64{}}
	for _, name := range names {
		st.counters[name] = map[int64]p4rtclient.CounterValue{}
		st.registers[name] = map[int64]uint64{}
	}
	for _, ent := range got {
		if ce := ent.GetCounterEntry(); ce != nil {
			i := ce.GetIndex().GetIndex()
			st.counters[names[ce.GetCounterId()]][i] = p4rtclient.CounterValue{Index: i, Packets: ce.GetData().GetPacketCount(), Bytes: ce.GetData().GetByteCount()}
		}
		if re := ent.GetRegisterEntry(); re != nil {
			v, err := p4rtclient.Value(re.GetData().GetBitstring()).Uint64()
			if err != nil {
				return queueState{}, fmt.Errorf("register %q[%d]: %w", names[re.GetRegisterId()], re.GetIndex().GetIndex(), err)
			}
			st.registers[names[re.GetRegisterId()]][re.GetIndex().GetIndex()] = v
		}
	}
	return st, nil
}

// Samples returns a copy of the time series so far.
func (p *Poller) Samples() []Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Sample(nil), p.samples...)
}

// WriteCSV writes the series as telemetry.csv rows for one experiment,
// with the header.
func (p *Poller) WriteCSV(w io.Writer, experiment string) error {
	return rundir.WriteTelemetry(w, experiment, p.Samples(), true)
}

// QueueCounters reads one switch's per-(port, queue) counters once, without
// the registers: on BMv2, which cannot read registers over P4Runtime, they
// are the statistics tor.p4 gives. Rows are in port, then queue order.
func (f *Switches) QueueCounters(ctx context.Context, name string) ([]Sample, error) {
	c := f.clients[name]
	if c == nil {
		return nil, fmt.Errorf("queue counters: no switch %q", name)
	}
	p := &Poller{log: f.log, noRegs: map[string]bool{name: true}}
	return p.sampleTarget(ctx, pollTarget{Name: name, Client: c, Ports: f.topo.switchPorts(name)})
}
