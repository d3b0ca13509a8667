// Package faults injects a scenario's faults into an experiment
// (docs/scenarios.md, faults): loss on a host's link for the whole
// experiment, link-down windows and agent kills at their times in the
// measurement, an agent's restart, and the books of a killed agent: the
// records it had written, and failed rows for the RPCs it took with it,
// so the experiment's books balance. It reaches the run only through Env.
package faults

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
)

// The errors recorded for the RPCs of a client agent that fault injection
// killed before their records were written: in flight at the kill (as far
// as its last Status tells), or finished by then with the record lost.
const (
	AgentKilledReason           = "agent killed by fault injection"
	AgentKilledUnrecordedReason = "agent killed by fault injection: finished, record lost"
)

// Agent is a host's agent as fault injection uses it (the run's agents
// are).
type Agent interface {
	Status(ctx context.Context) (*agentpb.StatusReply, error)
	// Shutdown closes the connection (the agent is gone by then).
	Shutdown(ctx context.Context)
}

// Env is the run as fault injection reaches it.
type Env interface {
	// Port is the switch and port host hangs off, or for a leaf-spine link
	// ("l1-p2") the leaf's port toward the spine; an error when there is no
	// such host or link or its switch takes no faults.
	Port(host string) (sw string, port uint16, err error)
	// Reroute tells the controller that the link between leaf and spine is
	// down (or up again): it moves the leaves' next-hop groups off (or
	// back onto) it.
	Reroute(ctx context.Context, leaf, spine string, down bool) error
	// SetFault changes the fault settings of one port of switch sw.
	SetFault(ctx context.Context, sw string, fs switchstats.FaultSetting) error
	// Agent is host's agent, nil when it is down.
	Agent(host string) Agent
	// Down reports whether host's agent was killed (in this experiment or
	// an earlier one) and not started again.
	Down(host string) bool
	// Kill takes host's agent out of the run and kills its process with
	// SIGKILL, its exit expected; exited says whether the runner reported
	// the exit within 3 s.
	Kill(ctx context.Context, host string) (exited bool, err error)
	// Restart starts host's agent again within the experiment, configures
	// it for the experiment with client workload w (nil: only its servers)
	// and starts w; on an error the new agent is gone again.
	Restart(ctx context.Context, host string, w *agentpb.Workload) error
	// StartAgent starts host's agent again between experiments.
	StartAgent(ctx context.Context, host string) error
	// RecordsPath is the file host's agent writes its records of this
	// experiment to as they finish.
	RecordsPath(host string) string
}

// Experiment is the experiment faults are injected into.
type Experiment struct {
	*scenario.Experiment
	// Clients are the client workloads by host, Servers the serving hosts,
	// Used the hosts taking part in the layout's order.
	Clients map[string]*agentpb.Workload
	Servers map[string]bool
	Used    []string
	// Start is when the clients begin; the measurement begins a warm-up
	// later.
	Start time.Time
}

// Run is the fault injection of one experiment: loss set on the faulted
// links from the clients' start until after the drain, link-down windows
// and agent kills at their times in the measurement, as events on the
// run's clock.
type Run struct {
	env    Env
	x      Experiment
	log    *slog.Logger
	cancel context.CancelFunc
	events []driver.Event
	// applying is held while a timed fault is applied; ended, under it,
	// says End has returned and no fault applies any more.
	applying sync.Mutex
	ended    bool
	ports    map[portRef]bool // ports whose settings Clear undoes
	// rerouted are the leaf-spine links the controller took out of its
	// paths and has not taken back (Clear does).
	rerouted map[string]scenario.Fault

	mu       sync.Mutex
	killed   map[string]*killedAgent
	warnings []string
}

// portRef is one switch port.
type portRef struct {
	sw   string
	port uint16
}

// killedAgent is what is known of an agent killed in this experiment.
// A timed fault's event fills it; the experiment's steps read it only
// after End has waited for the event under way.
type killedAgent struct {
	at      time.Duration // into the measurement
	restart bool
	// last is the agent's Status counters just before the kill (nil if it
	// did not answer, lastErr says why).
	last    *agentpb.Counters
	lastErr error
	// records is the agent's records file, moved aside once it had exited
	// (a restarted agent starts its own anew) and read back only when the
	// experiment's records are collected; recordsLen are its whole rows'
	// bytes, counted by outcome; lost are the rows standing for its RPCs
	// without one, for rpcs.csv.
	records           string
	recordsLen        int64
	completed, failed uint64
	recordsErr        error
	lost              [][]byte
	restartedAfter    time.Duration // how long it was down; 0: not restarted
	restartErr        error
}

// timedFault is a down window or a kill at its time in the measurement;
// up marks the end of a down window on a link between switches, when the
// controller takes the link back.
type timedFault struct {
	at time.Duration
	f  scenario.Fault
	up bool
}

// Start sets the loss faults now and schedules the timed ones on sched
// from the start of the measurement (the clients' start plus the
// warm-up); sched may run them on any goroutine, one at a time. Its
// notes are the experiment's fidelity lines: the faults injected and the
// agents down since an earlier experiment. A loss the switch refuses is
// an error (the experiment would not measure what the scenario asks); the
// Run returned is then one with nothing scheduled, for Clear.
func Start(ctx context.Context, env Env, x Experiment, sched driver.Scheduler, log *slog.Logger) (fr *Run, notes []string, err error) {
	fr = &Run{env: env, x: x, log: log, cancel: func() {}, ports: map[portRef]bool{}, killed: map[string]*killedAgent{},
		rerouted: map[string]scenario.Fault{}}
	var timed []timedFault
	for _, f := range x.Scenario.Faults {
		notes = append(notes, "fault injected: "+Describe(f))
		switch f.Kind() {
		case "loss":
			p, err := fr.port(f.Link)
			if err != nil {
				return fr, notes, err
			}
			dir := lossDirection(f.LossDirection())
			fr.ports[p] = true
			if err := env.SetFault(ctx, p.sw, switchstats.FaultSetting{Port: p.port, DropProb: f.Loss, Direction: &dir}); err != nil {
				return fr, notes, fmt.Errorf("fault on %s's link: %w", f.Link, err)
			}
		case "down":
			timed = append(timed, timedFault{at: f.Down.At.D(), f: f})
			if _, _, sw := f.SwitchLink(); sw {
				timed = append(timed, timedFault{at: f.Down.At.D() + f.Down.For.D(), f: f, up: true})
			}
		case "kill_agent":
			timed = append(timed, timedFault{at: f.KillAgent.At.D(), f: f})
		}
	}
	for _, h := range x.Used {
		if !env.Down(h) {
			continue
		}
		var does []string
		if x.Clients[h] != nil {
			does = append(does, "issues none of its RPCs")
		}
		if x.Servers[h] {
			does = append(does, "answers none, so RPCs to it fail")
		}
		notes = append(notes, fmt.Sprintf("agent %s is down (killed by fault injection in an earlier experiment, restart: false): it %s",
			h, strings.Join(does, " and ")))
	}
	// Sorted, so that faults due at one instant apply in the scenario's
	// order.
	slices.SortStableFunc(timed, func(a, b timedFault) int { return int(a.at - b.at) })
	measure := x.Start.Add(x.Scenario.Warmup.D())
	fctx, cancel := context.WithCancel(ctx)
	fr.cancel = cancel
	for _, t := range timed {
		fr.events = append(fr.events, sched.At(measure.Add(t.at).UnixNano(), func() { fr.apply(fctx, t) }))
	}
	return fr, notes, nil
}

// port is the switch port host hangs off.
func (fr *Run) port(host string) (portRef, error) {
	sw, port, err := fr.env.Port(host)
	return portRef{sw, port}, err
}

// apply applies one timed fault, unless End came first.
func (fr *Run) apply(ctx context.Context, t timedFault) {
	fr.applying.Lock()
	defer fr.applying.Unlock()
	if fr.ended || ctx.Err() != nil {
		return
	}
	switch t.f.Kind() {
	case "down":
		if t.up {
			fr.reroute(ctx, t.f, false)
			return
		}
		p, err := fr.port(t.f.Link)
		if err == nil {
			fr.mu.Lock()
			fr.ports[p] = true
			fr.mu.Unlock()
			d := t.f.Down.For.D().String()
			err = fr.env.SetFault(ctx, p.sw, switchstats.FaultSetting{Port: p.port, DownFor: &d})
		}
		if err != nil {
			fr.warn("link %s was not taken down at %s: %v", t.f.Link, t.at, err)
		}
		fr.log.Info("fault: link down", "link", t.f.Link, "at", t.at, "for", t.f.Down.For.D(), "err", err)
		if _, _, sw := t.f.SwitchLink(); sw && err == nil {
			fr.reroute(ctx, t.f, true)
		}
	case "kill_agent":
		fr.kill(ctx, t.f.Link, t.at, t.f.RestartAgent())
	}
}

// reroute has the controller take a leaf-spine link out of the next-hop
// groups (down) or back in, and remembers which links Clear must restore.
func (fr *Run) reroute(ctx context.Context, f scenario.Fault, down bool) {
	leaf, spine, _ := f.SwitchLink()
	err := fr.env.Reroute(ctx, leaf, spine, down)
	fr.mu.Lock()
	if down {
		// Even when it failed: some switches may have moved, and
		// Clear must bring them all back before the next experiment.
		fr.rerouted[f.Link] = f
	} else if err == nil {
		delete(fr.rerouted, f.Link)
	}
	fr.mu.Unlock()
	if err != nil {
		fr.warn("link %s: the controller did not move the paths (down %v): %v", f.Link, down, err)
	}
	fr.log.Info("fault: paths moved", "link", f.Link, "down", down, "err", err)
}

// kill reads the agent's books, then kills it with SIGKILL; its exit is
// expected and the experiment's steps leave it out from then on.
func (fr *Run) kill(ctx context.Context, host string, at time.Duration, restart bool) {
	a := fr.env.Agent(host)
	if a == nil {
		fr.warn("agent %s was not killed at %s: it is already down", host, at)
		return
	}
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	st, err := a.Status(sctx)
	cancel()
	k := &killedAgent{at: at, restart: restart, last: st.GetCounters(), lastErr: err}
	fr.mu.Lock()
	fr.killed[host] = k
	fr.mu.Unlock()
	killed := time.Now()
	// Its records file is final once it has exited; a restarted agent
	// would start it anew.
	exited, err := fr.env.Kill(ctx, host)
	switch {
	case err != nil:
		fr.warn("agent %s: SIGKILL at %s failed: %v", host, at, err)
	case !exited:
		fr.warn("agent %s: no exit reported within 3s of SIGKILL; not restarted within the experiment", host)
	}
	fr.log.Info("fault: agent killed", "host", host, "at", at, "restart", restart)
	a.Shutdown(context.WithoutCancel(ctx)) // closes the connection; the agent is gone
	if fr.x.Clients[host] != nil {
		k.records, k.recordsLen, k.completed, k.failed, k.recordsErr = keepRecords(fr.env.RecordsPath(host))
	}
	if restart && exited && ctx.Err() == nil {
		k.restartErr = fr.restartNow(ctx, host)
		if k.restartErr == nil {
			k.restartedAfter = time.Since(killed)
		}
	}
}

// restartNow starts host's agent again in the middle of the experiment
// and gives it the rest of it: its servers as before and, for a client, a
// workload from now to the end of the measurement with a new seed (so it
// does not replay the arrivals it already made).
func (fr *Run) restartNow(ctx context.Context, host string) error {
	var w *agentpb.Workload
	if orig := fr.x.Clients[host]; orig != nil {
		w = proto.Clone(orig).(*agentpb.Workload)
		s := fr.x.Scenario
		end := time.Unix(0, orig.GetStartUnixNs()).Add(s.Warmup.D() + s.Duration.D())
		start := time.Now().Add(200 * time.Millisecond)
		if left := end.Sub(start); left > 0 {
			w.StartUnixNs, w.WarmupMs, w.DurationMs = start.UnixNano(), 0, uint32(left/time.Millisecond)
			w.Seed++
		} else {
			w = nil // nothing left to send
		}
	}
	if err := fr.env.Restart(ctx, host, w); err != nil {
		return err
	}
	fr.log.Info("fault: agent restarted", "host", host, "client", w != nil)
	return nil
}

// End stops applying timed faults (an interrupted experiment ends
// before its last ones) and waits for the one under way.
func (fr *Run) End() {
	for _, ev := range fr.events {
		ev.Cancel()
	}
	fr.cancel()
	fr.applying.Lock()
	fr.ended = true
	fr.applying.Unlock()
}

// Clear brings every faulted port back to no loss and up, and the
// controller's paths back onto every link it took out.
func (fr *Run) Clear(ctx context.Context) {
	fr.mu.Lock()
	back := slices.Collect(maps.Values(fr.rerouted))
	fr.mu.Unlock()
	for _, f := range back {
		fr.reroute(ctx, f, false)
	}
	zero, egress, up := 0.0, switchstats.DirectionEgress, "0s"
	fr.mu.Lock()
	ports := make([]portRef, 0, len(fr.ports))
	for p := range fr.ports {
		ports = append(ports, p)
	}
	fr.mu.Unlock()
	for _, p := range ports {
		fs := switchstats.FaultSetting{Port: p.port, DropProb: &zero, Direction: &egress, DownFor: &up}
		if err := fr.env.SetFault(ctx, p.sw, fs); err != nil {
			fr.warn("switch %s port %d: fault not cleared, later experiments may see it: %v", p.sw, p.port, err)
		}
	}
}

// Restarted reports whether host's agent was killed and restarted in this
// experiment: its books then cover only its new life. A nil Run has
// restarted none.
func (fr *Run) Restarted(host string) bool {
	if fr == nil {
		return false
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	k := fr.killed[host]
	return k != nil && k.restartedAfter > 0
}

// Warnings are what the experiment's entry should say of its faults: what
// did not go as scheduled, and each killed agent's books.
func (fr *Run) Warnings() []string {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return slices.Clone(fr.warnings)
}

func (fr *Run) warn(format string, args ...any) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.warnings = append(fr.warnings, fmt.Sprintf(format, args...))
}

// lossDirection is the switch's name for a loss direction: the host's
// port sends towards the host (egress) and receives from it (ingress).
func lossDirection(d string) string {
	switch d {
	case scenario.DirectionToHost:
		return switchstats.DirectionEgress
	case scenario.DirectionFromHost:
		return switchstats.DirectionIngress
	}
	return switchstats.DirectionBoth
}

// Describe says what a fault does, for the experiment's entry.
func Describe(f scenario.Fault) string {
	switch f.Kind() {
	case "loss":
		way := map[string]string{scenario.DirectionBoth: "both ways", scenario.DirectionToHost: "towards the host",
			scenario.DirectionFromHost: "from the host"}[f.LossDirection()]
		return fmt.Sprintf("loss %s %s on %s's link for the whole experiment", strconv.FormatFloat(*f.Loss, 'g', -1, 64), way, f.Link)
	case "down":
		if _, _, sw := f.SwitchLink(); sw {
			return fmt.Sprintf("link %s down at %s into the measurement for %s (the controller moves the paths off it and back)", f.Link, f.Down.At.D(), f.Down.For.D())
		}
		return fmt.Sprintf("%s's link down at %s into the measurement for %s", f.Link, f.Down.At.D(), f.Down.For.D())
	case "kill_agent":
		return fmt.Sprintf("agent %s killed at %s into the measurement (restart: %v)", f.Link, f.KillAgent.At.D(), f.RestartAgent())
	}
	return "none"
}

// Books are what the agents killed in an experiment add to its books.
type Books struct {
	// Last are the last counters of each killed agent that was not
	// restarted (a restarted agent's own counters stand for its host).
	Last map[string]*agentpb.Counters
	// The RPCs of the killed clients: those their records hold, and those
	// counted failed with AgentKilledReason or
	// AgentKilledUnrecordedReason.
	Issued, Completed, Failed uint64
}

// Account works out the books of the agents killed in this experiment
// from what is known: the records each had written, and its last Status.
// RPCs it had issued beyond its records were in flight at the kill or
// finished unwritten; they count as failed with AgentKilledReason, and
// rows saying so are kept for AppendKilled, so the books balance. Each
// killed agent's account goes to Warnings. Call it after End.
func (fr *Run) Account() Books {
	x := fr.x
	b := Books{Last: map[string]*agentpb.Counters{}}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	hosts := make([]string, 0, len(fr.killed))
	for h := range fr.killed {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, host := range hosts {
		k := fr.killed[host]
		client := x.Clients[host] != nil
		if k.last != nil && k.restartedAfter == 0 {
			b.Last[host] = k.last
		}
		after := "; the rest of the experiment ran without it"
		switch {
		case k.restartedAfter > 0:
			after = fmt.Sprintf("; it was restarted %s after the kill and ran the rest of the measurement (its new RPCs are counted as any client's)", k.restartedAfter.Round(time.Millisecond))
		case k.restartErr != nil:
			after = fmt.Sprintf("; it could not be restarted (%v), so the rest of the experiment ran without it", k.restartErr)
		}
		if !client {
			fr.warnings = append(fr.warnings, fmt.Sprintf("agent %s (a server) killed by fault injection at %s into the measurement; RPCs to it failed with their clients' reasons%s", host, k.at, after))
			continue
		}
		if k.recordsErr != nil {
			fr.warnings = append(fr.warnings, fmt.Sprintf("agent %s killed: its records: %v", host, k.recordsErr))
		}
		completed, failed := k.completed, k.failed
		rows := completed + failed
		// Of the RPCs its Status had issued beyond its records, those
		// the Status had seen finish lost their record with the agent;
		// the rest were in flight.
		var lost, unrecorded uint64
		if last := k.last; last != nil && last.GetIssued() > rows {
			lost = last.GetIssued() - rows
			if done := last.GetCompleted() + last.GetFailed(); done > rows {
				unrecorded = min(done-rows, lost)
			}
		}
		k.lost = [][]byte{lostRows(x.Name, x.Transport.Name, host, unrecorded, AgentKilledUnrecordedReason),
			lostRows(x.Name, x.Transport.Name, host, lost-unrecorded, AgentKilledReason)}
		b.Issued += rows + lost
		b.Completed += completed
		b.Failed += failed + lost
		msg := fmt.Sprintf("agent %s killed by fault injection at %s into the measurement: rpcs.csv has the %d RPCs it had recorded (%d completed, %d failed)",
			host, k.at, rows, completed, failed)
		switch last := k.last; {
		case last != nil && lost > 0:
			msg += fmt.Sprintf(" and %d more counted failed: its last Status before the kill had issued %d (%d completed, %d failed, %d in flight), so %d had finished without a record yet (reason %q) and %d were in flight (reason %q)",
				lost, last.GetIssued(), last.GetCompleted(), last.GetFailed(), last.GetInFlight(),
				unrecorded, AgentKilledUnrecordedReason, lost-unrecorded, AgentKilledReason)
		case last != nil:
			msg += fmt.Sprintf("; its last Status before the kill had issued %d (%d completed, %d failed, %d in flight), all recorded since; RPCs it issued after that Status and had not finished at the kill are not counted",
				last.GetIssued(), last.GetCompleted(), last.GetFailed(), last.GetInFlight())
		default:
			msg += fmt.Sprintf("; its Status did not answer before the kill (%v), so RPCs it issued beyond those are unaccounted", k.lastErr)
		}
		fr.warnings = append(fr.warnings, msg+after)
	}
	return b
}

// keepRecords counts the whole rows of a killed agent's records file at
// path and moves it aside to kept (path + ".killed"), where AppendKilled
// reads them; none of it is held meanwhile. No file: nothing recorded.
func keepRecords(path string) (kept string, n int64, completed, failed uint64, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", 0, 0, 0, nil
	}
	if err != nil {
		return "", 0, 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, 0, 0, err
	}
	n, completed, failed = salvageRecords(f, fi.Size(), path)
	kept = path + ".killed"
	if err := os.Rename(path, kept); err != nil {
		return "", 0, 0, 0, err
	}
	return kept, n, completed, failed, nil
}

// salvageRecords finds the whole rows of a killed agent's records file of
// size bytes (its last write may be cut), reading it as it goes, and counts
// them by outcome; n is the bytes they take from the start.
func salvageRecords(data io.ReaderAt, size int64, name string) (n int64, completed, failed uint64) {
	n = wholeLines(data, size)
	rd, err := rundir.RPCs().NewReader(io.NewSectionReader(data, 0, n), name)
	if err != nil {
		return 0, 0, 0
	}
	var rec rundir.RPC
	for {
		if err := rd.Read(&rec); err != nil {
			if !errors.Is(err, io.EOF) {
				return 0, 0, 0 // a torn file: trust none of it
			}
			return n, completed, failed
		}
		if rec.Status == rundir.StatusCompleted {
			completed++
		} else {
			failed++
		}
	}
}

// wholeLines is the length of data's first size bytes up to and with its
// last newline (0 without one), read from the end.
func wholeLines(data io.ReaderAt, size int64) int64 {
	var buf [4096]byte
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := data.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1
		}
		end = start
	}
	return 0
}

// lostRows are n rpcs.csv rows of RPCs whose client was killed, failed
// with reason: what they were is unknown, so sizes and times are 0. Each
// batch has its own header, as the run's records file reads it.
func lostRows(exp, transport, host string, n uint64, reason string) []byte {
	if n == 0 {
		return nil
	}
	var buf bytes.Buffer
	w, err := rundir.RPCs().NewWriter(&buf, true)
	if err != nil {
		return nil
	}
	rec := rundir.RPC{Experiment: exp, Transport: transport, Phase: rundir.PhaseMeasure, Client: host,
		Status: rundir.StatusFailed, Error: reason}
	for range n {
		if w.Write(&rec) != nil {
			return nil
		}
	}
	if w.Flush() != nil {
		return nil
	}
	return buf.Bytes()
}

// AppendKilled hands the killed agents' rows (their records, read from
// where they were kept at the kill, and the rows Account made for the RPCs
// they took with them) to add, which appends them to rpcs.csv.
func (fr *Run) AppendKilled(add func(data io.Reader) error) error {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	for host, k := range fr.killed {
		if err := k.appendRecords(add); err != nil {
			return fmt.Errorf("records of killed agent %s: %w", host, err)
		}
		for _, data := range k.lost {
			if len(data) == 0 {
				continue
			}
			if err := add(bytes.NewReader(data)); err != nil {
				return fmt.Errorf("records of killed agent %s: %w", host, err)
			}
		}
	}
	return nil
}

// RestartKilled starts the killed agents that are to come back and did
// not within the experiment (it was interrupted, or restarting failed),
// for the next experiments.
func (fr *Run) RestartKilled(ctx context.Context) {
	fr.mu.Lock()
	var hosts []string
	for h, k := range fr.killed {
		if k.restart && k.restartedAfter == 0 {
			hosts = append(hosts, h)
		}
	}
	fr.mu.Unlock()
	slices.Sort(hosts)
	for _, h := range hosts {
		if err := fr.env.StartAgent(ctx, h); err != nil {
			fr.warn("agent %s was not restarted, later experiments run without it: %v", h, err)
			continue
		}
		fr.log.Info("fault: agent restarted", "host", h)
	}
}

// appendRecords hands add the whole rows of the killed agent's records
// file that were counted at the kill, streamed from the file.
func (k *killedAgent) appendRecords(add func(data io.Reader) error) error {
	if k.records == "" || k.recordsLen == 0 {
		return nil
	}
	f, err := os.Open(k.records)
	if err != nil {
		return err
	}
	defer f.Close()
	return add(bufio.NewReader(io.LimitReader(f, k.recordsLen)))
}
