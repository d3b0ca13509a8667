package simulate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/simnet"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/scenario"
)

// The parts below are what testbed's run drives in an emulated run, here
// on the simulated network: each host's agent and each switch's
// statistics, acting on the experiment Begin prepared. So one experiment
// body serves both clocks.

// Agent is a simulated host's agent: its Configure sets up the host's
// drivers on the experiment's network, and its Stop lets the drain pass
// in virtual time.
type Agent struct {
	n    *Network
	host string
}

// Agent is host's simulated agent.
func (r *Network) Agent(host string) *Agent { return &Agent{n: r, host: host} }

// Configure adds the host's workload (its client, its parts in
// collectives) on the request's transport to the experiment.
func (a *Agent) Configure(_ context.Context, req *agentpb.ConfigureRequest) error {
	j := a.n.cur
	if j == nil {
		return fmt.Errorf("%s: no experiment begun", a.host)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	// No transport's longest message bounds the simulated hosts'.
	hc, err := driver.ConfigOf(req, j.transportOf(req.GetTransport() == agentpb.Transport_TRANSPORT_TCP), math.MaxInt32, j.shared)
	if err != nil {
		return fmt.Errorf("%s: %w", a.host, err)
	}
	hc.Experiment, hc.Host, hc.Log = j.name, a.host, j.log
	j.configured[a.host+" "+hc.Transport] = hc
	return nil
}

// Start has nothing to do: the drivers start as the experiment's virtual
// time does (Network.Run), all at once in the layout's order.
func (a *Agent) Start(context.Context) error { return nil }

// Stop lets the experiment's drain pass (once, for every host) and
// returns the host's books and counters.
func (a *Agent) Stop(_ context.Context, drain time.Duration) (*agentpb.Counters, error) {
	j := a.n.cur
	if j == nil {
		return nil, fmt.Errorf("%s: no experiment begun", a.host)
	}
	if err := j.finish(drain); err != nil {
		return nil, err
	}
	return j.counters[a.host], nil
}

// Status returns the host's counters as the experiment left them.
func (a *Agent) Status(ctx context.Context) (*agentpb.StatusReply, error) {
	c, err := a.Stop(ctx, 0)
	return &agentpb.StatusReply{Counters: c}, err
}

// Fetch hands over the host's records of a calibration. An experiment's
// it has none: the simulated network writes them into the run's files as
// they become final, in the order issued across the hosts
// (Config.Records).
func (a *Agent) Fetch(_ context.Context, _, file string, w io.Writer) error {
	c, ok := a.n.cur.out.(*collected)
	if !ok || file != agentpb.FileRecords {
		return nil
	}
	cw, err := rundir.RPCs().NewWriter(w, true)
	for i := range c.rows {
		if err == nil && c.rows[i].Client == a.host {
			err = cw.Write(&c.rows[i])
		}
	}
	if err != nil {
		return err
	}
	return cw.Flush()
}

// FollowGauges has no series: the simulator does not sample the hosts
// over time (the model says so).
func (a *Agent) FollowGauges(context.Context, string, time.Duration, func(rundir.HostSample) error) error {
	return nil
}

// Shutdown has no process to end.
func (a *Agent) Shutdown(context.Context) {}

// SwitchStats is a simulated switch's statistics endpoint: the
// experiment's network's counters, its faults and its postcards.
type SwitchStats struct {
	n    *Network
	name string
}

// SwitchStats is switch name's statistics endpoint.
func (r *Network) SwitchStats(name string) *SwitchStats { return &SwitchStats{n: r, name: name} }

// ResetWindow has nothing to reset: each experiment has a fresh network.
func (s *SwitchStats) ResetWindow(context.Context) error { return nil }

// Fetch returns the switch's statistics on the experiment's network.
func (s *SwitchStats) Fetch(context.Context) (rundir.SwitchStats, error) {
	j := s.n.cur
	if j == nil {
		return rundir.SwitchStats{}, nil
	}
	if j.stats == nil || j.statsAt != j.net.Clock().Now() {
		j.stats, j.statsAt = j.net.SwitchStats(), j.net.Clock().Now()
	}
	return j.stats[s.name], nil
}

// SetFault sets loss on the link behind one of the switch's ports, or
// takes it down from now for its window. Settings of no loss and no
// window, which clear a fault, have nothing to undo: each experiment has a
// network of its own.
func (s *SwitchStats) SetFault(_ context.Context, fs switchstats.FaultSetting) error {
	j := s.n.cur
	if j == nil {
		return fmt.Errorf("switch %s: no experiment begun", s.name)
	}
	host, peer := s.n.behind(s.name, fs.Port)
	if host == "" && peer == "" {
		return fmt.Errorf("switch %s has no link on port %d", s.name, fs.Port)
	}
	if fs.DropProb != nil && *fs.DropProb > 0 {
		// out is the loss of what the switch sends on the port, in of
		// what it receives there.
		out, in := *fs.DropProb, *fs.DropProb
		var err error
		switch *fs.Direction {
		case switchstats.DirectionEgress:
			in = 0
		case switchstats.DirectionIngress:
			out = 0
		}
		if host == "" {
			err = j.net.SetLinkLoss(s.name, peer, out, in)
		} else {
			err = j.net.SetLoss(host, out, in)
		}
		if err != nil {
			return err
		}
	}
	if fs.DownFor == nil {
		return nil
	}
	d, err := time.ParseDuration(*fs.DownFor)
	if err != nil || d <= 0 {
		return err
	}
	now := j.net.Clock().Now()
	if host == "" {
		return j.net.SetLinkDown(s.name, peer, now, now+d.Nanoseconds())
	}
	return j.net.SetDown(host, now, now+d.Nanoseconds())
}

// behind is what port of switch sw leads to: a host, or another switch.
func (r *Network) behind(sw string, port uint16) (host, peer string) {
	for _, h := range r.layout.Hosts {
		if h.Switch == sw && uint16(h.Port) == port {
			return h.Name, ""
		}
	}
	for _, l := range r.layout.Links {
		if l.A == sw && uint16(l.APort) == port {
			return "", l.B
		}
		if l.B == sw && uint16(l.BPort) == port {
			return "", l.A
		}
	}
	return "", ""
}

// StartPostcards writes the switch's postcards of the experiment into
// path, as the embedded switch does.
func (s *SwitchStats) StartPostcards(_ context.Context, path string) error {
	j := s.n.cur
	if j == nil {
		return fmt.Errorf("switch %s: no experiment begun", s.name)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	pc := &postcards{f: f, w: bufio.NewWriterSize(f, 1<<16)}
	if _, err := pc.w.Write(switchstats.AppendPostcardHeader(nil, j.epoch.UnixNano())); err != nil {
		return errors.Join(err, f.Close())
	}
	if j.cards == nil {
		j.cards = map[string]*postcards{}
		j.net.OnPostcard(func(sw string, p *switchstats.Postcard) {
			if pc := j.cards[sw]; pc != nil {
				pc.write(p)
			}
		})
	}
	j.cards[s.name] = pc
	return nil
}

// StopPostcards closes the switch's postcards.
func (s *SwitchStats) StopPostcards(context.Context) (switchstats.PostcardSummary, error) {
	j := s.n.cur
	if j == nil || j.cards[s.name] == nil {
		return switchstats.PostcardSummary{}, nil
	}
	pc := j.cards[s.name]
	delete(j.cards, s.name)
	return switchstats.PostcardSummary{Records: pc.n}, errors.Join(pc.err, pc.w.Flush(), pc.f.Close())
}

// postcards is one switch's postcards file.
type postcards struct {
	f   *os.File
	w   *bufio.Writer
	rec [switchstats.PostcardLen]byte
	n   uint64
	err error
}

func (pc *postcards) write(p *switchstats.Postcard) {
	p.Encode(&pc.rec)
	pc.n++
	if _, err := pc.w.Write(pc.rec[:]); err != nil && pc.err == nil {
		pc.err = err
	}
}

// Begin prepares experiment e with roles ro (planned from NextEpoch: its
// clients start at virtual time 0) on a fresh network: the agents'
// Configure then adds the hosts' workloads. It returns the clock the
// experiment's timed faults run on and the fidelity notes of what the
// simulator models.
func (r *Network) Begin(_ context.Context, e *scenario.Experiment, ro agents.Roles) (driver.Scheduler, []string, error) {
	s := e.Scenario
	net, err := r.network(e.Seed)
	if err != nil {
		return nil, nil, err
	}
	tcp, err := r.tcpConfig(e.Transport)
	if err != nil {
		return nil, nil, err
	}
	j := &job{name: e.Name, transport: e.Transport.Name, net: net, cfg: r.homaConfig(e.Transport), tcp: tcp, nicPrio: e.Transport.TCP.NICPriorities,
		servers: ro.Servers, length: s.Warmup.D() + s.Duration.D(), epoch: time.Unix(0, ro.Start).UTC(), log: r.log,
		oneWay: s.OneWay(), byIP: byIP(net), shared: driver.NewShared(), out: r.out, bookServed: true, configured: map[string]driver.Config{}}
	fidelity := modelNote(e.Transport, tcp)
	for _, f := range s.Faults {
		// What the twin adds to the fault's own note ("fault injected: ...").
		if _, _, switchLink := f.SwitchLink(); f.Down != nil && switchLink {
			fidelity = append(fidelity, "a switch link down: the simulated controller moves the paths off it the instant it goes down and back the instant it comes up (no convergence delay)")
			break
		}
	}
	notes, err := r.stack(j, e) // shared.go
	if err != nil {
		return nil, nil, err
	}
	fidelity = append(fidelity, notes...)
	if j.oneWay {
		fidelity = append(fidelity, "one-way messages: each ends when its last byte reaches the receiver, on the simulator's one clock; the sender learns of it at that instant and at no cost on the wire (no response, no ACK), which the emulation could not do")
	}
	// The drivers start in the layout's order, a shared experiment's part
	// by part.
	for _, h := range ro.Used {
		j.order = append(j.order, h+" "+j.transport)
	}
	if ro.Parts != nil {
		j.order = nil
		for k, p := range ro.Parts {
			for _, h := range p.Used {
				j.order = append(j.order, h+" "+e.Transports[k].Name)
			}
		}
	}
	r.cur = j
	r.live.Store(&liveExperiment{clock: net.Clock(), start: net.Clock().Now(), total: s.Warmup.D() + s.Duration.D() + s.Drain.D()})
	return driver.OnQueue(net.Clock(), ro.Start), fidelity, nil
}

// liveExperiment is what Progress reads of the experiment under way.
type liveExperiment struct {
	clock *simnet.Clock
	start int64         // its clock's time at Begin
	total time.Duration // its warm-up, measurement and drain
}

// Progress is how far the experiment under way has gone in virtual time
// of its warm-up, measurement and drain (the drain may end early, once
// nothing is left in flight), and the events its network has run: safe
// from any goroutine, for reports of a long run's progress. ok is false
// between experiments.
func (r *Network) Progress() (done, total time.Duration, events uint64, ok bool) {
	l := r.live.Load()
	if l == nil {
		return 0, 0, 0, false
	}
	now, events := l.clock.Progress()
	return time.Duration(max(now-l.start, 0)), l.total, events, true
}

// Run lets the experiment's warm-up and duration pass in virtual time
// (the clients start at once). When ctx ends first (the run's --timeout),
// the network's clock stops: the events not yet run are left, the
// experiment ends as an interrupted one does and Run returns ctx's cause.
func (r *Network) Run(ctx context.Context) error {
	release := context.AfterFunc(ctx, r.cur.net.Clock().Stop)
	defer release()
	if err := r.cur.start(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// End ends the experiment: its network's events are booked and it is
// released.
func (r *Network) End() {
	if j := r.cur; j != nil {
		r.log.Info("simulated", "experiment", j.name, "events", j.net.Clock().Events())
		r.finishJob(j)
		r.cur = nil
		r.live.Store(nil)
	}
}
