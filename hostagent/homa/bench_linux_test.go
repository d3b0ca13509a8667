//go:build linux

package homa_test

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

const udpPort = 9146

// median of ds in microseconds.
func medianUs(ds []time.Duration) float64 { return quantileUs(ds, 0.5) }

// quantileUs is the q-quantile of ds in microseconds (nearest rank).
func quantileUs(ds []time.Duration, q float64) float64 {
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))]) / float64(time.Microsecond)
}

// udpPingPong measures n round trips of a 100-byte UDP datagram between
// the namespaces of v, through the same batched socket code Homa uses:
// waiting in the netpoller, or with poll spinning on TryReadBatch as
// Homa's Config.Poll does.
func udpPingPong(b *testing.B, v *vethPair, n int, poll bool) []time.Duration {
	var conns [2]*homa.RawConn
	for i := range 2 {
		if err := inNetns(v.ns[i], func() (err error) {
			conns[i], err = homa.ListenUDPBatch(v.addr[i], udpPort)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Close()
	}
	read := func(c *homa.RawConn, pkts []homa.Packet) error {
		for {
			pkts[0].Buf = pkts[0].Buf[:cap(pkts[0].Buf)]
			if !poll {
				_, err := c.ReadBatch(pkts)
				return err
			}
			if n, err := c.TryReadBatch(pkts); n > 0 || err != nil {
				return err
			}
		}
	}
	go func() { // echo server
		pkts := []homa.Packet{{Buf: make([]byte, 2048)}}
		for {
			if err := read(conns[1], pkts); err != nil {
				return
			}
			if err := conns[1].WriteBatch(pkts); err != nil {
				return
			}
		}
	}()
	out := []homa.Packet{{Buf: make([]byte, 100), Addr: v.addr[1]}}
	in := []homa.Packet{{Buf: make([]byte, 2048)}}
	rtts := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := conns[0].WriteBatch(out); err != nil {
			b.Fatal(err)
		}
		if err := read(conns[0], in); err != nil {
			b.Fatal(err)
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts
}

// homaPingPong measures n Calls of 100 bytes each way. It closes its
// endpoints before it returns: raw sockets on the same address each get
// every Homa packet, so endpoints left open would answer the next pair's
// requests with RPC_UNKNOWN and spend CPU on all its packets.
func homaPingPong(b *testing.B, v *vethPair, n int, cfg homaconf.Config) []time.Duration {
	client, se := rawPair(b, v, cfg)
	defer client.Close()
	defer se.Close()
	srv, err := se.Listen(serverPort)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	serveEcho(ctx, b, srv)
	dest := netip.AddrPortFrom(v.addr[1], serverPort)
	req := make([]byte, 100)
	rtts := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, _, err := client.Call(ctx, dest, req); err != nil {
			b.Fatal(err)
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts
}

// BenchmarkUnloadedRTT compares a 100-byte Homa RPC with a UDP ping-pong
// between the same two namespaces (unshaped veth), in the same run, with
// Homa's default configuration and with Config.Poll at Linux Homa's
// poll_usecs default of 50 µs, and the UDP ping-pong waiting in the
// netpoller and spinning. ns/op is the sum of the four round trips; the
// metrics are medians and their ratios (target homa/udp <= 1.5).
func BenchmarkUnloadedRTT(b *testing.B) {
	v := newVethPair(b, "rtt", 0)
	udpPingPong(b, v, 200, false) // warm up caches and the scheduler
	b.ResetTimer()
	udp := udpPingPong(b, v, b.N, false)
	udpPoll := udpPingPong(b, v, b.N, true)
	hm := homaPingPong(b, v, b.N, homaconf.Config{LinkBps: 10e9})
	hp := homaPingPong(b, v, b.N, homaconf.Config{LinkBps: 10e9, Poll: 50 * time.Microsecond})
	u, up, h, p := medianUs(udp), medianUs(udpPoll), medianUs(hm), medianUs(hp)
	b.ReportMetric(u, "udp_p50_us")
	b.ReportMetric(up, "udp_poll_p50_us")
	b.ReportMetric(h, "homa_p50_us")
	b.ReportMetric(p, "poll_p50_us")
	b.ReportMetric(h/u, "homa/udp")
	b.ReportMetric(p/u, "poll/udp")
	b.ReportMetric(p/up, "poll/udp_poll")
	b.ReportMetric(quantileUs(udp, 0.99), "udp_p99_us")
	b.ReportMetric(quantileUs(hm, 0.99), "homa_p99_us")
	b.ReportMetric(quantileUs(hp, 0.99), "poll_p99_us")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGoodput1MB sends one 1 MB request (1-byte response) per op
// over a veth link shaped to 1 Gbit/s with htb at both ends. It reports
// goodput as a fraction of the link rate (payload bits over Call time,
// which counts one response latency beyond the message: 0.15% here),
// process CPU time per packet (both endpoints and the kernel work charged
// to them) and heap allocations per packet. Both hosts share the process:
// with procs=1 (the GOMAXPROCS every agent of the testbed runs with) one
// thread does all the work and wakes no other; procs=2 adds cross-thread
// wake-ups and leaves the kernel's veth and htb work no free vCPU on this
// machine. "default" paces for an Ethernet wire (42 B a packet beyond the
// IP packet), which leaves this link, where htb charges 14 B, idle 1.8% of
// the time by construction; "htb" sets the pacer's FrameOverhead to the
// 14 B htb charges; "tuned" also lets the pacer keep 100 µs in the host
// queue and allows 200 KB in flight, to ride over this machine's
// scheduling delays; "jumbo" is "htb" with MTU 9000 on both ends, a sixth
// of the packets for the same bytes, which shows how much of the gap to
// the link rate is the cost per packet.
func BenchmarkGoodput1MB(b *testing.B) {
	const link = 1e9
	for _, tt := range []struct {
		name string
		cfg  homaconf.Config
	}{
		{"default", homaconf.Config{LinkBps: link}},
		{"htb", homaconf.Config{LinkBps: link, FrameOverhead: 14}},
		{"tuned", homaconf.Config{LinkBps: link, FrameOverhead: 14, MaxNICBacklog: 100 * time.Microsecond, MaxIncoming: 200_000}},
		{"jumbo", homaconf.Config{LinkBps: link, FrameOverhead: 14, MTU: 9000}},
	} {
		for _, procs := range []string{"1", "2", "1x2"} {
			b.Run(fmt.Sprintf("%s/procs=%s", tt.name, procs), func(b *testing.B) {
				n := 1
				if procs == "2" {
					n = 2
				}
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
				goodput(b, tt.cfg, procs == "1x2")
			})
		}
	}
}

// goodput measures b.N Calls of 1 MB, with the server in this process or,
// with apart, in a process of its own.
func goodput(b *testing.B, cfg homaconf.Config, apart bool) {
	const link, size = 1e9, 1_000_000
	v := newVethPair(b, "gput", link)
	if cfg.MTU != 0 {
		for i := range 2 {
			ipCmd(b, "-n", v.ns[i], "link", "set", v.dev[i], "mtu", fmt.Sprint(cfg.MTU))
		}
	}
	client := rawEndpoint(b, v, 0, cfg)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var proc *serverProcess
	var server *homa.Endpoint
	if apart {
		proc = startServerProcess(b, v, cfg)
	} else {
		server = rawEndpoint(b, v, 1, cfg)
		srv, err := server.Listen(serverPort)
		if err != nil {
			b.Fatal(err)
		}
		serveFixed(ctx, srv, []byte{1})
	}
	dest := netip.AddrPortFrom(v.addr[1], serverPort)
	req := make([]byte, size)
	if _, _, err := client.Call(ctx, dest, req); err != nil { // warm-up
		b.Fatal(err)
	}
	pkts := func() uint64 {
		n := txPackets(client)
		if server != nil {
			n += txPackets(server)
		}
		return n
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	p0, cpu0 := pkts(), cpuTime()
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, _, err := client.Call(ctx, dest, req); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	p, cpu := float64(pkts()-p0), cpuTime()-cpu0
	if proc != nil {
		// The server's whole life, its start and the warm-up Call too.
		sp, scpu := proc.stop()
		p, cpu = p+float64(sp), cpu+scpu
	}
	b.ReportMetric(float64(size*8*b.N)/total.Seconds()/link, "goodput/link")
	b.ReportMetric(float64(cpu)/p, "cpu_ns/pkt")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/p, "allocs/pkt")
	b.ReportMetric(p/float64(b.N), "pkts/op")
	if s := client.Stats(); s.Retransmits > 0 {
		b.Logf("client retransmitted %d packets", s.Retransmits)
	}
}
