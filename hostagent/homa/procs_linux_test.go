//go:build linux

package homa_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// serverProcessEnv carries a serverSpec to the test binary run again as a
// server process.
const serverProcessEnv = "HOMA_TEST_SERVER_PROCESS"

// serverSpec is what a server process needs: its address and Config.
type serverSpec struct {
	Addr netip.Addr
	Cfg  homaconf.Config
}

// TestServerProcess is the server half of the two-process benchmarks, not
// a test of its own: startServerProcess runs the test binary again in the
// server's namespace with only this test selected. It serves 1-byte
// responses with GOMAXPROCS 1, as an agent does, prints "ready", and on
// end of stdin the number of packets it sent.
func TestServerProcess(t *testing.T) {
	raw := os.Getenv(serverProcessEnv)
	if raw == "" {
		t.Skip("the server process of BenchmarkGoodput1MB/…/procs=1x2, started by it")
	}
	var spec serverSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatalf("%s: %v", serverProcessEnv, err)
	}
	runtime.GOMAXPROCS(1)
	conn, err := homa.ListenRaw(spec.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := homa.NewEndpoint(conn, spec.Cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	srv, err := ep.Listen(serverPort)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	serveFixed(ctx, srv, []byte{1})
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	fmt.Println("tx", txPackets(ep))
}

// txPackets counts the packets e sent, of every type and priority.
func txPackets(e *homa.Endpoint) uint64 {
	var n uint64
	for _, byPrio := range e.Stats().TxPackets {
		for _, c := range byPrio {
			n += c
		}
	}
	return n
}

// serverProcess is a running TestServerProcess.
type serverProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startServerProcess runs a server at v.addr[1] in its own process inside
// v.ns[1] and waits until it serves; t.Cleanup stops it.
func startServerProcess(t testing.TB, v *vethPair, cfg homaconf.Config) *serverProcess {
	t.Helper()
	spec, err := json.Marshal(serverSpec{Addr: v.addr[1], Cfg: cfg})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", v.ns[1], os.Args[0], "-test.run=^TestServerProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), serverProcessEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("server process: %v", err)
	}
	p := &serverProcess{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() { p.stop() })
	if !p.out.Scan() || p.out.Text() != "ready" {
		t.Fatalf("server process did not start: %q", p.out.Text())
	}
	return p
}

// stop ends the process and returns the packets it sent and its CPU time
// (user + system).
func (p *serverProcess) stop() (pkts uint64, cpu time.Duration) {
	if p.stdin == nil {
		return 0, 0
	}
	_ = p.stdin.Close()
	p.stdin = nil
	for p.out.Scan() {
		if n, ok := strings.CutPrefix(p.out.Text(), "tx "); ok {
			_, _ = fmt.Sscan(n, &pkts)
		}
	}
	done := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return pkts, cpu
}

// BenchmarkProbeDuringBulk measures 100-byte Calls from a host that is
// sending 1 MB messages at the same time, to a server in its own process
// over a veth shaped to 1 Gbit/s, the client at GOMAXPROCS 1 as an agent
// runs: the probes' responses arrive while the client's pacer is busy.
// It reports the probes' P50 and P99 RTT and the bulk goodput.
func BenchmarkProbeDuringBulk(b *testing.B) {
	const link = 1e9
	cfg := homaconf.Config{LinkBps: link, FrameOverhead: 14}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	v := newVethPair(b, "probe", link)
	client := rawEndpoint(b, v, 0, cfg)
	startServerProcess(b, v, cfg)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	dest := netip.AddrPortFrom(v.addr[1], serverPort)
	bulk := make([]byte, 1_000_000)
	if _, _, err := client.Call(ctx, dest, bulk); err != nil { // warm-up
		b.Fatal(err)
	}
	done := make(chan struct{})
	var bulkBytes int64
	var bulkTime time.Duration
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			start := time.Now()
			if _, _, err := client.Call(ctx, dest, bulk); err != nil {
				return
			}
			bulkTime += time.Since(start)
			bulkBytes += int64(len(bulk))
		}
	}()
	probe := make([]byte, 100)
	rtts := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, _, err := client.Call(ctx, dest, probe); err != nil {
			b.Fatal(err)
		}
		rtts = append(rtts, time.Since(start))
		time.Sleep(200 * time.Microsecond) // a probe stream, not a second bulk flow
	}
	b.StopTimer()
	cancel()
	<-done
	b.ReportMetric(quantileUs(rtts, 0.5), "probe_p50_us")
	b.ReportMetric(quantileUs(rtts, 0.99), "probe_p99_us")
	if bulkTime > 0 {
		b.ReportMetric(float64(bulkBytes*8)/bulkTime.Seconds()/link, "bulk_goodput/link")
	}
}
