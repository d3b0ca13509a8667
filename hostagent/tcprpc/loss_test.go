package tcprpc

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// lossChildEnv marks the test binary re-run inside its own network
// namespace by TestRetransUnderLoss.
const lossChildEnv = "HOMATB_TCPRPC_LOSS_CHILD"

// TestRetransUnderLoss runs RPCs over a loopback that drops packets and
// checks the per-RPC retransmission counts against the connection's.
// Without netem in this kernel the drops come from a token bucket with a
// short queue: a 64 KB request arrives as a burst the queue cannot hold.
// It runs in a new network namespace (root), so the host's loopback is
// untouched and the namespace vanishes with the process.
func TestRetransUnderLoss(t *testing.T) {
	if os.Getenv(lossChildEnv) == "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root for a network namespace and tc")
		}
		for _, tool := range []string{"ip", "tc"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("needs iproute2's %s", tool)
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestRetransUnderLoss$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), lossChildEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
		out, err := cmd.CombinedOutput()
		switch {
		case err != nil:
			t.Fatalf("in a new namespace: %v\n%s", err, out)
		case strings.Contains(string(out), "--- SKIP"):
			t.Skipf("in a new namespace:\n%s", out)
		}
		t.Logf("in a new namespace:\n%s", out)
		return
	}
	// MTU 1500 so a request is many segments; 20 Mbit/s with a 12 KB queue
	// overflows on every burst above a few segments.
	for _, args := range [][]string{
		{"ip", "link", "set", "lo", "up", "mtu", "1500"},
		{"tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "20mbit", "burst", "12kb", "limit", "12kb"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Skipf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	s := lengthServer(t, Config{})
	addr := s.Addr().String()

	t.Run("sequential", func(t *testing.T) {
		c := newClient(t, Config{})
		sum, hit := 0, 0
		const n = 30
		for range n {
			res, err := c.Call(t.Context(), addr, request(64<<10, 8))
			if err != nil {
				t.Fatal(err)
			}
			sum += res.Retrans
			if res.Retrans > 0 {
				hit++
			}
		}
		total := c.Stats()["tcp_retrans_segs"]
		t.Logf("%d RPCs: %d saw retransmissions, %d in all, connection counted %d", n, hit, sum, total)
		if total == 0 {
			t.Fatal("the lossy loopback forced no retransmissions: the test proves nothing")
		}
		// One RPC at a time: each retransmission belongs to exactly one.
		if uint64(sum) != total {
			t.Errorf("per-RPC retransmissions sum to %d, the connection counted %d", sum, total)
		}
	})

	t.Run("pipelined", func(t *testing.T) {
		c := newClient(t, Config{})
		var mu sync.Mutex
		var each []int
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 8 {
					res, err := c.Call(t.Context(), addr, request(64<<10, 8))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					each = append(each, res.Retrans)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		total := int(c.Stats()["tcp_retrans_segs"])
		sum := 0
		for _, r := range each {
			sum += r
			if r > total {
				t.Errorf("an RPC saw %d retransmissions, more than the connection's %d", r, total)
			}
		}
		t.Logf("%d RPCs, 4 outstanding: %d retransmissions counted over RPCs, connection counted %d", len(each), sum, total)
		if total == 0 {
			t.Fatal("the lossy loopback forced no retransmissions")
		}
		// Something is always outstanding while the kernel retransmits, so
		// every retransmission falls in at least one RPC.
		if sum < total {
			t.Errorf("per-RPC retransmissions sum to %d, below the connection's %d", sum, total)
		}
	})
}
