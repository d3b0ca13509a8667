//go:build linux

package homa_test

import (
	"bufio"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// TestRoCESocket runs the roce variant between two namespaces on its real
// socket (UDP port 4791): 300 Calls of mixed sizes, each response checked.
// With tshark installed it also captures the veth while 20 of them run
// and has Wireshark's own dissector decode the file: every packet is
// RoCE (InfiniBand BTH on UDP 4791) with its opcode, destination QP, PSN
// and ack-request bit; data goes as SENDs at DSCP CS3 with ECT(0), ACKs
// (AETH) at CS6.
func TestRoCESocket(t *testing.T) {
	v := newVethPair(t, "qp", 0)
	cfg := homaconf.Config{Variant: homaconf.VariantRoCE, LinkBps: 10e9, UnloadedRTT: 50 * time.Microsecond, TimeoutTicks: 1000}
	ctx, homaRPCs := socketCalls(t, v, cfg)
	homaRPCs(300, 0)
	t.Run("tshark", func(t *testing.T) {
		if _, err := exec.LookPath("tshark"); err != nil {
			t.Skip("tshark not installed (scripts/install-deps.sh installs it)")
		}
		pcap := filepath.Join(t.TempDir(), "roce.pcapng")
		cap := exec.CommandContext(ctx, "ip", "netns", "exec", v.ns[1], "tshark", "-q", "-i", v.dev[1], "-f", "udp", "-w", pcap)
		stderr, err := cap.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cap.Start(); err != nil {
			t.Fatal(err)
		}
		// tshark says "Capture started" once dumpcap has its socket open.
		sc := bufio.NewScanner(stderr)
		for sc.Scan() && !strings.Contains(sc.Text(), "Capture started") {
		}
		go func() { // drain the rest
			for sc.Scan() {
			}
		}()
		homaRPCs(20, 1000)
		time.Sleep(200 * time.Millisecond)
		_ = cap.Process.Signal(os.Interrupt)
		_ = cap.Wait()
		out, err := exec.CommandContext(ctx, "tshark", "-r", pcap, "-T", "fields", "-E", "separator=,",
			"-e", "udp.dstport", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn",
			"-e", "infiniband.bth.a", "-e", "infiniband.aeth.msn", "-e", "ip.dsfield.dscp", "-e", "ip.dsfield.ecn").Output()
		if err != nil {
			t.Fatalf("tshark -r: %v", err)
		}
		if fi, err := os.Stat(pcap); err != nil || fi.Size() == 0 {
			t.Fatalf("tshark wrote no capture: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var sends, acks int
		for _, l := range lines {
			f := strings.Split(l, ",")
			if len(f) != 8 || f[0] != "4791" || f[1] == "" || f[2] == "" || f[3] == "" || f[4] == "" {
				t.Fatalf("not decoded as RoCE with BTH fields: %q", l)
			}
			switch f[1] {
			case "0", "1", "2", "4": // SEND First, Middle, Last, Only
				sends++
				if f[6] != "24" || f[7] != "2" {
					t.Errorf("SEND at DSCP %s ECN %s, want 24 (CS3) and 2 (ECT(0)): %q", f[6], f[7], l)
				}
			case "17": // Acknowledge
				acks++
				if f[5] == "" || f[6] != "48" {
					t.Errorf("ACK without AETH MSN or not at DSCP 48 (CS6): %q", l)
				}
			default:
				t.Errorf("unexpected opcode: %q", l)
			}
		}
		if sends < 40 || acks < 20 {
			t.Errorf("%d SENDs and %d ACKs decoded, want at least 40 and 20", sends, acks)
		}
		// Whole frames decode without complaint (a capture cut to a
		// snaplen makes Wireshark miss the ICRC and call the packet
		// malformed).
		sum, err := exec.CommandContext(ctx, "tshark", "-r", pcap).Output()
		if err != nil {
			t.Fatalf("tshark -r: %v", err)
		}
		if strings.Contains(string(sum), "Malformed") || !strings.Contains(string(sum), "RRoCE") {
			t.Errorf("tshark's summary lines have malformed packets or no RRoCE:\n%.600s", sum)
		}
		t.Logf("%d packets decoded as RoCE: %d SENDs, %d ACKs; first: %s; %s", len(lines), sends, acks, lines[0], strings.SplitN(string(sum), "\n", 2)[0])
	})
}

// socketCalls starts cfg's variant on its real sockets in v's two
// namespaces, an echo server in the second, and returns a context for
// the test and calls(n, seed), which makes n Calls of mixed sizes from
// the first and checks each response. At the end of the test no request
// ran twice.
func socketCalls(t *testing.T, v *vethPair, cfg homaconf.Config) (context.Context, func(n int, seed uint64)) {
	client, server := rawPair(t, v, cfg)
	srv, err := server.Listen(serverPort)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	es := serveEcho(ctx, t, srv)
	t.Cleanup(func() {
		if d := es.Duplicates(); d != 0 {
			t.Errorf("%d requests executed twice", d)
		}
	})
	dest := netip.AddrPortFrom(v.addr[1], serverPort)
	return ctx, func(n int, seed uint64) {
		for i := range n {
			req := make([]byte, []int{1, 100, 1500, 9000, 60_000}[i%5])
			fill(req, seed+uint64(i))
			resp, _, err := client.Call(ctx, dest, req)
			if err != nil || string(resp) != string(req) {
				t.Fatalf("call %d (%d bytes): %v, response of %d bytes differs: %v", i, len(req), err, len(resp), string(resp) != string(req))
			}
		}
	}
}
