package agent

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
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

// twoAgents starts an agent in each of two namespaces joined by a veth
// pair, or skips the test where that cannot be done.
func twoAgents(t *testing.T) (a, b *nsHost) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
	a, b = twoNamespaces(t)
	dir := t.TempDir()
	startInNamespace(t, a, dir)
	startInNamespace(t, b, dir)
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
	a, b := twoAgents(t)
	ctx := t.Context()
	const port = 4000
	tcp := &agentpb.TcpParams{Congestion: "cubic", ConnectionsPerPeer: 2}
	transports := []struct {
		name string
		tr   agentpb.Transport
		tcp  *agentpb.TcpParams
		homa *agentpb.HomaParams
		// lossy puts a 20 Mbit/s token bucket with a 12 KB queue on a's
		// veth, so a's 64 KB requests lose segments and TCP's retries column
		// must show it. The bucket holds one packet: the bucket splits
		// larger GSO packets and drops some of the pieces, a loss the
		// sending TCP only learns of from the peer (a whole packet dropped
		// by its own host's qdisc is just sent again, not retransmitted).
		lossy bool
	}{
		{"tcp", agentpb.Transport_TRANSPORT_TCP, tcp, nil, false},
		{"homa", agentpb.Transport_TRANSPORT_HOMA, nil, agentpb.NewHomaParams(homaconf.Config{LinkBps: 10_000_000_000}), false},
		{"tcp-lossy", agentpb.Transport_TRANSPORT_TCP, tcp, nil, true},
	}
	for _, tp := range transports {
		t.Run(tp.name, func(t *testing.T) {
			exp := "ns-" + tp.name
			w := func() *agentpb.Workload {
				return &agentpb.Workload{Sizes: "w3,max=100000", Arrivals: "poisson", RateRps: 1000,
					DurationMs: 400, WarmupMs: 50, Seed: 11}
			}
			if tp.lossy {
				if out, err := exec.Command("ip", "netns", "exec", a.ns, "tc", "qdisc", "add", "dev", a.ns, "root",
					"tbf", "rate", "20mbit", "burst", "1600", "limit", "12kb").CombinedOutput(); err != nil {
					t.Skipf("tc tbf on %s: %v: %s", a.ns, err, out)
				}
				t.Cleanup(func() { exec.Command("ip", "netns", "exec", a.ns, "tc", "qdisc", "del", "dev", a.ns, "root").Run() })
				w = func() *agentpb.Workload {
					return &agentpb.Workload{Sizes: "fixed:65536", ResponseBytes: 8, Arrivals: "poisson", RateRps: 30,
						DurationMs: 400, Seed: 12}
				}
			}
			// Each agent serves and is a client of the other, so both
			// directions cross the veth in the same experiment.
			peers := map[*nsHost]*nsHost{a: b, b: a}
			for _, h := range []*nsHost{b, a} {
				cw := w()
				cw.Targets = []string{fmt.Sprintf("%s:%d", peers[h].addr, port)}
				_, err := h.api.Configure(ctx, &agentpb.ConfigureRequest{
					Experiment: exp, Transport: tp.tr, Tcp: tp.tcp, Homa: tp.homa,
					Host: h.ns, Address: h.addr, ServerPorts: []uint32{port}, Client: cw,
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
			// The books balance while RPCs are under way too.
			time.Sleep(200 * time.Millisecond)
			for _, h := range []*nsHost{a, b} {
				c := statusOnce(t, h.api)
				if c.GetIssued() == 0 || c.GetIssued() != c.GetCompleted()+c.GetFailed()+c.GetInFlight() {
					t.Errorf("%s while running: issued %d, completed %d + failed %d + in flight %d",
						h.ns, c.GetIssued(), c.GetCompleted(), c.GetFailed(), c.GetInFlight())
				}
			}
			time.Sleep(300 * time.Millisecond)
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
				rows := fetchRecords(t, h.api, exp)
				checkBooks(t, rows, c, transportName(tp.tr))
				checkTransportTimes(t, rows, transportName(tp.tr))
				if tp.lossy && h == a {
					checkRetries(t, rows, c)
				}
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

// checkRetries checks a TCP client's retries column against its
// connections' retransmission counter: some RPCs saw retransmissions, and
// none saw more than all its connections together.
func checkRetries(t *testing.T, rows [][]string, c *agentpb.Counters) {
	t.Helper()
	col := slices.Index(rows[0], "retries")
	total := c.GetTransport()["tcp_retrans_segs"]
	var sum, hit uint64
	for _, row := range rows[1:] {
		r, err := strconv.ParseUint(row[col], 10, 64)
		if err != nil {
			t.Fatalf("retries %q: %v", row[col], err)
		}
		if r > total {
			t.Errorf("an RPC records %d retries, its client's connections retransmitted %d segments", r, total)
		}
		sum += r
		if r > 0 {
			hit++
		}
	}
	t.Logf("%d of %d RPCs saw retransmissions (%d over RPCs); connections retransmitted %d segments",
		hit, len(rows)-1, sum, total)
	if total == 0 {
		t.Fatal("the token bucket forced no retransmissions: the lossy case proves nothing")
	}
	if hit == 0 {
		t.Errorf("connections retransmitted %d segments but no record shows a retry", total)
	}
}
