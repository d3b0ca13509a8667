package pias

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/cilium/ebpf"
)

// loadForRun loads the program with cfg and attaches it nowhere, for
// BPF_PROG_TEST_RUN on hand-made frames.
func loadForRun(t testing.TB, cfg Config) (*Tagger, *ebpf.Program) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to load BPF programs")
	}
	tg, err := load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg, tg.coll.Programs[piasProgHomatbPias]
}

// pkt describes a test frame.
type pkt struct {
	etherType uint16 // 0: IPv4
	proto     uint8  // 0: TCP
	tos       uint8
	options   int    // bytes of IPv4 options (a multiple of 4)
	fragment  bool   // more fragments set
	sport     uint16 // 0: 1000
	dport     uint16 // 0: 2000
	flags     uint8  // TCP flags
	payload   int
}

// frame builds p as Ethernet, IPv4 (checksum right) and TCP or UDP.
func (p pkt) frame() []byte {
	et, proto, sport, dport := p.etherType, p.proto, p.sport, p.dport
	if et == 0 {
		et = 0x0800
	}
	if proto == 0 {
		proto = 6
	}
	if sport == 0 {
		sport, dport = 1000, 2000
	}
	ihl := 20 + p.options
	l4 := 20
	if proto != 6 {
		l4 = 8
	}
	b := make([]byte, 14+ihl+l4+p.payload)
	binary.BigEndian.PutUint16(b[12:], et)
	ip := b[14:]
	ip[0] = 0x40 | byte(ihl/4)
	ip[1] = p.tos
	binary.BigEndian.PutUint16(ip[2:], uint16(ihl+l4+p.payload))
	if p.fragment {
		ip[6] = 0x20
	}
	ip[8], ip[9] = 64, proto
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], checksum(ip[:ihl]))
	l := ip[ihl:]
	binary.BigEndian.PutUint16(l[0:], sport)
	binary.BigEndian.PutUint16(l[2:], dport)
	if proto == 6 {
		l[12] = 5 << 4
		l[13] = p.flags
	}
	return b
}

// TestProgramRun runs the program on a sequence of frames and checks each
// frame that comes out: its DSCP, ECN bits, checksum, and that everything
// else is unchanged.
func TestProgramRun(t *testing.T) {
	cfg := Config{Thresholds: []uint64{1000, 3000}, DSCP: []uint8{46, 26, 10}}
	_, prog := loadForRun(t, cfg)
	const ect0, ce = 2, 3
	steps := []struct {
		name string
		in   pkt
		dscp int // -1: the frame must come out unchanged
	}{
		{"syn", pkt{flags: tcpSYN, tos: ect0}, 46},
		{"first bytes", pkt{payload: 1000, tos: ect0}, 46},
		{"at the first threshold", pkt{payload: 1, tos: ect0}, 26},
		{"below the second", pkt{payload: 1999, tos: ect0}, 26},
		{"at the second", pkt{payload: 100, tos: ce}, 10},
		{"pure ack", pkt{flags: 0x10}, 46},
		{"other direction", pkt{sport: 2000, dport: 1000, payload: 500}, 46},
		{"other connection", pkt{sport: 1001, dport: 2000, payload: 2000}, 46},
		{"still the lowest", pkt{payload: 1}, 10},
		{"ip options", pkt{options: 4, payload: 10}, 10},
		{"syn restarts", pkt{flags: tcpSYN}, 46},
		{"restarted", pkt{payload: 1000}, 46},
		{"then demoted", pkt{payload: 1}, 26},
		{"fragment", pkt{fragment: true, payload: 100, tos: 0x29}, -1},
		{"udp", pkt{proto: 17, payload: 100, tos: 0x29}, -1},
		{"icmp", pkt{proto: 1, payload: 100, tos: 0x29}, -1},
		{"ipv6 ethertype", pkt{etherType: 0x86dd, payload: 100, tos: 0x29}, -1},
	}
	for _, s := range steps {
		in := s.in.frame()
		out := make([]byte, len(in))
		ret, err := prog.Run(&ebpf.RunOptions{Data: in, DataOut: out})
		if err != nil {
			t.Fatalf("%s: test run: %v", s.name, err)
		}
		if ret != 0 {
			t.Errorf("%s: returned %d, want TC_ACT_OK (0)", s.name, ret)
		}
		if s.dscp < 0 {
			if string(out) != string(in) {
				t.Errorf("%s: frame changed:\n in  %x\n out %x", s.name, in, out)
			}
			continue
		}
		ip := out[14:]
		ihl := int(ip[0]&0xf) * 4
		if got := int(ip[1] >> 2); got != s.dscp {
			t.Errorf("%s: DSCP %d, want %d", s.name, got, s.dscp)
		}
		if ip[1]&3 != s.in.tos&3 {
			t.Errorf("%s: ECN bits %d, sent %d", s.name, ip[1]&3, s.in.tos&3)
		}
		if c := checksum(ip[:ihl]); c != 0 {
			t.Errorf("%s: IPv4 header checksum wrong (sums to %#x)", s.name, c)
		}
		// Nothing but the TOS byte and the checksum may change.
		in[15], out[15] = 0, 0
		copy(in[24:26], []byte{0, 0})
		copy(out[24:26], []byte{0, 0})
		if string(out) != string(in) {
			t.Errorf("%s: bytes other than TOS and checksum changed", s.name)
		}
	}
}

// BenchmarkProgram measures the program's run time per data packet of an
// established flow, in the kernel (BPF_PROG_TEST_RUN), against the
// baseline of an untouched UDP packet (parse and leave). The kernel runs
// the same skb every time, so after the first run its DSCP is already the
// level's and the rewrite is skipped: this is the lookup, count and level
// path, without bpf_skb_store_bytes and bpf_l3_csum_replace.
func BenchmarkProgram(b *testing.B) {
	cfg := Config{Thresholds: []uint64{1000, 3000}}
	for _, bc := range []struct {
		name string
		in   pkt
	}{
		{"udp-untouched", pkt{proto: 17, payload: 1400}},
		{"tcp-data", pkt{payload: 1400}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			_, prog := loadForRun(b, cfg)
			in := bc.in.frame()
			_, per, err := prog.Benchmark(in, b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(per.Nanoseconds()), "ns/pkt")
		})
	}
}
