package external

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/homatb/homatb/internal/buildinfo"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/preflight"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
)

// preflightTimeout bounds the reachability checks of an external topology.
const preflightTimeout = 15 * time.Second

// Preflight checks what a run on machines needs instead of root
// and Mininet: the run's credentials load, every agent answers over them
// and runs this build, and every P4Runtime switch answers.
func Preflight(plan *scenario.Plan) error {
	e := plan.Base.Topology.External
	var ps []preflight.Problem
	add := func(p preflight.Problem) { ps = append(ps, p) }
	cfg, err := TLS(e)
	if err != nil {
		add(preflight.Problem{What: err.Error(), Fix: "homatb certs --run-dir DIR --hosts <agent addresses>, and the agents started with its agent.pem"})
		return &preflight.Error{Problems: ps}
	}
	ctx, cancel := context.WithTimeout(context.Background(), preflightTimeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, h := range e.Hosts {
		wg.Go(func() {
			if p, bad := checkAgent(ctx, h, cfg); bad {
				mu.Lock()
				add(p)
				mu.Unlock()
			}
		})
	}
	for _, sw := range e.Switches {
		wg.Go(func() {
			if err := p4RuntimeAnswers(ctx, sw.P4Runtime); err != nil {
				mu.Lock()
				add(preflight.Problem{What: fmt.Sprintf("switch %s: P4Runtime at %s does not answer: %v", sw.Name, sw.P4Runtime, err), Fix: "start the switch's P4Runtime server (device_id " + fmt.Sprint(sw.DeviceID) + ") and check the address"})
				mu.Unlock()
			}
			if sw.Target == scenario.ExternalBMv2 {
				if _, err := os.Stat(switches.BMv2JSONPath); err != nil {
					mu.Lock()
					add(preflight.Problem{What: "switch " + sw.Name + " is bmv2: it needs " + switches.BMv2JSONPath + ", p4c's output for p4/tor.p4", Fix: "make p4c (needs p4c-bm2-ss)"})
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, cc := range agents.BPFCongestion(plan) {
		add(preflight.Problem{What: "TCP congestion control " + cc + " is homatb's BPF one, which only an emulated run registers (on its own kernel)", Fix: "tcp.congestion: a kernel one (cubic, dctcp, ...) available on every host"})
	}
	if len(ps) > 0 {
		// The checks ran in parallel: list them the same way every time.
		slices.SortFunc(ps, func(a, b preflight.Problem) int { return strings.Compare(a.What, b.What) })
		return &preflight.Error{Problems: ps}
	}
	return nil
}

// checkAgent dials one agent and compares its build with this one's.
func checkAgent(ctx context.Context, h scenario.ExternalHost, cfg *tls.Config) (preflight.Problem, bool) {
	start := "homatb agent --name " + h.Name + " --listen " + h.Agent
	if cfg != nil {
		start += " --tls-cert agent.pem --tls-key agent-key.pem --tls-ca ca.pem"
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	a, err := agents.DialRemote(dctx, h.Name, h.Agent, cfg)
	if err != nil {
		return preflight.Problem{What: err.Error(), Fix: "on " + h.Name + ": " + start}, true
	}
	defer a.Close()
	data, err := scenario.ParseHostAddress(h.Address)
	if err != nil {
		return preflight.Problem{What: err.Error()}, true
	}
	m, _, err := a.Probe(ctx, data.Addr().String())
	if err != nil {
		return preflight.Problem{What: err.Error()}, true
	}
	if v := buildinfo.Version(); m.GetAgentVersion() != v {
		return preflight.Problem{What: fmt.Sprintf("agent %s at %s runs homatb %q, this orchestrator %q", h.Name, h.Agent, m.GetAgentVersion(), v), Fix: "install the same homatb build on every host"}, true
	}
	return preflight.Problem{}, false
}

// p4RuntimeAnswers asks a P4Runtime server for its capabilities, without
// taking part in its arbitration (the run's controller does that).
func p4RuntimeAnswers(ctx context.Context, addr string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = p4v1.NewP4RuntimeClient(conn).Capabilities(cctx, &p4v1.CapabilitiesRequest{})
	return err
}
