package pipeline

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/p4"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

func lpm(value uint32, prefix int) Entry {
	m, err := PrefixMask(32, prefix)
	if err != nil {
		panic(err)
	}
	return Entry{Match: [MaxKeyFields]FieldMatch{{Value: uint64(value), Mask: m}}, Priority: int32(prefix)}
}

func TestTableLookup(t *testing.T) {
	fwd := func(e Entry, port uint64) Entry {
		e.Action = ActionCall{ID: p4.ActionIPv4Forward, Params: [MaxParams]uint64{port}}
		return e
	}
	ternary := func(v, m uint64, prio int32, port uint64) Entry {
		return Entry{Match: [MaxKeyFields]FieldMatch{{Value: v, Mask: m}}, Priority: prio,
			Action: ActionCall{ID: p4.ActionIPv4Forward, Params: [MaxParams]uint64{port}}}
	}
	def := ActionCall{ID: p4.ActionDrop}
	tests := []struct {
		name     string
		entries  []Entry
		key      uint64
		wantHit  bool
		wantPort uint64
	}{
		{"empty table misses", nil, 0x0a000001, false, 0},
		{"exact /32 hit", []Entry{fwd(lpm(0x0a000001, 32), 1)}, 0x0a000001, true, 1},
		{"exact /32 miss", []Entry{fwd(lpm(0x0a000001, 32), 1)}, 0x0a000002, false, 0},
		{"longest prefix wins", []Entry{fwd(lpm(0x0a000000, 8), 1), fwd(lpm(0x0a010000, 16), 2), fwd(lpm(0x0a010100, 24), 3)}, 0x0a010105, true, 3},
		{"shorter prefix when longer misses", []Entry{fwd(lpm(0x0a000000, 8), 1), fwd(lpm(0x0a010100, 24), 3)}, 0x0a020105, true, 1},
		{"default route /0", []Entry{fwd(lpm(0, 0), 9), fwd(lpm(0x0a010100, 24), 3)}, 0xc0a80001, true, 9},
		{"ternary higher priority wins", []Entry{ternary(0x10, 0xf0, 1, 1), ternary(0x12, 0xff, 5, 2)}, 0x12, true, 2},
		{"ternary lower priority when higher misses", []Entry{ternary(0x10, 0xf0, 1, 1), ternary(0x12, 0xff, 5, 2)}, 0x13, true, 1},
		{"direct-indexed value beyond every entry misses", []Entry{ternary(0x10, 0xf0, 1, 1)}, 0x2ff, false, 0},
		{"ternary same mask keeps highest priority", []Entry{ternary(0x10, 0xf0, 7, 7), ternary(0x10, 0xf0, 3, 3)}, 0x1f, true, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl := NewTable(tc.entries, def)
			key := Key{tc.key}
			a, hit := tbl.Lookup(&key)
			if hit != tc.wantHit {
				t.Fatalf("hit = %v, want %v", hit, tc.wantHit)
			}
			if !hit {
				if a != def {
					t.Errorf("miss returned %+v, want the default %+v", a, def)
				}
				return
			}
			if a.Params[0] != tc.wantPort {
				t.Errorf("port %d, want %d", a.Params[0], tc.wantPort)
			}
		})
	}
}

// TestTableLookupMultiField covers keys of several fields (the generic
// probe, as opposed to the one-field fast paths tor.p4 uses).
func TestTableLookupMultiField(t *testing.T) {
	two := func(a, am, b, bm uint64, prio int32, port uint64) Entry {
		return Entry{Match: [MaxKeyFields]FieldMatch{{Value: a, Mask: am}, {Value: b, Mask: bm}}, Priority: prio,
			Action: ActionCall{ID: p4.ActionIPv4Forward, Params: [MaxParams]uint64{port}}}
	}
	tbl := NewTable([]Entry{
		two(0x0a000000, 0xff000000, 6, 0xff, 10, 1), // 10/8 and TCP
		two(0x0a000000, 0xff000000, 0, 0, 5, 2),     // 10/8, any protocol
		two(0, 0, 17, 0xff, 7, 3),                   // any address, UDP
	}, ActionCall{ID: p4.ActionDrop})
	tests := []struct {
		addr, proto uint64
		hit         bool
		port        uint64
	}{
		{0x0a010203, 6, true, 1},
		{0x0a010203, 17, true, 3},
		{0x0a010203, 1, true, 2},
		{0x0b010203, 17, true, 3},
		{0x0b010203, 6, false, 0},
	}
	for _, tc := range tests {
		key := Key{tc.addr, tc.proto}
		a, hit := tbl.Lookup(&key)
		if hit != tc.hit || (hit && a.Params[0] != tc.port) {
			t.Errorf("Lookup(%#x, %d) = port %d hit %v, want port %d hit %v", tc.addr, tc.proto, a.Params[0], hit, tc.port, tc.hit)
		}
	}
}

func TestPrefixMask(t *testing.T) {
	tests := []struct {
		width, prefix int
		want          uint64
		wantErr       bool
	}{
		{32, 0, 0, false},
		{32, 8, 0xff000000, false},
		{32, 32, 0xffffffff, false},
		{9, 3, 0x1c0, false},
		{64, 64, ^uint64(0), false},
		{32, 33, 0, true},
		{0, 0, 0, true},
	}
	for _, tc := range tests {
		got, err := PrefixMask(tc.width, tc.prefix)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("PrefixMask(%d, %d) = %#x, %v; want %#x, error %v", tc.width, tc.prefix, got, err, tc.want, tc.wantErr)
		}
	}
}

// frames used by the tests.
var (
	hostMAC   = []byte{0x02, 0, 0, 0, 0, 0x01}
	switchMAC = uint64(0x02aa00000001)
	h2MAC     = uint64(0x020000000002)
)

func ipv4Frame(dst uint32, tos, ttl byte, payload int) []byte {
	f := make([]byte, ethLen+ipv4Len+payload)
	copy(f[0:], []byte{0x02, 0xaa, 0, 0, 0, 1})
	copy(f[6:], hostMAC)
	binary.BigEndian.PutUint16(f[12:], etherIPv4)
	ip := f[ethLen:]
	ip[0] = 0x45
	ip[1] = tos
	binary.BigEndian.PutUint16(ip[2:], uint16(ipv4Len+payload))
	ip[8] = ttl
	ip[9] = 17
	binary.BigEndian.PutUint32(ip[12:], 0x0a000001)
	binary.BigEndian.PutUint32(ip[16:], dst)
	binary.BigEndian.PutUint16(ip[10:], Checksum(ip[:ipv4Len]))
	return f
}

func arpRequestFrame(tpa uint32) []byte {
	f := make([]byte, ethLen+arpLen)
	for i := 0; i < 6; i++ {
		f[i] = 0xff
	}
	copy(f[6:], hostMAC)
	binary.BigEndian.PutUint16(f[12:], etherARP)
	a := f[ethLen:]
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], etherIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], arpRequest)
	copy(a[8:], hostMAC)
	binary.BigEndian.PutUint32(a[14:], 0x0a000001)
	binary.BigEndian.PutUint32(a[24:], tpa)
	return f
}

// torContents is a small rack: 10.0.0.2/32 on port 2, CS7 (DSCP 56) to queue 7.
func torContents() map[uint32]TableContents {
	fwd := lpm(0x0a000002, 32)
	fwd.Action = ActionCall{ID: p4.ActionIPv4Forward, Params: [MaxParams]uint64{2, h2MAC}}
	return map[uint32]TableContents{
		p4.TableIPv4LPM: {Entries: []Entry{fwd}},
		p4.TableDSCPToQueue: {Entries: []Entry{{
			Match:  [MaxKeyFields]FieldMatch{{Value: 56, Mask: FieldMask(6)}},
			Action: ActionCall{ID: p4.ActionSetQueue, Params: [MaxParams]uint64{7}},
		}}},
		p4.TableARPProxy: {Entries: []Entry{{
			Match:  [MaxKeyFields]FieldMatch{{Value: 0x0a000002, Mask: FieldMask(32)}},
			Action: ActionCall{ID: p4.ActionARPReply, Params: [MaxParams]uint64{h2MAC}},
		}}},
		p4.TableECNConfig: {Entries: []Entry{{
			Match:  [MaxKeyFields]FieldMatch{{Value: 2, Mask: FieldMask(9)}},
			Action: ActionCall{ID: p4.ActionSetECNThreshold, Params: [MaxParams]uint64{10}},
		}}},
	}
}

func newTor(t testing.TB) *Pipeline {
	t.Helper()
	p := New()
	if err := p.Install(torContents()); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestIngress(t *testing.T) {
	tests := []struct {
		name      string
		frame     []byte
		want      Verdict
		wantTTL   byte
		wantDstMC uint64
	}{
		{"forward to port 2 queue 0", ipv4Frame(0x0a000002, 0, 64, 10), Verdict{EgressPort: 2, Queue: 0}, 63, h2MAC},
		{"CS7 to queue 7", ipv4Frame(0x0a000002, 7<<5, 64, 10), Verdict{EgressPort: 2, Queue: 7}, 63, h2MAC},
		{"unmapped DSCP to queue 0", ipv4Frame(0x0a000002, 46<<2, 64, 10), Verdict{EgressPort: 2, Queue: 0}, 63, h2MAC},
		{"LPM miss drops", ipv4Frame(0x0a000009, 0, 64, 10), Verdict{Drop: true}, 64, 0},
		{"TTL 1 drops", ipv4Frame(0x0a000002, 0, 1, 10), Verdict{Drop: true}, 1, 0},
		{"truncated IPv4 drops", ipv4Frame(0x0a000002, 0, 64, 0)[:30], Verdict{Drop: true}, 0, 0},
		{"runt drops", []byte{1, 2, 3}, Verdict{Drop: true}, 0, 0},
		{"IPv6 drops", append(append([]byte{}, ipv4Frame(0x0a000002, 0, 64, 10)[:12]...), 0x86, 0xdd, 0x60), Verdict{Drop: true}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTor(t)
			var v Verdict
			p.Ingress(tc.frame, 1, &v)
			if v != tc.want {
				t.Fatalf("verdict %+v, want %+v", v, tc.want)
			}
			idx := int(p4.QueueIndex(tc.want.EgressPort, tc.want.Queue))
			pk, by, _ := p.Counter(p4.CounterIngressQueue, idx)
			if tc.want.Drop {
				if pk != 0 {
					t.Errorf("dropped packet counted at index %d", idx)
				}
				return
			}
			if pk != 1 || by != uint64(len(tc.frame)) {
				t.Errorf("ingress counter[%d] = %d pkts %d bytes, want 1, %d", idx, pk, by, len(tc.frame))
			}
			if got := tc.frame[ipTTLOff]; got != tc.wantTTL {
				t.Errorf("TTL %d, want %d", got, tc.wantTTL)
			}
			var dst [8]byte
			copy(dst[2:], tc.frame[0:6])
			if got := binary.BigEndian.Uint64(dst[:]); got != tc.wantDstMC {
				t.Errorf("dst MAC %012x, want %012x", got, tc.wantDstMC)
			}
			if Checksum(tc.frame[ethLen:ethLen+ipv4Len]) != 0 {
				t.Error("IPv4 checksum invalid after rewrite")
			}
		})
	}
}

func TestARPReply(t *testing.T) {
	p := newTor(t)
	f := arpRequestFrame(0x0a000002)
	var v Verdict
	p.Ingress(f, 3, &v)
	if v.Drop || v.EgressPort != 3 {
		t.Fatalf("verdict %+v, want back out of port 3", v)
	}
	a := f[ethLen:]
	if !bytes.Equal(f[0:6], hostMAC) {
		t.Errorf("reply dst %x, want the requester %x", f[0:6], hostMAC)
	}
	if binary.BigEndian.Uint16(a[6:]) != arpReply {
		t.Error("oper is not reply")
	}
	if !bytes.Equal(a[8:14], []byte{0x02, 0, 0, 0, 0, 0x02}) || !bytes.Equal(f[6:12], a[8:14]) {
		t.Errorf("sha %x / eth src %x, want 020000000002", a[8:14], f[6:12])
	}
	if binary.BigEndian.Uint32(a[14:]) != 0x0a000002 || binary.BigEndian.Uint32(a[24:]) != 0x0a000001 {
		t.Errorf("spa/tpa not swapped: %x %x", a[14:18], a[24:28])
	}
	if !bytes.Equal(a[18:24], hostMAC) {
		t.Errorf("tha %x, want the requester", a[18:24])
	}

	unknown := arpRequestFrame(0x0a000077)
	p.Ingress(unknown, 3, &v)
	if !v.Drop {
		t.Errorf("ARP for an unknown address: %+v, want drop", v)
	}
}

func TestEgressRegistersAndECN(t *testing.T) {
	p := newTor(t)
	tests := []struct {
		name    string
		tos     byte
		port    uint16
		depth   uint32
		wantECN byte
	}{
		{"ECT(0) below threshold unmarked", 0x02, 2, 9, 0x02},
		{"ECT(0) at threshold marked", 0x02, 2, 10, 0x03},
		{"ECT(1) above threshold marked", 0x01, 2, 40, 0x03},
		{"not-ECT never marked", 0x00, 2, 40, 0x00},
		{"port without threshold unmarked", 0x02, 3, 40, 0x02},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := ipv4Frame(0x0a000002, tc.tos, 64, 10)
			md := EgressMeta{EgressPort: tc.port, Queue: 0, EnqDepthPkts: tc.depth, DeqTimedeltaUs: 123, Length: len(f)}
			if !p.Egress(f, &md) {
				t.Fatal("egress dropped")
			}
			if got := f[ipTOSOff] & ecnMask; got != tc.wantECN {
				t.Errorf("ECN %d, want %d", got, tc.wantECN)
			}
			if Checksum(f[ethLen:ethLen+ipv4Len]) != 0 {
				t.Error("checksum invalid")
			}
			idx := int(p4.QueueIndex(tc.port, 0))
			if d, _ := p.Register(p4.RegisterQueueDepth, idx); d != tc.depth {
				t.Errorf("queue_depth %d, want %d", d, tc.depth)
			}
			if d, _ := p.Register(p4.RegisterQueueDelay, idx); d != 123 {
				t.Errorf("queue_delay %d, want 123", d)
			}
		})
	}
	peak, _ := p.Register(p4.RegisterQueuePeak, int(p4.QueueIndex(2, 0)))
	if peak != 40 {
		t.Errorf("queue_peak %d, want the largest depth 40", peak)
	}
	pk, by, _ := p.Counter(p4.CounterEgressQueue, int(p4.QueueIndex(2, 0)))
	if pk != 4 || by != 4*uint64(ethLen+ipv4Len+10) {
		t.Errorf("egress counter %d pkts %d bytes, want 4 packets", pk, by)
	}
}

func TestCountersAndRegistersAPI(t *testing.T) {
	p := New()
	if err := p.SetCounter(p4.CounterIngressQueue, 17, 5, 500); err != nil {
		t.Fatal(err)
	}
	if pk, by, err := p.Counter(p4.CounterIngressQueue, 17); err != nil || pk != 5 || by != 500 {
		t.Errorf("Counter = %d, %d, %v", pk, by, err)
	}
	p.ResetState()
	if pk, _, _ := p.Counter(p4.CounterIngressQueue, 17); pk != 0 {
		t.Error("ResetState left a counter")
	}
	for _, err := range []error{
		func() error { _, _, err := p.Counter(0x12000009, 0); return err }(),
		func() error { _, _, err := p.Counter(p4.CounterEgressQueue, 512); return err }(),
		func() error { _, err := p.Register(p4.RegisterQueuePeak, -1); return err }(),
		p.SetRegister(0x16000009, 0, 1),
	} {
		if err == nil {
			t.Error("bad id or index accepted")
		}
	}
}

func TestInstallRejects(t *testing.T) {
	p := New()
	bad := []map[uint32]TableContents{
		{0x02000099: {}},
		{p4.TableDSCPToQueue: {Entries: []Entry{{Action: ActionCall{ID: p4.ActionDrop}}}}},
		{p4.TableIPv4LPM: {Default: &ActionCall{ID: p4.ActionSetQueue}}},
		{p4.TableDSCPToQueue: {Entries: make([]Entry, 65)}},
	}
	for i, c := range bad {
		if err := p.Install(c); err == nil {
			t.Errorf("case %d: Install accepted %v", i, c)
		}
	}
}

func TestCheckP4Info(t *testing.T) {
	good, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckP4Info(good); err != nil {
		t.Fatalf("tor.p4info rejected: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*p4configv1.P4Info)
		want   string
	}{
		{"alias change is fine", func(i *p4configv1.P4Info) { i.Tables[0].Preamble.Alias = "x" }, ""},
		{"field width", func(i *p4configv1.P4Info) { i.Tables[0].MatchFields[0].Bitwidth = 128 }, "match field hdr.ipv4.dstAddr (id 1): bitwidth 128"},
		{"match type", func(i *p4configv1.P4Info) {
			i.Tables[1].MatchFields[0].Match = &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_TERNARY}
		}, "match type TERNARY"},
		{"table renamed", func(i *p4configv1.P4Info) { i.Tables[2].Preamble.Name = "X.arp" }, `named "X.arp"`},
		{"table missing", func(i *p4configv1.P4Info) { i.Tables = i.Tables[1:] }, "table TorIngress.ipv4_lpm (id 0x02000001) missing"},
		{"extra action", func(i *p4configv1.P4Info) {
			i.Actions = append(i.Actions, &p4configv1.Action{Preamble: &p4configv1.Preamble{Id: 0x01000009, Name: "TorIngress.extra"}})
		}, "action TorIngress.extra (id 0x01000009) unknown to this target"},
		{"param width", func(i *p4configv1.P4Info) { i.Actions[2].Params[0].Bitwidth = 16 }, "param port (id 1): bitwidth 16"},
		{"counter size", func(i *p4configv1.P4Info) { i.Counters[0].Size = 8 }, "size 8, this target runs 512"},
		{"register width", func(i *p4configv1.P4Info) { i.Registers[1].TypeSpec.GetBitstring().GetBit().Bitwidth = 64 }, "bit<64>"},
		{"table size", func(i *p4configv1.P4Info) { i.Tables[3].Size = 4 }, "size 4"},
		{"initial default", func(i *p4configv1.P4Info) {
			i.Tables[1].InitialDefaultAction.Arguments[0].Value = []byte{5}
		}, "initial default action"},
		{"meter size", func(i *p4configv1.P4Info) { i.Meters[0].Size = 64 }, "size 64 unit BYTES, this target runs size 256"},
		{"direct meter", func(i *p4configv1.P4Info) { i.DirectMeters = append(i.DirectMeters, &p4configv1.DirectMeter{}) }, "1 direct meter object(s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := proto.Clone(good).(*p4configv1.P4Info)
			tc.mutate(info)
			err := CheckP4Info(info)
			if tc.want == "" {
				if err != nil {
					t.Errorf("rejected: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestHotPathAllocatesNothing(t *testing.T) {
	for name, c := range map[string]map[uint32]TableContents{"threshold": torContents(), "red": redContents()} {
		p := installed(t, c)
		f := ipv4Frame(0x0a000002, 7<<5|2, 64, 1000)
		md := EgressMeta{EgressPort: 2, Queue: 7, EnqDepthPkts: 20, Length: len(f)}
		var v Verdict
		allocs := testing.AllocsPerRun(1000, func() {
			f[ipTTLOff] = 64
			f[ipTOSOff] = 7<<5 | 2
			p.Ingress(f, 1, &v)
			p.Egress(f, &md)
		})
		if allocs != 0 {
			t.Errorf("%s: Ingress+Egress allocate %.1f times per packet, want 0", name, allocs)
		}
	}
}

// BenchmarkForward is the per-packet cost of Ingress+Egress on tor.p4 with
// a route, a DSCP entry and an ECN threshold installed: direct, a host
// route (ipv4_forward); ecmp, a route through nexthop_group's action
// selector (a group of four uplinks, flow hash); spray, the same with
// load_balance set to spray(); defended, direct with every defence on the
// ingress port (its DSCP re-marked, its source checked, the re-marked
// queue metered at a rate it never exceeds). It also reports x-copy: that cost as a
// multiple of copying the 1042-byte frame once, timed in the same run, so
// the figure survives a noisy machine. -benchmem shows 0 allocs/op.
func BenchmarkForward(b *testing.B) {
	for _, tc := range []struct {
		name     string
		contents map[uint32]TableContents
		dst      uint32
		tos      byte
		depth    uint32
	}{
		{"direct", torContents(), 0x0a000002, 7 << 5, 0},
		{"ecmp", ecmpContents(false), 0x0a000107, 7 << 5, 0},
		{"spray", ecmpContents(true), 0x0a000107, 7 << 5, 0},
		{"red", redContents(), 0x0a000002, 3<<5 | 2, 20},
		{"defended", benchDefences(), 0x0a000002, 7 << 5, 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := installed(b, tc.contents)
			if err := p.SetMeter(p4.MeterPriority, int(p4.MeterIndex(0, 1)), MeterConfig{CIR: MaxMeterRate, CBurst: 1 << 20, PIR: MaxMeterRate, PBurst: 1 << 20}); err != nil {
				b.Fatal(err)
			}
			f := ipv4Frame(tc.dst, tc.tos, 64, 1000)
			md := EgressMeta{EgressPort: 2, Queue: 7, EnqDepthPkts: tc.depth, Length: len(f)}
			dst := make([]byte, len(f))
			const copies = 1 << 16
			t0 := time.Now()
			for range copies {
				copy(dst, f)
			}
			copyNs := float64(time.Since(t0).Nanoseconds()) / copies
			var v Verdict
			b.ReportAllocs()
			b.ResetTimer()
			epoch := time.Now()
			var now int64
			for i := 0; b.Loop(); i++ {
				// The TOS back as built: the defences may re-mark it, and
				// RED's frame stays ECN-capable whether marked or not.
				f[ipTTLOff], f[ipTOSOff] = 64, tc.tos
				if i%32 == 0 { // as the dataplane reads it: once a batch
					now = int64(time.Since(epoch))
				}
				p.IngressAt(f, 1, now, &v)
				p.Egress(f, &md)
			}
			if v.Drop {
				b.Fatal("the benchmark frame was dropped")
			}
			if tc.depth > 0 {
				f[ipTOSOff] = tc.tos // unmarked again for the next run
			}
			perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(perOp/copyNs, "x-copy")
		})
	}
}

func FuzzIngressEgress(f *testing.F) {
	f.Add(ipv4Frame(0x0a000002, 0, 64, 10), uint16(1), uint32(5))
	f.Add(ipv4Frame(0x0a000002, 0xff, 2, 0), uint16(63), uint32(1<<20))
	f.Add(arpRequestFrame(0x0a000002), uint16(3), uint32(0))
	f.Add(arpRequestFrame(0x0a000002)[:20], uint16(3), uint32(0))
	f.Add([]byte{}, uint16(0), uint32(0))
	f.Add(ipv4Frame(0x0a000002, 0, 64, 10)[:14], uint16(511), uint32(0))
	// One pipeline per switch mode on port 2; depth picks one too.
	var pls []*Pipeline
	for _, mode := range []*Entry{nil, ptr(modeEntry(2, p4.ActionRankOrder, 3000)), ptr(modeEntry(2, p4.ActionTrimAbove, 4))} {
		c := torContents()
		if mode != nil {
			c[p4.TablePortMode] = TableContents{Entries: []Entry{*mode}}
		}
		p := New()
		if err := p.Install(c); err != nil {
			f.Fatal(err)
		}
		pls = append(pls, p)
	}
	f.Add(homaFrame(0, 0x10, 77, 0, 1000), uint16(1), uint32(1))
	f.Add(homaFrame(0, 0x10, 0, 1, 56), uint16(1), uint32(2))
	f.Fuzz(func(t *testing.T, frame []byte, port uint16, depth uint32) {
		n := len(frame)
		var v Verdict
		p := pls[depth%uint32(len(pls))]
		p.Ingress(frame, port, &v)
		if len(frame) != n {
			t.Fatal("Ingress changed the frame length")
		}
		if !v.Drop && v.Queue > 7 {
			t.Fatalf("queue %d out of range", v.Queue)
		}
		md := EgressMeta{EgressPort: v.EgressPort, Queue: v.Queue, EnqDepthPkts: depth, Length: n}
		p.Egress(frame, &md)
	})
}

// redContents are torContents with a RED profile (Kmin 10, Kmax 30, Pmax
// 0.2) on port 2 instead of the step threshold.
func redContents() map[uint32]TableContents {
	c := torContents()
	c[p4.TableECNConfig] = TableContents{Entries: []Entry{{
		Match:  [MaxKeyFields]FieldMatch{{Value: 2, Mask: FieldMask(9)}},
		Action: ActionCall{ID: p4.ActionSetECNRED, Params: [MaxParams]uint64{10, 30, uint64(p4.ECNSlope(10, 30, 0.2))}},
	}}}
	return c
}

// TestEgressREDProfile checks set_ecn_red's marking probability at each
// depth against the profile (0 below Kmin, linear to Pmax at Kmax, 1 from
// Kmax) over many draws, and that a seed repeats the same marks.
func TestEgressREDProfile(t *testing.T) {
	const kmin, kmax, pmax, draws = 10, 30, 0.2, 20000
	contents := redContents() // Kmin, Kmax and Pmax as above
	marks := func(p *Pipeline, depth uint32, n int) (marked int, seq []bool) {
		for range n {
			f := ipv4Frame(0x0a000002, 0x02, 64, 10)
			md := EgressMeta{EgressPort: 2, EnqDepthPkts: depth, Length: len(f)}
			p.Egress(f, &md)
			m := f[ipTOSOff]&ecnMask == ecnCE
			if m {
				marked++
			}
			if Checksum(f[ethLen:ethLen+ipv4Len]) != 0 {
				t.Fatal("checksum invalid after marking")
			}
			seq = append(seq, m)
		}
		return marked, seq
	}
	p := New()
	if err := p.Install(contents); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		depth uint32
		want  float64
	}{
		{0, 0}, {kmin - 1, 0}, {kmin, 0}, {15, 0.05}, {20, 0.1}, {29, 0.19}, {kmax, 1}, {500, 1},
	} {
		got, _ := marks(p, tc.depth, draws)
		frac := float64(got) / draws
		// 4 standard deviations of a binomial fraction, at least 0.
		tol := 4 * math.Sqrt(tc.want*(1-tc.want)/draws)
		if math.Abs(frac-tc.want) > tol+1e-9 {
			t.Errorf("depth %d: marked %.4f, want %.4f ± %.4f", tc.depth, frac, tc.want, tol)
		}
	}
	a, b := New(), New()
	for _, p := range []*Pipeline{a, b} {
		if err := p.Install(contents); err != nil {
			t.Fatal(err)
		}
		p.SeedRandom(42)
	}
	_, sa := marks(a, 20, 200)
	_, sb := marks(b, 20, 200)
	if !slices.Equal(sa, sb) {
		t.Error("two pipelines seeded alike marked differently")
	}
	b.SeedRandom(43)
	if _, sc := marks(b, 20, 200); slices.Equal(sa, sc) {
		t.Error("another seed marked the same 200 packets")
	}
}

// TestTableDirectIndex checks the direct arrays a fabric's routes get
// (host /32s of a leaf, a /24 per leaf, addresses far from 0) answer as
// a scan of every entry does, and that a group too sparse for an array
// keeps its map and answers the same.
func TestTableDirectIndex(t *testing.T) {
	fwd := func(e Entry, port uint64) Entry {
		e.Action = ActionCall{ID: p4.ActionIPv4Forward, Params: [MaxParams]uint64{port}}
		return e
	}
	leafHosts := func(leaf uint32) []Entry {
		var es []Entry
		for j := uint32(1); j <= 8; j++ {
			es = append(es, fwd(lpm(0x0a000000|leaf<<8|j, 32), uint64(j)))
		}
		return es
	}
	perLeaf := func(leaves uint32) []Entry {
		var es []Entry
		for l := uint32(0); l < leaves; l++ {
			es = append(es, fwd(lpm(0x0a000000|l<<8, 24), uint64(100+l)))
		}
		return es
	}
	sparseHosts := func() []Entry { // a /32 per host of 128 leaves: 32,768 slots for 1,024 entries
		var es []Entry
		for l := uint32(0); l < 128; l++ {
			for j := uint32(1); j <= 8; j++ {
				es = append(es, fwd(lpm(0x0a000000|l<<8|j, 32), uint64(l*8+j)))
			}
		}
		return es
	}
	tests := []struct {
		name    string
		entries []Entry
		direct  int // groups indexed by an array
	}{
		{"leaf of a fat tree: own hosts, other leaves' /24s, a default", slices.Concat(leafHosts(37), perLeaf(128), []Entry{fwd(lpm(0, 0), 7)}), 3},
		{"k=32 fat tree's 512 leaves past 10.1.0.0", slices.Concat(leafHosts(300), perLeaf(512)), 2},
		{"host routes of a fat tree of 1,024 hosts keep a map", slices.Concat(sparseHosts(), perLeaf(4)), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def := ActionCall{ID: p4.ActionDrop}
			tbl := NewTable(tc.entries, def)
			direct := 0
			for _, g := range tbl.groups {
				if g.direct != nil {
					direct++
				}
			}
			if direct != tc.direct {
				t.Errorf("%d of %d groups indexed directly, want %d", direct, len(tbl.groups), tc.direct)
			}
			scan := func(addr uint64) (ActionCall, bool) {
				best, found := Entry{}, false
				for _, e := range tc.entries {
					if addr&e.Match[0].Mask == e.Match[0].Value&e.Match[0].Mask && (!found || e.Priority > best.Priority) {
						best, found = e, true
					}
				}
				if !found {
					return def, false
				}
				return best.Action, true
			}
			var addrs []uint64
			for l := uint64(0); l < 520; l++ {
				for _, j := range []uint64{0, 1, 5, 8, 9, 255} {
					addrs = append(addrs, 0x0a000000|l<<8|j)
				}
			}
			addrs = append(addrs, 0, 0x09ffffff, 0x0b000001, 0xffffffff)
			for _, addr := range addrs {
				key := Key{addr}
				a, hit := tbl.Lookup(&key)
				if wa, whit := scan(addr); a != wa || hit != whit {
					t.Fatalf("Lookup(%#x) = %+v hit %v, a scan gives %+v hit %v", addr, a, hit, wa, whit)
				}
			}
		})
	}
}
