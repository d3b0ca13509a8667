package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/faults"
	"github.com/homatb/homatb/testbed/topo"
)

// agentSet is the set of a run's agents by host name. An agent that fault
// injection killed is gone: each leaves it out until it is added again.
type agentSet struct {
	mu   sync.Mutex
	m    map[string]agentAPI
	gone map[string]bool
}

func (as *agentSet) add(host string, a agentAPI) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.m == nil {
		as.m = map[string]agentAPI{}
	}
	as.m[host] = a
	delete(as.gone, host)
}

// remove forgets host's agent and marks it gone; it returns the agent (nil
// if there was none).
func (as *agentSet) remove(host string) agentAPI {
	as.mu.Lock()
	defer as.mu.Unlock()
	a := as.m[host]
	delete(as.m, host)
	if as.gone == nil {
		as.gone = map[string]bool{}
	}
	as.gone[host] = true
	return a
}

// isGone reports whether host's agent was killed and not started again.
func (as *agentSet) isGone(host string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.gone[host]
}

func (as *agentSet) get(host string) agentAPI {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.m[host]
}

// each runs f on the named hosts in parallel and returns the first error.
func (as *agentSet) each(ctx context.Context, hosts []string, f func(ctx context.Context, host string, a agentAPI) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, h := range hosts {
		a := as.get(h)
		if a == nil && as.isGone(h) {
			continue // killed by fault injection: accounted for apart
		}
		if a == nil {
			return fmt.Errorf("no agent on %s", h)
		}
		g.Go(func() error { return f(gctx, h, a) })
	}
	return g.Wait()
}

// fetchEach fetches file of experiment exp from the agents of hosts, in
// parallel, each streamed into the file spool(host) names, and once all
// have answered hands each host's file to use, read from its start, in the
// hosts' order, so that a run's file holds its hosts one after the other,
// in the same order every run; none is held in memory, however long the
// experiment. The spooled files stay when keep is set and are removed
// otherwise. A killed agent's host is skipped (its rows are accounted for
// apart); what failed, fetching or using, is returned joined, and the rest
// is used.
func (as *agentSet) fetchEach(ctx context.Context, hosts []string, exp, file string, spool func(host string) string, keep bool,
	use func(host string, r io.Reader) error) error {
	files := make([]*lazyFile, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		a := as.get(h)
		if a == nil {
			if !as.isGone(h) {
				errs[i] = fmt.Errorf("no agent on %s", h)
			}
			continue
		}
		files[i] = &lazyFile{path: spool(h), flag: os.O_TRUNC}
		wg.Go(func() {
			bw := bufio.NewWriter(files[i])
			if errs[i] = a.Fetch(ctx, exp, file, bw); errs[i] == nil {
				errs[i] = bw.Flush()
			}
		})
	}
	wg.Wait()
	for i, h := range hosts {
		f := files[i].file()
		if f == nil {
			continue // nothing handed over (a simulated agent's records are written as they become final)
		}
		if errs[i] == nil {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				errs[i] = err
			} else if err := use(h, bufio.NewReader(f)); err != nil {
				errs[i] = fmt.Errorf("%s of %s: %w", file, h, err)
			}
		}
		f.Close()
		if !keep {
			os.Remove(f.Name())
		}
	}
	return errors.Join(errs...)
}

// shutdown asks every agent to exit, in parallel, and forgets them.
func (as *agentSet) shutdown(ctx context.Context) {
	as.mu.Lock()
	list := make([]agentAPI, 0, len(as.m))
	for _, a := range as.m {
		list = append(list, a)
	}
	as.m = nil
	as.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range list {
		wg.Go(func() { a.Shutdown(ctx) })
	}
	wg.Wait()
}

// startAgents starts `homatb agent` in every host through the runner and
// waits until each answers on its socket (a filesystem socket crosses
// namespaces).
func (r *run) startAgents(ctx context.Context, n *topo.Network) error {
	if err := os.MkdirAll(r.sockDir, 0o755); err != nil {
		return err
	}
	hosts := make([]string, 0, len(n.Hosts))
	for _, h := range n.Hosts {
		if err := r.popenAgent(ctx, h.Name); err != nil {
			return err
		}
		hosts = append(hosts, h.Name)
	}
	for _, h := range hosts {
		if err := r.connectAgent(ctx, h); err != nil {
			return err
		}
	}
	r.log.Info("agents up", "hosts", len(hosts))
	return nil
}

// startAgent starts host's agent again (after fault injection killed it)
// and waits until it answers.
func (r *run) startAgent(ctx context.Context, host string) error {
	if err := r.popenAgent(ctx, host); err != nil {
		return err
	}
	if err := r.connectAgent(ctx, host); err != nil {
		r.abandonAgent(ctx, host)
		return err
	}
	return nil
}

// abandonAgent kills host's agent process whose start was given up (it did
// not answer, or the experiment ended first): left running, it would make
// the next start of that host fail as already running.
func (r *run) abandonAgent(ctx context.Context, host string) {
	if exited, err := r.killAgentProcess(ctx, host); err != nil {
		r.log.Warn("stop abandoned agent", "host", host, "err", err)
	} else if !exited {
		r.log.Warn("abandoned agent: no exit reported within 3s of SIGKILL", "host", host)
	}
}

// killAgentProcess kills host's agent process with SIGKILL, its exit
// expected (so it does not end the run), and waits up to 3 s for the
// runner to report the exit.
func (r *run) killAgentProcess(ctx context.Context, host string) (exited bool, err error) {
	name := "agent-" + host
	r.killed.Add(name)
	if err := r.runner.Signal(context.WithoutCancel(ctx), name, syscall.SIGKILL); err != nil {
		return false, err
	}
	return r.killed.WaitExit(name, 3*time.Second), nil
}

// popenAgent starts `homatb agent` in host, logging to logs/agent-HOST.log
// and recording under agents/records/HOST/.
func (r *run) popenAgent(ctx context.Context, host string) error {
	sock := filepath.Join(r.sockDir, host+".sock")
	_ = os.Remove(sock)
	recDir := filepath.Join(r.dir, "agents", "records", host)
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		return err
	}
	name := "agent-" + host
	args := []string{r.opt.Binary, "agent", "--socket", sock, "--name", host, "--records-dir", recDir}
	args = append(args, schedulingArgs(r.opt)...)
	_, err := r.runner.Popen(ctx, name, host, filepath.Join(r.dir, "logs", name+".log"), nil, args...)
	if err != nil {
		return fmt.Errorf("start agent on %s: %w", host, err)
	}
	return nil
}

// connectAgent waits for host's started agent and adds it to the run's.
func (r *run) connectAgent(ctx context.Context, host string) error {
	a, err := r.parts.dialAgent(ctx, host, filepath.Join(r.sockDir, host+".sock"), r.runner.Exited())
	if err != nil {
		return fmt.Errorf("%w (see logs/agent-%s.log)", err, host)
	}
	r.agents.add(host, a)
	return nil
}

// faultEnv is an experiment's run as fault injection reaches it
// (faults.Env).
type faultEnv struct{ x *experimentRun }

func (f faultEnv) Port(host string) (string, uint16, error) {
	r := f.x.r
	if a, b, ok := strings.Cut(host, "-"); ok {
		// Either end first, as validation takes it: the fault goes on
		// the link's first end as the layout lists it.
		for _, l := range r.layout.Links {
			if l.A == a && l.B == b || l.A == b && l.B == a {
				if r.stats[l.A] == nil {
					return "", 0, fmt.Errorf("fault: switch %s has no admin socket", l.A)
				}
				return l.A, uint16(l.APort), nil
			}
		}
		return "", 0, fmt.Errorf("fault: no link %s", host)
	}
	h, ok := r.layout.Host(host)
	if !ok {
		return "", 0, fmt.Errorf("fault: no host %s", host)
	}
	if r.stats[h.Switch] == nil {
		return "", 0, fmt.Errorf("fault: switch %s of %s has no admin socket", h.Switch, host)
	}
	return h.Switch, uint16(h.Port), nil
}

// linkRerouter is a controller that can move paths off a link
// (*switches.Control).
type linkRerouter interface {
	SetLinkDown(ctx context.Context, a, b string, down bool) error
}

func (f faultEnv) Reroute(ctx context.Context, leaf, spine string, down bool) error {
	lr, ok := f.x.r.ctl.(linkRerouter)
	if !ok {
		return fmt.Errorf("the run's controller (%T) cannot move paths", f.x.r.ctl)
	}
	return lr.SetLinkDown(ctx, leaf, spine, down)
}

func (f faultEnv) SetFault(ctx context.Context, sw string, fs switchstats.FaultSetting) error {
	return f.x.r.stats[sw].SetFault(ctx, fs)
}

func (f faultEnv) Agent(host string) faults.Agent {
	if a := f.x.r.agents.get(host); a != nil {
		return a
	}
	return nil // not an interface holding a nil agentAPI
}

func (f faultEnv) Down(host string) bool { return f.x.r.agents.isGone(host) }

func (f faultEnv) Kill(ctx context.Context, host string) (bool, error) {
	f.x.r.agents.remove(host)
	return f.x.r.killAgentProcess(ctx, host)
}

func (f faultEnv) Restart(ctx context.Context, host string, w *agentpb.Workload) error {
	x, r := f.x, f.x.r
	if err := r.startAgent(ctx, host); err != nil {
		return err
	}
	a := r.agents.get(host)
	h, _ := r.layout.Host(host)
	err := a.Configure(ctx, r.requests.Configure(x.e.Transport, x.e.Scenario, x.e.Name, rundir.PhaseMeasure, h, x.roles.Servers[host], w))
	if err == nil && w != nil {
		err = a.Start(ctx)
	}
	if err != nil {
		r.agents.remove(host)
		r.abandonAgent(ctx, host)
		a.Shutdown(context.WithoutCancel(ctx))
		return err
	}
	r.killed.Forget("agent-" + host)
	return nil
}

func (f faultEnv) StartAgent(ctx context.Context, host string) error {
	if err := f.x.r.startAgent(ctx, host); err != nil {
		return err
	}
	f.x.r.killed.Forget("agent-" + host)
	return nil
}

func (f faultEnv) RecordsPath(host string) string {
	return filepath.Join(f.x.r.dir, "agents", "records", host, rundir.AgentFile(f.x.e.Name, host, rundir.RPCs()))
}
