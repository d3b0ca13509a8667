package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/homatb/homatb/hostagent/adversary/kind"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/scenario"
)

// adversaryProc is one adversary process of an experiment.
type adversaryProc struct {
	name, out string
	a         scenario.Adversary
}

// startAdversaries starts `homatb adversary` in each adversary host of
// the scenario: a process of its own, not the host's agent, so nothing it
// sends is in the books. Each waits until its window in the measurement
// begins and ends by itself when the window does; its exit is expected.
func (x *experimentRun) startAdversaries(ctx context.Context) error {
	r, s := x.r, x.e.Scenario
	measure := time.Unix(0, x.roles.Start).Add(s.Warmup.D())
	for i, a := range s.Adversaries {
		if a.Kind == string(kind.None) {
			continue
		}
		h, ok1 := r.layout.Host(a.Host)
		t, ok2 := r.layout.Host(a.Target)
		if !ok1 || !ok2 {
			return fmt.Errorf("adversaries[%d]: no host %s or %s in the network", i, a.Host, a.Target)
		}
		start, dur := a.Window(s)
		wait := max(0, time.Until(measure.Add(start)))
		dir := filepath.Join(r.dir, "adversaries", x.e.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		p := adversaryProc{name: fmt.Sprintf("adversary-%s-%d", x.e.Name, i), out: filepath.Join(dir, fmt.Sprintf("%d-%s.json", i, a.Kind)), a: a}
		args := []string{r.opt.Binary, "adversary", "--local", h.IP.String(), "--target", t.IP.String(),
			"--port", strconv.Itoa(agents.ServerPort), "--kind", a.Kind, "--rate", strconv.FormatUint(uint64(a.Rate), 10),
			"--start", wait.String(), "--for", dur.String(), "--seed", strconv.FormatUint(x.e.Seed+uint64(i), 10),
			"--mtu", strconv.Itoa(s.Link.MTU), "--out", p.out}
		if a.Spoof {
			var peers []string
			for _, name := range a.Peers(s) {
				if ph, ok := r.layout.Host(name); ok {
					peers = append(peers, ph.IP.String())
				}
			}
			args = append(args, "--spoof", "--peers", strings.Join(peers, ","))
		}
		r.killed.Add(p.name)
		if _, err := r.runner.Popen(ctx, p.name, a.Host, filepath.Join(r.dir, "logs", p.name+".log"), nil, args...); err != nil {
			r.killed.Forget(p.name)
			return fmt.Errorf("start adversary %s on %s: %w", a.Kind, a.Host, err)
		}
		x.adversaries = append(x.adversaries, p)
	}
	return nil
}

// collectAdversaries waits for each adversary to end (its window ended
// with the measurement; one still running is killed) and records what it
// sent in the experiment's entry, apart from the books.
func (x *experimentRun) collectAdversaries(ctx context.Context) {
	r := x.r
	for _, p := range x.adversaries {
		if !r.killed.WaitExit(p.name, 5*time.Second) {
			_ = r.runner.Signal(ctx, p.name, syscall.SIGKILL)
			x.rec.Fidelity = append(x.rec.Fidelity, fmt.Sprintf("adversary %s on %s did not end with its window; killed", p.a.Kind, p.a.Host))
		}
		var c rundir.Adversary
		b, err := os.ReadFile(p.out)
		if err == nil {
			err = json.Unmarshal(b, &c)
		}
		if err != nil {
			x.rec.Fidelity = append(x.rec.Fidelity, fmt.Sprintf("adversary %s on %s: no counters (see logs/%s.log): %v", p.a.Kind, p.a.Host, p.name, err))
			continue
		}
		c.Host, c.TargetHost = p.a.Host, p.a.Target
		x.rec.Adversaries = append(x.rec.Adversaries, c)
	}
	x.adversaries = nil
}
