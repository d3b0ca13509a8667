package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
)

// Every datagram starts with a sequence number and the send time (Unix ns).
const header = 16

const batch = 64

// udpHeaders is what Ethernet, IPv4 and UDP add to a payload.
const udpHeaders = 14 + 20 + 8

type rateResult struct {
	Cmd        string  `json:"cmd"`
	FrameBytes int     `json:"frame_bytes,omitempty"`
	Packets    uint64  `json:"packets"`
	Seconds    float64 `json:"seconds"`
	PPS        float64 `json:"pps"`
	Gbps       float64 `json:"gbps"`
}

func runBlast(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("blast", flag.ContinueOnError)
	dst := fs.String("dst", "", "IP:PORT")
	size := fs.Int("size", 1500, "Ethernet frame size in bytes (64..1514)")
	dur := fs.Duration("duration", 3*time.Second, "how long to send")
	pps := fs.Float64("pps", 0, "packets per second (0: as fast as the sender can)")
	tos := fs.Int("tos", 0, "IPv4 TOS byte")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *size < 60 || *size > 1514 {
		return nil, fmt.Errorf("frame size %d not in 60..1514", *size)
	}
	raddr, err := net.ResolveUDPAddr("udp4", *dst)
	if err != nil {
		return nil, err
	}
	c, err := net.DialUDP("udp4", nil, raddr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	pc := ipv4.NewPacketConn(c)
	if err := pc.SetTOS(*tos); err != nil {
		return nil, fmt.Errorf("tos: %w", err)
	}
	_ = c.SetWriteBuffer(4 << 20)
	payload := max(*size-udpHeaders, header)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, payload)}
	}
	var seq uint64
	start := time.Now()
	end := start.Add(*dur)
	for time.Now().Before(end) && ctx.Err() == nil {
		n := batch
		if *pps > 0 {
			// Pace by batches: send what is due, then sleep.
			due := uint64(time.Since(start).Seconds() * *pps)
			if due <= seq {
				time.Sleep(200 * time.Microsecond)
				continue
			}
			n = int(min(uint64(batch), due-seq))
		}
		now := uint64(time.Now().UnixNano())
		for i := range n {
			b := msgs[i].Buffers[0]
			binary.BigEndian.PutUint64(b[0:8], seq+uint64(i))
			binary.BigEndian.PutUint64(b[8:16], now)
		}
		sent, err := pc.WriteBatch(msgs[:n], 0)
		// A full device queue, or an ICMP port unreachable reported on
		// the connected socket before the sink was up, loses datagrams
		// but does not end the test.
		if err != nil && !errors.Is(err, syscall.ENOBUFS) && !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("sendmmsg: %w", err)
		}
		seq += uint64(max(sent, 0))
	}
	secs := time.Since(start).Seconds()
	return rateResult{Cmd: "blast", FrameBytes: payload + udpHeaders, Packets: seq, Seconds: secs,
		PPS: float64(seq) / secs, Gbps: float64(seq) * float64(payload+udpHeaders) * 8 / secs / 1e9}, nil
}

func listen(addr string) (*net.UDPConn, *ipv4.PacketConn, error) {
	laddr, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, nil, err
	}
	c, err := net.ListenUDP("udp4", laddr)
	if err != nil {
		return nil, nil, err
	}
	_ = c.SetReadBuffer(8 << 20)
	return c, ipv4.NewPacketConn(c), nil
}

// runSink counts datagrams until duration passes or, once traffic started,
// until the line has been quiet for a second; the rate is measured between
// the first and the last datagram.
func runSink(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("sink", flag.ContinueOnError)
	addr := fs.String("listen", "", "IP:PORT")
	dur := fs.Duration("duration", 10*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c, pc, err := listen(*addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 2048)}
	}
	var count, bytes uint64
	var first, last time.Time
	deadline := time.Now().Add(*dur)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		wait := deadline
		if q := last.Add(time.Second); !last.IsZero() && q.Before(deadline) {
			wait = q
		}
		_ = c.SetReadDeadline(wait)
		n, err := pc.ReadBatch(msgs, 0)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				if !last.IsZero() {
					break
				}
				continue
			}
			if ctx.Err() != nil {
				break
			}
			return nil, fmt.Errorf("recvmmsg: %w", err)
		}
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		last = now
		count += uint64(n)
		for i := range n {
			bytes += uint64(msgs[i].N + udpHeaders)
		}
	}
	r := rateResult{Cmd: "sink", Packets: count}
	if count > 1 {
		r.Seconds = last.Sub(first).Seconds()
		r.PPS = float64(count-1) / r.Seconds
		r.Gbps = float64(bytes) * 8 / r.Seconds / 1e9
		r.FrameBytes = int(bytes / count)
	}
	return r, nil
}

// runEcho returns every datagram to its sender.
func runEcho(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	addr := fs.String("listen", "", "IP:PORT")
	dur := fs.Duration("duration", time.Minute, "stop after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c, _, err := listen(*addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	buf := make([]byte, 2048)
	deadline := time.Now().Add(*dur)
	_ = c.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return nil, nil // deadline or closed: done
		}
		if _, err := c.WriteToUDPAddrPort(buf[:n], from); err != nil {
			return nil, fmt.Errorf("echo: %w", err)
		}
	}
}

type probeResult struct {
	Cmd        string  `json:"cmd"`
	Sent       int     `json:"sent"`
	Received   int     `json:"received"`
	P50us      float64 `json:"rtt_p50_us"`
	P99us      float64 `json:"rtt_p99_us"`
	Meanus     float64 `json:"rtt_mean_us"`
	Minus      float64 `json:"rtt_min_us"`
	CPUSeconds float64 `json:"cpu_seconds,omitempty"` // of --cpu-pid during the probes
	CPUShare   float64 `json:"cpu_share,omitempty"`   // CPUSeconds / wall seconds
}

// runProbe measures RTTs of small datagrams sent one at a time, each after
// the previous answer (or a timeout) and a pause of interval.
func runProbe(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	dst := fs.String("dst", "", "IP:PORT of an echo server")
	count := fs.Int("count", 1000, "probes")
	interval := fs.Duration("interval", time.Millisecond, "pause between probes")
	tos := fs.Int("tos", 0, "IPv4 TOS byte")
	cpuPid := fs.Int("cpu-pid", 0, "also report the CPU time this process used meanwhile")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	raddr, err := net.ResolveUDPAddr("udp4", *dst)
	if err != nil {
		return nil, err
	}
	c, err := net.DialUDP("udp4", nil, raddr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := ipv4.NewConn(c).SetTOS(*tos); err != nil {
		return nil, err
	}
	var cpu0 float64
	if *cpuPid > 0 {
		if cpu0, err = cpuSeconds(*cpuPid); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	buf := make([]byte, 64)
	in := make([]byte, 2048)
	rtts := make([]float64, 0, *count)
	for i := 0; i < *count && ctx.Err() == nil; i++ {
		binary.BigEndian.PutUint64(buf[0:8], uint64(i))
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			return nil, err
		}
		_ = c.SetReadDeadline(t0.Add(200 * time.Millisecond))
		for {
			n, err := c.Read(in)
			if err != nil {
				break // lost: counted as not received
			}
			if n >= 8 && binary.BigEndian.Uint64(in[0:8]) == uint64(i) {
				rtts = append(rtts, float64(time.Since(t0).Nanoseconds())/1e3)
				break
			}
		}
		time.Sleep(*interval)
	}
	r := probeResult{Cmd: "probe", Sent: *count, Received: len(rtts)}
	if *cpuPid > 0 {
		cpu1, err := cpuSeconds(*cpuPid)
		if err != nil {
			return nil, err
		}
		r.CPUSeconds = cpu1 - cpu0
		r.CPUShare = r.CPUSeconds / time.Since(start).Seconds()
	}
	if len(rtts) > 0 {
		slices.Sort(rtts)
		r.P50us = rtts[len(rtts)/2]
		r.P99us = rtts[min(len(rtts)-1, len(rtts)*99/100)]
		r.Minus = rtts[0]
		var sum float64
		for _, v := range rtts {
			sum += v
		}
		r.Meanus = sum / float64(len(rtts))
	}
	return r, nil
}

// cpuSeconds is the user+system CPU time of pid from /proc/PID/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command; utime and stime are the
	// 14th and 15th fields of the line, in clock ticks (100 per second).
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return float64(u+s) / 100, nil
}
