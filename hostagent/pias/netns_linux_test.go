//go:build linux

package pias

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/internal/nsenter"
)

// The two ends of the test's veth, in namespaces of their own.
const (
	addrA = "10.147.0.1"
	addrB = "10.147.0.2"
)

// vethLink is a veth pair between two fresh namespaces: A sends through the
// tagger, B receives and captures.
type vethLink struct {
	ns, dev [2]string
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newLink creates the namespaces (deleted in Cleanup); names carry the
// PID so concurrent runs cannot clash.
func newLink(t *testing.T) *vethLink {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces, BPF and packet sockets")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
	pid := os.Getpid()
	l := &vethLink{
		ns:  [2]string{fmt.Sprintf("pias-%d-a", pid), fmt.Sprintf("pias-%d-b", pid)},
		dev: [2]string{fmt.Sprintf("pias%da", pid%100000), fmt.Sprintf("pias%db", pid%100000)},
	}
	for _, ns := range l.ns {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	run(t, "ip", "link", "add", l.dev[0], "netns", l.ns[0], "type", "veth", "peer", "name", l.dev[1], "netns", l.ns[1])
	for i, addr := range []string{addrA, addrB} {
		run(t, "ip", "-n", l.ns[i], "addr", "add", addr+"/24", "dev", l.dev[i])
		run(t, "ip", "-n", l.ns[i], "link", "set", l.dev[i], "up")
		run(t, "ip", "-n", l.ns[i], "link", "set", "lo", "up")
	}
	// ECN on, so data carries ECT(0) and the test sees the rewrite keep it.
	if err := l.in(0, func() error { return os.WriteFile("/proc/sys/net/ipv4/tcp_ecn", []byte("1"), 0) }); err != nil {
		t.Fatalf("net.ipv4.tcp_ecn in %s: %v", l.ns[0], err)
	}
	return l
}

// in runs fn on an OS thread in namespace i; sockets fn creates stay
// there afterwards.
func (l *vethLink) in(i int, fn func() error) error {
	return nsenter.Do("/run/netns/"+l.ns[i], fn)
}

// frame is what the capture keeps of an IPv4 packet from A.
type frame struct {
	proto   uint8
	tos     uint8
	csumOK  bool
	flags   uint8 // TCP flags
	seq     uint32
	payload int
	dstPort uint16
}

// capture reads every IPv4 frame from addrA arriving on B's interface until
// stop is called.
func (l *vethLink) capture(t *testing.T) (stop func() []frame) {
	var fd int
	err := l.in(1, func() error {
		ifc, err := net.InterfaceByName(l.dev[1])
		if err != nil {
			return err
		}
		proto := int(htons(unix.ETH_P_ALL))
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, proto); err != nil {
			return err
		}
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20)
		tv := unix.Timeval{Usec: 50000}
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifc.Index})
	})
	if err != nil {
		t.Fatalf("packet socket on %s: %v", l.dev[1], err)
	}
	var (
		mu     sync.Mutex
		frames []frame
		done   = make(chan struct{})
		quit   = make(chan struct{})
	)
	src := net.ParseIP(addrA).To4()
	go func() {
		defer close(done)
		buf := make([]byte, 256<<10)
		for {
			select {
			case <-quit:
				return
			default:
			}
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				continue // timeout: look at quit again
			}
			if f, ok := parse(buf[:n], src); ok {
				mu.Lock()
				frames = append(frames, f)
				mu.Unlock()
			}
		}
	}()
	return func() []frame {
		close(quit)
		<-done
		unix.Close(fd)
		return frames
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// parse reads an Ethernet frame carrying IPv4 from src.
func parse(b []byte, src net.IP) (frame, bool) {
	if len(b) < 34 || binary.BigEndian.Uint16(b[12:]) != unix.ETH_P_IP {
		return frame{}, false
	}
	ip := b[14:]
	ihl := int(ip[0]&0xf) * 4
	if ihl < 20 || len(ip) < ihl || !net.IP(ip[12:16]).Equal(src) {
		return frame{}, false
	}
	f := frame{proto: ip[9], tos: ip[1], csumOK: checksum(ip[:ihl]) == 0}
	if f.proto == unix.IPPROTO_TCP && len(ip) >= ihl+20 {
		tcp := ip[ihl:]
		f.dstPort = binary.BigEndian.Uint16(tcp[2:])
		f.seq = binary.BigEndian.Uint32(tcp[4:])
		f.flags = tcp[13]
		f.payload = int(binary.BigEndian.Uint16(ip[2:])) - ihl - int(tcp[12]>>4)*4
	}
	return f, true
}

// checksum is the Internet checksum of b; 0 over a header with its
// checksum field means the checksum is right.
func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// server accepts one connection in B and reports how many bytes it read.
func (l *vethLink) server(t *testing.T) (addr string, got <-chan int64) {
	var ln net.Listener
	if err := l.in(1, func() (err error) { ln, err = net.Listen("tcp4", addrB+":0"); return err }); err != nil {
		t.Fatalf("listen in %s: %v", l.ns[1], err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- -1
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		ch <- n
	}()
	return ln.Addr().String(), ch
}

// dial connects from A.
func (l *vethLink) dial(t *testing.T, addr string) net.Conn {
	var c net.Conn
	if err := l.in(0, func() (err error) { c, err = net.DialTimeout("tcp4", addr, 5*time.Second); return err }); err != nil {
		t.Fatalf("dial %s from %s: %v", addr, l.ns[0], err)
	}
	return c
}

func (l *vethLink) attach(t *testing.T, cfg Config, legacy bool) *Tagger {
	var tg *Tagger
	if err := l.in(0, func() (err error) { tg, err = attach(l.dev[0], cfg, legacy); return err }); err != nil {
		t.Fatalf("attach: %v", err)
	}
	t.Cleanup(func() {
		if err := tg.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return tg
}

// levelAt is the level a packet leaving after sent bytes must have.
func levelAt(c Config, sent uint64) int {
	l := 0
	for l < len(c.Thresholds) && sent >= c.Thresholds[l] {
		l++
	}
	return l
}

// write sends n bytes on c and waits for nothing.
func write(t *testing.T, c net.Conn, n int) {
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatalf("write %d bytes: %v", n, err)
	}
}

// finish closes c and checks the receiver read all want bytes.
func finish(t *testing.T, c net.Conn, got <-chan int64, want int64) {
	c.Close()
	select {
	case n := <-got:
		if n != want {
			t.Fatalf("receiver read %d bytes, want %d: the receiving kernel dropped data", n, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("receiver did not finish in 20 s")
	}
}

const (
	tcpSYN = 0x02
	tcpFIN = 0x01
)

func TestTagsTCPByBytesSent(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		mode := map[bool]string{false: "tcx", true: "clsact"}[legacy]
		t.Run(mode, func(t *testing.T) {
			l := newLink(t)
			cfg := Config{Thresholds: []uint64{20000, 100000, 400000}, DSCP: []uint8{56, 40, 24, 8}}
			tg := l.attach(t, cfg, legacy)
			if tg.Mode != mode {
				t.Fatalf("attached with %s, want %s", tg.Mode, mode)
			}
			stop := l.capture(t)
			addr, got := l.server(t)
			c := l.dial(t, addr)
			const total = 2 << 20
			write(t, c, total)
			finish(t, c, got, total)

			// UDP with a TOS of its own (DSCP 10, ECT(1)) must pass as it is.
			// Unconnected, so B's port unreachables do not fail the writes.
			var u *net.UDPConn
			if err := l.in(0, func() (err error) { u, err = net.ListenUDP("udp4", nil); return err }); err != nil {
				t.Fatal(err)
			}
			raw, err := u.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var serr error
			if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, 0x29) }); err != nil || serr != nil {
				t.Fatalf("IP_TOS: %v %v", err, serr)
			}
			dst := &net.UDPAddr{IP: net.ParseIP(addrB), Port: 9}
			for range 3 {
				if _, err := u.WriteToUDP([]byte("not tcp"), dst); err != nil {
					t.Fatal(err)
				}
			}
			u.Close()
			time.Sleep(200 * time.Millisecond)
			seen, udp, resent := checkFrames(t, cfg, stop(), total, func(off uint64) int { return levelAt(cfg, off) })
			for lv, n := range seen {
				if n == 0 {
					t.Errorf("no data packet captured at level %d", lv)
				}
			}
			if udp != 3 {
				t.Errorf("captured %d UDP packets, sent 3", udp)
			}

			levels, _, err := tg.Stats()
			if err != nil {
				t.Fatal(err)
			}
			var bytes uint64
			for i, s := range levels {
				bytes += s.Bytes
				if i < cfg.Levels() && s.Packets == 0 {
					t.Errorf("stats: level %d counted no packets", i)
				}
			}
			// The egress hook also counts what TCP sent again (a tail loss
			// probe, or a spurious retransmission when a loaded machine
			// delays the ACKs), which the capture saw too; 1% of slack for
			// a partial retransmission the capture's accounting misses.
			if bytes < total || bytes > total+resent+total/100 {
				t.Errorf("stats: %d payload bytes over the levels, want the %d sent plus the %d the capture saw resent (+1%%)", bytes, total, resent)
			}
			t.Logf("stats by level: %+v", levels)
		})
	}
}

// checkFrames checks the captured frames of one TCP flow of total bytes,
// whose data at sequence offset off must be at level want(off), and that
// UDP passed untouched. It returns the data packets seen at each level,
// the UDP packets and the payload bytes TCP sent again.
func checkFrames(t *testing.T, cfg Config, frames []frame, total int, want func(off uint64) int) (seen []int, udp int, resent uint64) {
	t.Helper()
	var isn uint32
	var synSeen bool
	seen = make([]int, cfg.Levels())
	var end uint64 // highest sequence offset sent so far
	for _, f := range frames {
		if !f.csumOK {
			t.Errorf("IPv4 header checksum wrong: %+v", f)
		}
		dscp, ecn := f.tos>>2, f.tos&3
		switch f.proto {
		case unix.IPPROTO_UDP:
			udp++
			if f.tos != 0x29 {
				t.Errorf("UDP TOS %#x, sent 0x29: non-TCP packets must pass untouched", f.tos)
			}
			continue
		case unix.IPPROTO_TCP:
		default:
			continue
		}
		if f.flags&tcpSYN != 0 {
			isn, synSeen = f.seq, true
		}
		level, ok := 0, false
		if f.payload > 0 {
			if !synSeen {
				t.Fatal("data before the SYN in the capture")
			}
			off := uint64(f.seq - isn - 1)
			if off+uint64(f.payload) <= end {
				resent += uint64(f.payload)
				continue // a retransmission: counted twice by the tagger
			}
			end = off + uint64(f.payload)
			level = want(off)
			seen[level]++
			if ecn != 2 {
				t.Errorf("data at offset %d: ECN bits %d, want ECT(0) = 2 kept through the rewrite", off, ecn)
			}
			// The tagger counts what was resent before this packet too
			// (its bytes sent, not the stream's offset): a loaded machine's
			// retransmissions may move a packet near a threshold one
			// level on.
			lo, hi := min(level, want(off+resent)), max(level, want(off+resent))
			for lv := lo; lv <= hi; lv++ {
				ok = ok || dscp == cfg.LevelDSCP(lv)
			}
		}
		if !ok && dscp != cfg.LevelDSCP(level) {
			t.Errorf("TCP packet (flags %#x, %d bytes at offset %d): DSCP %d, want level %d's %d",
				f.flags, f.payload, f.seq-isn-1, dscp, level, cfg.LevelDSCP(level))
		}
	}
	if end != uint64(total) {
		t.Errorf("captured data up to offset %d, sent %d", end, total)
	}
	t.Logf("%d frames; data packets by level: %v; %d bytes resent", len(frames), seen, resent)
	return seen, udp, resent
}

// TestIdleReset sends on one connection, pauses longer than IdleReset and
// sends again: the second burst starts at level 0. With the reset switched
// off (SetConfig) a third burst after a pause keeps counting.
func TestIdleReset(t *testing.T) {
	l := newLink(t)
	cfg := Config{Thresholds: []uint64{20000, 100000, 400000}, DSCP: []uint8{56, 40, 24, 8}, IdleReset: 100 * time.Millisecond}
	tg := l.attach(t, cfg, false)
	stop := l.capture(t)
	addr, got := l.server(t)
	c := l.dial(t, addr)
	const first, second, third = 200000, 30000, 10000
	write(t, c, first)
	time.Sleep(300 * time.Millisecond) // the veth is instant: all of it left
	write(t, c, second)
	time.Sleep(300 * time.Millisecond)
	off := cfg
	off.IdleReset = 0
	if err := tg.SetConfig(off); err != nil {
		t.Fatal(err)
	}
	write(t, c, third)
	finish(t, c, got, first+second+third)
	time.Sleep(100 * time.Millisecond)
	seen, _, _ := checkFrames(t, cfg, stop(), first+second+third, func(off uint64) int {
		if off < first {
			return levelAt(cfg, off)
		}
		// Counting restarts at the second burst and goes on into the third.
		return levelAt(cfg, off-first)
	})
	if seen[2] == 0 || seen[0] < 2 {
		t.Errorf("data packets by level %v: want level 2 reached before the pause and level 0 again after it", seen)
	}
	_, resets, err := tg.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if resets != 1 {
		t.Errorf("idle resets = %d, want 1 (the second pause came with the reset off)", resets)
	}
}
