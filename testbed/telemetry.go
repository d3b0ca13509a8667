package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
)

// readSwitchStats reads every switch's statistics (none for those that fail).
func (r *run) readSwitchStats(ctx context.Context) map[string]rundir.SwitchStats {
	out := map[string]rundir.SwitchStats{}
	for name, c := range r.stats {
		m, err := c.Fetch(ctx)
		if err != nil {
			r.log.Warn("switch stats", "switch", name, "err", err)
			continue
		}
		out[name] = m
	}
	return out
}

// collectSwitchStats writes switch/<experiment>/<switch>.json as
// differences over the experiment and returns fidelity warnings.
func (r *run) collectSwitchStats(ctx context.Context, exp string, start map[string]rundir.SwitchStats) []string {
	var warn []string
	end := r.readSwitchStats(ctx)
	for name := range r.stats {
		e, ok := end[name]
		if !ok {
			warn = append(warn, fmt.Sprintf("switch %s: statistics unavailable for this experiment", name))
			continue
		}
		d := switchstats.Diff(start[name], e)
		for i := range d.Ports {
			d.Ports[i].Peer = r.peers[name][int(d.Ports[i].Port)]
		}
		if err := rundir.WriteSwitchStats(r.dir, exp, name, d); err != nil {
			warn = append(warn, fmt.Sprintf("switch %s: %v", name, err))
			continue
		}
		t := totals(d)
		if t.kernelDrops > 0 {
			warn = append(warn, fmt.Sprintf("switch %s fell behind: %d packets were lost in its sockets before it read them", name, t.kernelDrops))
		}
		if t.noBuffer > 0 || t.txErrors > 0 {
			warn = append(warn, fmt.Sprintf("switch %s: %d packets without buffer, %d transmit errors", name, t.noBuffer, t.txErrors))
		}
	}
	return warn
}

// startPostcards has every switch record each frame it forwards during the
// experiment into switch/<experiment>/<sw>.postcards. BMv2 has no such
// records, and the entry says that the switch's share of latency is
// unavailable rather than leaving it to be guessed.
func (x *experimentRun) startPostcards(ctx context.Context) {
	r := x.r
	if !r.postcards {
		if len(r.stats) > 0 && x.e.Scenario.Switch.Target == scenario.TargetBMv2 {
			x.rec.Fidelity = append(x.rec.Fidelity, "per-packet switch records (latency anatomy) are unavailable on BMv2")
		}
		return
	}
	for name, c := range r.stats {
		path, err := filepath.Abs(rundir.PostcardsPath(r.dir, x.e.Name, name))
		if err == nil {
			err = c.StartPostcards(ctx, path)
		}
		if err != nil {
			x.rec.Fidelity = append(x.rec.Fidelity, fmt.Sprintf("switch %s: no per-packet records for this experiment: %v", name, err))
		}
	}
}

// stopPostcards ends the switches' per-packet records and notes records
// lost because a switch's writer fell behind.
func (x *experimentRun) stopPostcards(ctx context.Context) {
	if !x.r.postcards {
		return
	}
	for name, c := range x.r.stats {
		s, err := c.StopPostcards(ctx)
		switch {
		case err != nil:
			x.rec.Fidelity = append(x.rec.Fidelity, fmt.Sprintf("switch %s: per-packet records may be incomplete: %v", name, err))
		case s.Dropped > 0:
			x.rec.Fidelity = append(x.rec.Fidelity, fmt.Sprintf("switch %s: %d of %d per-packet records dropped (its writer fell behind)", name, s.Dropped, s.Dropped+s.Records))
		}
	}
}

// waitQueuesEmpty waits until every switch queue is empty, so one
// experiment's backlog does not spill into the next.
func (r *run) waitQueuesEmpty(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		busy := false
		for _, st := range r.readSwitchStats(ctx) {
			for _, p := range st.Ports {
				for _, q := range p.Queues {
					busy = busy || q.DepthPkts > 0
				}
			}
		}
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// startTelemetry runs the telemetry part for one experiment, appending to
// telemetry.csv; the returned func stops it and waits.
func (r *run) startTelemetry(ctx context.Context, exp string, interval time.Duration) func() {
	if r.ctl == nil {
		return func() {}
	}
	f := &lazyFile{path: filepath.Join(r.dir, rundir.Telemetry().File)}
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.ctl.Telemetry(tctx, exp, interval, f); err != nil {
			r.log.Warn("telemetry", "experiment", exp, "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
		_ = f.Close()
	}
}

// lazyFile is a run-directory file created, with its directory, at its
// first write (flag adds to O_CREATE|O_RDWR|O_APPEND): a part with nothing
// to write (the simulated switches' telemetry, a simulated agent's
// records) leaves no file.
type lazyFile struct {
	path string
	flag int
	f    *os.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.f == nil && l.err == nil {
		if l.err = os.MkdirAll(filepath.Dir(l.path), 0o755); l.err == nil {
			l.f, l.err = os.OpenFile(l.path, os.O_CREATE|os.O_RDWR|os.O_APPEND|l.flag, 0o644)
		}
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(p)
}

// file is the file, nil if nothing was written.
func (l *lazyFile) file() *os.File {
	if l == nil {
		return nil
	}
	return l.f
}

func (l *lazyFile) Close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// switchTotals is what the fidelity checks need from an experiment's
// statistics: packets the switch lost or could not send.
type switchTotals struct {
	kernelDrops, noBuffer, txErrors uint64
}

func totals(st rundir.SwitchStats) switchTotals {
	var t switchTotals
	for _, p := range st.Ports {
		t.kernelDrops += p.KernelDrops
		t.noBuffer += p.NoBuffer
		t.txErrors += p.TxErrors
	}
	return t
}

// startHostTelemetry follows the Homa gauges of hosts through their
// agents' Status streams every interval while the experiment runs, each
// sample appended to hosts.csv as it comes (an experiment of any length
// holds none); the returned func stops it and waits. A host whose stream
// fails is logged and left out, the experiment goes on.
func (r *run) startHostTelemetry(ctx context.Context, exp string, hosts []string, interval time.Duration) func() {
	if interval <= 0 {
		return func() {}
	}
	path := filepath.Join(r.dir, rundir.Hosts().File)
	var f *os.File // opened at the first sample
	var w *rundir.CSVWriter[rundir.HostSample]
	var mu sync.Mutex // the hosts' streams share w
	emit := func(s rundir.HostSample) error {
		mu.Lock()
		defer mu.Unlock()
		if f == nil {
			var err error
			if f, w, err = openAppend(path, rundir.Hosts()); err != nil {
				return err
			}
		}
		if err := w.Write(&s); err != nil {
			return err
		}
		return w.Flush() // a few rows a second: the file is the live series
	}
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, h := range hosts {
		a := r.agents.get(h)
		if a == nil {
			continue
		}
		wg.Go(func() {
			if err := a.FollowGauges(sctx, exp, interval, emit); err != nil && sctx.Err() == nil {
				r.log.Warn("host telemetry", "experiment", exp, "host", h, "err", err)
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
		if f == nil {
			return
		}
		if err := errors.Join(w.Flush(), f.Close()); err != nil {
			r.log.Warn("host telemetry file", "experiment", exp, "path", path, "err", err)
		}
	}
}
