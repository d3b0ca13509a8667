package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/runfmt"
	"github.com/homatb/homatb/testbed/scenario"
)

// The errors recorded for the RPCs of a client agent that fault injection
// killed before their records were written: in flight at the kill (as far
// as its last Status tells), or finished by then with the record lost.
const (
	AgentKilledReason           = "agent killed by fault injection"
	AgentKilledUnrecordedReason = "agent killed by fault injection: finished, record lost"
)

// killedSet names the processes fault injection killed on purpose, so that
// their exit does not end the run; each name's channel is closed when the
// runner reports the exit.
type killedSet struct {
	mu    sync.Mutex
	names map[string]chan struct{}
}

func (k *killedSet) add(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.names == nil {
		k.names = map[string]chan struct{}{}
	}
	k.names[name] = make(chan struct{})
}

func (k *killedSet) forget(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.names, name)
}

// expected reports whether name's exit was caused on purpose, and notes
// that it happened.
func (k *killedSet) expected(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	ch, ok := k.names[name]
	if ok {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
	return ok
}

// waitExit waits until name's exit is reported, at most timeout.
func (k *killedSet) waitExit(name string, timeout time.Duration) bool {
	k.mu.Lock()
	ch := k.names[name]
	k.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	case <-time.After(timeout):
		return false
	}
}

// faultRun is the fault injection of one experiment: loss set on the
// faulted links from the clients' start until after the drain, link-down
// windows and agent kills at their times in the measurement.
type faultRun struct {
	x      *experimentRun
	cancel context.CancelFunc
	done   chan struct{}
	ports  map[portRef]bool // ports whose settings clear undoes

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
// The scheduling goroutine fills it; the experiment's steps read it only
// after endSchedule has waited for that goroutine.
type killedAgent struct {
	at      time.Duration // into the measurement
	restart bool
	// last is the agent's Status counters just before the kill (nil if it
	// did not answer, lastErr says why).
	last    *agentpb.Counters
	lastErr error
	// records are the whole rows the agent had written to its records file
	// (read once it had exited), counted by outcome, and lost the rows
	// standing for its RPCs without one, for rpcs.csv.
	records           []byte
	completed, failed uint64
	recordsErr        error
	lost              [][]byte
	restartedAfter    time.Duration // how long it was down; 0: not restarted
	restartErr        error
}

// timedFault is a down window or a kill at its time in the measurement.
type timedFault struct {
	at time.Duration
	f  scenario.Fault
}

// startFaults sets the loss faults now and schedules the timed ones from
// the start of the measurement (the clients' start plus the warm-up). A
// loss the switch refuses is an error: the experiment would not measure
// what the scenario asks.
func (x *experimentRun) startFaults(ctx context.Context) error {
	r := x.r
	fr := &faultRun{x: x, done: make(chan struct{}), ports: map[portRef]bool{}, killed: map[string]*killedAgent{}}
	x.faults = fr
	var timed []timedFault
	for _, f := range x.e.Scenario.Faults {
		x.rec.Fidelity = append(x.rec.Fidelity, "fault injected: "+describeFault(f))
		switch f.Kind() {
		case "loss":
			p, err := r.faultPort(f.Link)
			if err != nil {
				fr.noSchedule()
				return err
			}
			dir := lossDirection(f.LossDirection())
			fr.ports[p] = true
			if err := r.stats[p.sw].SetFault(ctx, switchstats.FaultSetting{Port: p.port, DropProb: f.Loss, Direction: &dir}); err != nil {
				fr.noSchedule()
				return fmt.Errorf("fault on %s's link: %w", f.Link, err)
			}
		case "down":
			timed = append(timed, timedFault{f.Down.At.D(), f})
		case "kill_agent":
			timed = append(timed, timedFault{f.KillAgent.At.D(), f})
		}
	}
	for _, h := range x.roles.used {
		if !r.agents.isGone(h) {
			continue
		}
		var does []string
		if x.roles.clients[h] != nil {
			does = append(does, "issues none of its RPCs")
		}
		if x.roles.servers[h] {
			does = append(does, "answers none, so RPCs to it fail")
		}
		x.rec.Fidelity = append(x.rec.Fidelity, fmt.Sprintf("agent %s is down (killed by fault injection in an earlier experiment, restart: false): it %s",
			h, strings.Join(does, " and ")))
	}
	slices.SortStableFunc(timed, func(a, b timedFault) int { return int(a.at - b.at) })
	measure := time.Unix(0, x.roles.start).Add(x.e.Scenario.Warmup.D())
	fctx, cancel := context.WithCancel(ctx)
	fr.cancel = cancel
	go fr.schedule(fctx, measure, timed)
	return nil
}

// noSchedule makes fr a faultRun with nothing scheduled, for an experiment whose
// faults could not be set.
func (fr *faultRun) noSchedule() {
	fr.cancel = func() {}
	close(fr.done)
}

// schedule applies the timed faults at their times until ctx ends.
func (fr *faultRun) schedule(ctx context.Context, measure time.Time, timed []timedFault) {
	defer close(fr.done)
	r := fr.x.r
	for _, t := range timed {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(measure.Add(t.at))):
		}
		switch t.f.Kind() {
		case "down":
			p, err := r.faultPort(t.f.Link)
			if err == nil {
				fr.mu.Lock()
				fr.ports[p] = true
				fr.mu.Unlock()
				d := t.f.Down.For.D().String()
				err = r.stats[p.sw].SetFault(ctx, switchstats.FaultSetting{Port: p.port, DownFor: &d})
			}
			if err != nil {
				fr.warn("link %s was not taken down at %s: %v", t.f.Link, t.at, err)
			}
			r.log.Info("fault: link down", "link", t.f.Link, "at", t.at, "for", t.f.Down.For.D(), "err", err)
		case "kill_agent":
			fr.kill(ctx, t.f.Link, t.at, t.f.RestartAgent())
		}
	}
}

// kill reads the agent's books, then kills it with SIGKILL; its exit is
// expected and the experiment's steps leave it out from then on.
func (fr *faultRun) kill(ctx context.Context, host string, at time.Duration, restart bool) {
	r := fr.x.r
	a := r.agents.get(host)
	if a == nil {
		fr.warn("agent %s was not killed at %s: it is already down", host, at)
		return
	}
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	st, err := a.Status(sctx)
	cancel()
	k := &killedAgent{at: at, restart: restart, last: st.GetCounters(), lastErr: err}
	r.agents.remove(host)
	fr.mu.Lock()
	fr.killed[host] = k
	fr.mu.Unlock()
	killed := time.Now()
	// Its records file is final once it has exited; a restarted agent
	// would start it anew.
	exited, err := r.killAgentProcess(ctx, host)
	switch {
	case err != nil:
		fr.warn("agent %s: SIGKILL at %s failed: %v", host, at, err)
	case !exited:
		fr.warn("agent %s: no exit reported within 3s of SIGKILL; not restarted within the experiment", host)
	}
	r.log.Info("fault: agent killed", "host", host, "at", at, "restart", restart)
	a.Shutdown(context.WithoutCancel(ctx)) // closes the connection; the agent is gone
	if fr.x.roles.clients[host] != nil {
		path := filepath.Join(r.dir, "agents", "records", host, agentRecordsFile(fr.x.e.Name, host))
		data, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			k.recordsErr = err
		}
		k.records, k.completed, k.failed = salvageRecords(data, path)
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
func (fr *faultRun) restartNow(ctx context.Context, host string) error {
	x, r := fr.x, fr.x.r
	if err := r.startAgent(ctx, host); err != nil {
		return err
	}
	a := r.agents.get(host)
	h, _ := r.layout.Host(host)
	var w *agentpb.Workload
	if orig := x.roles.clients[host]; orig != nil {
		w = proto.Clone(orig).(*agentpb.Workload)
		s := x.e.Scenario
		end := time.Unix(0, orig.GetStartUnixNs()).Add(s.Warmup.D() + s.Duration.D())
		start := time.Now().Add(200 * time.Millisecond)
		if left := end.Sub(start); left > 0 {
			w.StartUnixNs, w.WarmupMs, w.DurationMs = start.UnixNano(), 0, uint32(left/time.Millisecond)
			w.Seed++
		} else {
			w = nil // nothing left to send
		}
	}
	err := a.Configure(ctx, r.requests.Configure(x.e.Transport, x.e.Scenario, x.e.Name, runfmt.PhaseMeasure, h, x.roles.servers[host], w))
	if err == nil && w != nil {
		err = a.Start(ctx)
	}
	if err != nil {
		r.agents.remove(host)
		r.abandonAgent(ctx, host)
		a.Shutdown(context.WithoutCancel(ctx))
		return err
	}
	r.killed.forget("agent-" + host)
	r.log.Info("fault: agent restarted", "host", host, "client", w != nil)
	return nil
}

// endSchedule stops applying timed faults (an interrupted experiment ends
// before its last ones) and waits for the one under way.
func (fr *faultRun) endSchedule() {
	fr.cancel()
	<-fr.done
}

// clear brings every faulted port back to no loss and up.
func (fr *faultRun) clear(ctx context.Context) {
	r := fr.x.r
	zero, egress, up := 0.0, switchstats.DirectionEgress, "0s"
	fr.mu.Lock()
	ports := make([]portRef, 0, len(fr.ports))
	for p := range fr.ports {
		ports = append(ports, p)
	}
	fr.mu.Unlock()
	for _, p := range ports {
		fs := switchstats.FaultSetting{Port: p.port, DropProb: &zero, Direction: &egress, DownFor: &up}
		if err := r.stats[p.sw].SetFault(ctx, fs); err != nil {
			fr.warn("switch %s port %d: fault not cleared, later experiments may see it: %v", p.sw, p.port, err)
		}
	}
}

// restarted reports whether host's agent was killed and restarted in this
// experiment: its books then cover only its new life.
func (fr *faultRun) restarted(host string) bool {
	if fr == nil {
		return false
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	k := fr.killed[host]
	return k != nil && k.restartedAfter > 0
}

func (fr *faultRun) warn(format string, args ...any) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.warnings = append(fr.warnings, fmt.Sprintf(format, args...))
}

// faultPort is the switch port host hangs off.
func (r *run) faultPort(host string) (portRef, error) {
	h, ok := r.layout.Host(host)
	if !ok {
		return portRef{}, fmt.Errorf("fault: no host %s", host)
	}
	if r.stats[h.Switch] == nil {
		return portRef{}, fmt.Errorf("fault: switch %s of %s has no admin socket", h.Switch, host)
	}
	return portRef{h.Switch, uint16(h.Port)}, nil
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

// describeFault says what a fault does, for the experiment's entry.
func describeFault(f scenario.Fault) string {
	switch f.Kind() {
	case "loss":
		way := map[string]string{scenario.DirectionBoth: "both ways", scenario.DirectionToHost: "towards the host",
			scenario.DirectionFromHost: "from the host"}[f.LossDirection()]
		return fmt.Sprintf("loss %s %s on %s's link for the whole experiment", strconv.FormatFloat(*f.Loss, 'g', -1, 64), way, f.Link)
	case "down":
		return fmt.Sprintf("%s's link down at %s into the measurement for %s", f.Link, f.Down.At.D(), f.Down.For.D())
	case "kill_agent":
		return fmt.Sprintf("agent %s killed at %s into the measurement (restart: %v)", f.Link, f.KillAgent.At.D(), f.RestartAgent())
	}
	return "none"
}

// accountKilled adds the books of the agents killed in this experiment
// from what is known: the records each had written, and its last Status.
// RPCs it had issued beyond its records were in flight at the kill or
// finished unwritten; they count as failed with AgentKilledReason, and
// rows saying so go to rpcs.csv, so the books balance.
func (fr *faultRun) accountKilled() {
	x := fr.x
	fr.mu.Lock()
	defer fr.mu.Unlock()
	hosts := make([]string, 0, len(fr.killed))
	for h := range fr.killed {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, host := range hosts {
		k := fr.killed[host]
		client := x.roles.clients[host] != nil
		if k.last != nil && k.restartedAfter == 0 {
			// A restarted agent's own counters stand for the host.
			x.addHost(host, hostRole(client, x.roles.servers[host]), k.last)
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
		k.lost = [][]byte{lostRows(x.e.Name, x.e.Transport.Name, host, unrecorded, AgentKilledUnrecordedReason),
			lostRows(x.e.Name, x.e.Transport.Name, host, lost-unrecorded, AgentKilledReason)}
		x.mu.Lock()
		x.rec.RPCs.Issued += rows + lost
		x.rec.RPCs.Completed += completed
		x.rec.RPCs.Failed += failed + lost
		x.mu.Unlock()
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
}

// unsafeRecordChars are the characters an agent replaces in the name of
// its records file (hostagent/agent).
var unsafeRecordChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// agentRecordsFile is the name of the file an agent writes an
// experiment's records to as they finish.
func agentRecordsFile(exp, host string) string {
	return unsafeRecordChars.ReplaceAllString(exp+"-"+host, "_") + ".rpcs.csv"
}

// salvageRecords keeps the whole rows of a killed agent's records file
// (its last write may be cut) and counts them by outcome.
func salvageRecords(data []byte, name string) (kept []byte, completed, failed uint64) {
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	rd, err := runfmt.RPCs().NewReader(bytes.NewReader(data), name)
	if err != nil {
		return nil, 0, 0
	}
	var rec runfmt.RPC
	for {
		if err := rd.Read(&rec); err != nil {
			if !errors.Is(err, io.EOF) {
				return nil, 0, 0 // a torn file: trust none of it
			}
			return data, completed, failed
		}
		if rec.Status == runfmt.StatusCompleted {
			completed++
		} else {
			failed++
		}
	}
}

// lostRows are n rpcs.csv rows of RPCs whose client was killed, failed
// with reason: what they were is unknown, so sizes and times are 0. Each
// batch has its own header, as appendCSV reads it.
func lostRows(exp, transport, host string, n uint64, reason string) []byte {
	if n == 0 {
		return nil
	}
	var buf bytes.Buffer
	w, err := runfmt.RPCs().NewWriter(&buf, true)
	if err != nil {
		return nil
	}
	rec := runfmt.RPC{Experiment: exp, Transport: transport, Phase: runfmt.PhaseMeasure, Client: host,
		Status: runfmt.StatusFailed, Error: reason}
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

// appendKilled appends the killed agents' rows to rpcs.csv.
func (fr *faultRun) appendKilled() error {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	for host, k := range fr.killed {
		for _, data := range append([][]byte{k.records}, k.lost...) {
			if len(data) == 0 {
				continue
			}
			if _, _, err := fr.x.r.records.appendCSV(data, ""); err != nil {
				return fmt.Errorf("records of killed agent %s: %w", host, err)
			}
		}
	}
	return nil
}

// restart starts the killed agents that are to come back and did not
// within the experiment (it was interrupted, or restarting failed), for
// the next experiments.
func (fr *faultRun) restart(ctx context.Context) {
	fr.mu.Lock()
	var hosts []string
	for h, k := range fr.killed {
		if k.restart && k.restartedAfter == 0 {
			hosts = append(hosts, h)
		}
	}
	fr.mu.Unlock()
	slices.Sort(hosts)
	r := fr.x.r
	for _, h := range hosts {
		if err := r.startAgent(ctx, h); err != nil {
			fr.warn("agent %s was not restarted, later experiments run without it: %v", h, err)
			continue
		}
		r.killed.forget("agent-" + h)
		r.log.Info("fault: agent restarted", "host", h)
	}
}
