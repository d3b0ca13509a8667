package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/homatb/homatb/testbed/topo"
)

// agents is the set of a run's agents by host name.
type agents struct {
	mu sync.Mutex
	m  map[string]agentAPI
}

func (as *agents) add(host string, a agentAPI) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.m == nil {
		as.m = map[string]agentAPI{}
	}
	as.m[host] = a
}

func (as *agents) get(host string) agentAPI {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.m[host]
}

// each runs f on the named hosts in parallel and returns the first error.
func (as *agents) each(ctx context.Context, hosts []string, f func(ctx context.Context, host string, a agentAPI) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, h := range hosts {
		a := as.get(h)
		if a == nil {
			return fmt.Errorf("no agent on %s", h)
		}
		g.Go(func() error { return f(gctx, h, a) })
	}
	return g.Wait()
}

// shutdown asks every agent to exit, in parallel, and forgets them.
func (as *agents) shutdown(ctx context.Context) {
	as.mu.Lock()
	list := make([]agentAPI, 0, len(as.m))
	for _, a := range as.m {
		list = append(list, a)
	}
	as.m = nil
	as.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range list {
		wg.Go(func() { a.shutdown(ctx) })
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
		sock := filepath.Join(r.sockDir, h.Name+".sock")
		_ = os.Remove(sock)
		recDir := filepath.Join(r.dir, "agents", "records", h.Name)
		if err := os.MkdirAll(recDir, 0o755); err != nil {
			return err
		}
		name := "agent-" + h.Name
		_, err := r.runner.Popen(ctx, name, h.Name, filepath.Join(r.dir, "logs", name+".log"), nil,
			r.opt.Binary, "agent", "--socket", sock, "--name", h.Name, "--records-dir", recDir)
		if err != nil {
			return fmt.Errorf("start agent on %s: %w", h.Name, err)
		}
		hosts = append(hosts, h.Name)
	}
	for _, h := range hosts {
		a, err := r.parts.dialAgent(ctx, h, filepath.Join(r.sockDir, h+".sock"), r.runner.Exited())
		if err != nil {
			return fmt.Errorf("%w (see logs/agent-%s.log)", err, h)
		}
		r.agents.add(h, a)
	}
	r.log.Info("agents up", "hosts", len(hosts))
	return nil
}
