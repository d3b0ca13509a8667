package agent

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/homatb/homatb/hostagent/agentpb"
)

// helperEnv makes the test binary act as an agent process (see
// TestAgentHelperProcess): "socket|name|records-dir".
const helperEnv = "HOMATB_AGENT_TEST_HELPER"

// TestAgentHelperProcess is not a test: run with helperEnv set, it is the
// agent process of TestTwoAgentsInNamespaces, started inside a namespace.
func TestAgentHelperProcess(t *testing.T) {
	v := os.Getenv(helperEnv)
	if v == "" {
		t.Skip("helper process for the namespace test; runs only when started by it")
	}
	parts := strings.Split(v, "|")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := Run(ctx, Options{Socket: parts[0], Name: parts[1], RecordsDir: parts[2]})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// nsHost is one namespace with an agent process in it.
type nsHost struct {
	ns, addr, socket string
	cmd              *exec.Cmd
	api              agentpb.AgentClient
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// twoNamespaces makes two namespaces joined by a veth pair, named after
// the package and PID so concurrent tests cannot clash, removed at cleanup.
func twoNamespaces(t *testing.T) (a, b *nsHost) {
	t.Helper()
	pid := os.Getpid()
	a = &nsHost{ns: fmt.Sprintf("agt%da", pid), addr: "10.77.0.1"}
	b = &nsHost{ns: fmt.Sprintf("agt%db", pid), addr: "10.77.0.2"}
	for _, h := range []*nsHost{a, b} {
		run(t, "ip", "netns", "add", h.ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", h.ns).Run() })
	}
	// The veth ends take the namespaces' names: both at most 15 characters.
	run(t, "ip", "link", "add", a.ns, "netns", a.ns, "type", "veth", "peer", "name", b.ns, "netns", b.ns)
	for _, h := range []*nsHost{a, b} {
		run(t, "ip", "-n", h.ns, "addr", "add", h.addr+"/24", "dev", h.ns)
		run(t, "ip", "-n", h.ns, "link", "set", h.ns, "up")
		run(t, "ip", "-n", h.ns, "link", "set", "lo", "up")
	}
	return a, b
}

// startInNamespace runs the test binary as an agent inside h's namespace.
func startInNamespace(t *testing.T, h *nsHost, dir string) {
	t.Helper()
	h.socket = filepath.Join(dir, h.ns+".sock")
	h.cmd = exec.Command("ip", "netns", "exec", h.ns, os.Args[0], "-test.run=^TestAgentHelperProcess$")
	h.cmd.Env = append(os.Environ(), helperEnv+"="+h.socket+"|"+h.ns+"|"+dir)
	h.cmd.Stderr = os.Stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- h.cmd.Wait() }()
	t.Cleanup(func() {
		// Shutdown was asked by the test; a stuck agent is killed.
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			h.cmd.Process.Kill()
			<-exited
			t.Errorf("agent in %s did not exit after Shutdown", h.ns)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("unix", h.socket); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent in %s never opened its socket", h.ns)
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.api = dialAgent(t, h.socket)
}

// TestTwoAgentsInNamespaces drives two agent processes in two namespaces
// through their control API with both transports, and checks the books of
// every experiment: issued = completed + failed + in flight, one record per
// issued RPC.
func TestTwoAgentsInNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
	a, b := twoNamespaces(t)
	dir := t.TempDir()
	startInNamespace(t, a, dir)
	startInNamespace(t, b, dir)
	ctx := t.Context()
	const port = 4000
	transports := []struct {
		name string
		tr   agentpb.Transport
		tcp  *agentpb.TcpParams
		homa *agentpb.HomaParams
	}{
		{"tcp", agentpb.Transport_TRANSPORT_TCP, &agentpb.TcpParams{Congestion: "cubic", ConnectionsPerPeer: 2}, nil},
		{"homa", agentpb.Transport_TRANSPORT_HOMA, nil, &agentpb.HomaParams{LinkBps: 10_000_000_000}},
	}
	for _, tp := range transports {
		t.Run(tp.name, func(t *testing.T) {
			exp := "ns-" + tp.name
			// Each agent serves and is a client of the other, so both
			// directions cross the veth in the same experiment.
			peers := map[*nsHost]*nsHost{a: b, b: a}
			for _, h := range []*nsHost{b, a} {
				_, err := h.api.Configure(ctx, &agentpb.ConfigureRequest{
					Experiment: exp, Transport: tp.tr, Tcp: tp.tcp, Homa: tp.homa,
					Host: h.ns, Address: h.addr, ServerPorts: []uint32{port},
					Client: &agentpb.Workload{Sizes: "w3,max=100000", Arrivals: "poisson", RateRps: 1000,
						DurationMs: 400, WarmupMs: 50, Seed: 11,
						Targets: []string{fmt.Sprintf("%s:%d", peers[h].addr, port)}},
				})
				if status.Code(err) == codes.Unimplemented {
					t.Skipf("transport %s not available in this build: %v", tp.name, err)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, h := range []*nsHost{a, b} {
				if _, err := h.api.Start(ctx, &agentpb.StartRequest{}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(500 * time.Millisecond)
			got := map[*nsHost]*agentpb.Counters{}
			for _, h := range []*nsHost{a, b} {
				stop, err := h.api.Stop(ctx, &agentpb.StopRequest{DrainMs: 2000})
				if err != nil {
					t.Fatal(err)
				}
				got[h] = stop.GetCounters()
			}
			for _, h := range []*nsHost{a, b} {
				c := got[h]
				checkBooks(t, fetchRecords(t, h.api, exp), c, tp.name)
				if c.GetCompleted() == 0 {
					t.Errorf("%s: no RPC completed across the veth: %v", h.ns, c)
				}
				if served := got[peers[h]].GetServed(); served < c.GetCompleted() {
					t.Errorf("%s served %d, %s completed %d", peers[h].ns, served, h.ns, c.GetCompleted())
				}
				t.Logf("%s %s: issued %d completed %d failed %d in flight %d, lag p99 %.0f µs",
					tp.name, h.ns, c.GetIssued(), c.GetCompleted(), c.GetFailed(), c.GetInFlight(), c.GetLagP99Us())
			}
		})
	}
	for _, h := range []*nsHost{a, b} {
		if _, err := h.api.Shutdown(ctx, &agentpb.ShutdownRequest{}); err != nil {
			t.Errorf("shutdown %s: %v", h.ns, err)
		}
	}
}
