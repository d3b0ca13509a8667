package pipeline

import (
	"encoding/binary"
	"testing"

	"github.com/homatb/homatb/p4"
)

// defendedContents is torContents with every defence on port 1, whose host
// is 10.0.0.1: its DSCP re-marked to 0 (untrusted), its source checked,
// and queue 7 (CS7) metered by meter index m1 with red packets re-marked,
// or dropped when drop is set.
func defendedContents(drop bool) map[uint32]TableContents {
	c := torContents()
	var dropRed uint64
	if drop {
		dropRed = 1
	}
	c[p4.TableDefence] = TableContents{Entries: []Entry{{
		Match:  [MaxKeyFields]FieldMatch{{Value: 1, Mask: FieldMask(9)}},
		Action: ActionCall{ID: p4.ActionPortDefence, Params: [MaxParams]uint64{1, 0, 1}},
	}}}
	c[p4.TableSourceGuard] = TableContents{Entries: []Entry{{
		Match:  [MaxKeyFields]FieldMatch{{Value: 1, Mask: FieldMask(9)}, {Value: 0x0a000001, Mask: FieldMask(32)}},
		Action: ActionCall{ID: p4.ActionSourceOK},
	}}}
	c[p4.TableMeterSelect] = TableContents{Entries: []Entry{{
		Match:  [MaxKeyFields]FieldMatch{{Value: 1, Mask: FieldMask(9)}, {Value: 7, Mask: FieldMask(3)}},
		Action: ActionCall{ID: p4.ActionUseMeter, Params: [MaxParams]uint64{uint64(p4.MeterIndex(0, 1)), dropRed}},
	}}}
	return c
}

// benchDefences is defendedContents with queue 0, where the re-marked
// CS7 lands, metered instead of queue 7: every frame takes every branch.
func benchDefences() map[uint32]TableContents {
	c := defendedContents(false)
	c[p4.TableMeterSelect].Entries[0].Match[1].Value = 0
	return c
}

// fakeClock is a settable meter clock.
type fakeClock struct{ ns int64 }

func (c *fakeClock) now() int64 { return c.ns }

func defended(t testing.TB, c map[uint32]TableContents) (*Pipeline, *fakeClock) {
	t.Helper()
	p := New()
	clk := &fakeClock{}
	p.SetClock(clk.now)
	if err := p.Install(c); err != nil {
		t.Fatal(err)
	}
	return p, clk
}

func counter(t *testing.T, p *Pipeline, id uint32, port int) uint64 {
	t.Helper()
	pk, _, err := p.Counter(id, port)
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

func TestDSCPTrustAndSourceGuard(t *testing.T) {
	tests := []struct {
		name      string
		contents  map[uint32]TableContents
		inPort    uint16
		src       uint32
		tos       byte
		wantDrop  bool
		wantQueue uint8
		wantTOS   byte
		remarked  uint64 // remark_counter[inPort]
		spoofed   uint64 // spoof_counter[inPort]
	}{
		{"untrusted CS7 re-marked to queue 0, ECN kept", defendedContents(false), 1, 0x0a000001, 56<<2 | 2, false, 0, 2, 1, 0},
		{"untrusted CS0 unchanged, not counted", defendedContents(false), 1, 0x0a000001, 0, false, 0, 0, 0, 0},
		{"spoofed source dropped and counted", defendedContents(false), 1, 0x0a000009, 56 << 2, true, 0, 0, 0, 1},
		{"port without defence trusted and unchecked", defendedContents(false), 3, 0x0a000009, 56 << 2, false, 7, 56 << 2, 0, 0},
		{"no defences installed", torContents(), 1, 0x0a000009, 56 << 2, false, 7, 56 << 2, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := defended(t, tc.contents)
			f := ipv4Frame(0x0a000002, tc.tos, 64, 100)
			binary.BigEndian.PutUint32(f[ipSrcOff:], tc.src)
			var v Verdict
			p.Ingress(f, tc.inPort, &v)
			if v.Drop != tc.wantDrop {
				t.Fatalf("drop %v, want %v", v.Drop, tc.wantDrop)
			}
			if !v.Drop {
				if v.Queue != tc.wantQueue || f[ipTOSOff] != tc.wantTOS {
					t.Errorf("queue %d TOS %#x, want queue %d TOS %#x", v.Queue, f[ipTOSOff], tc.wantQueue, tc.wantTOS)
				}
				if Checksum(f[ethLen:ethLen+ipv4Len]) != 0 {
					t.Error("IPv4 checksum wrong after re-marking")
				}
			}
			if got := counter(t, p, p4.CounterRemark, int(tc.inPort)); got != tc.remarked {
				t.Errorf("remark_counter[%d] = %d, want %d", tc.inPort, got, tc.remarked)
			}
			if got := counter(t, p, p4.CounterSpoof, int(tc.inPort)); got != tc.spoofed {
				t.Errorf("spoof_counter[%d] = %d, want %d", tc.inPort, got, tc.spoofed)
			}
		})
	}
}

// TestMeterColours drives priority_meter with a trusted port so CS7 stays
// in queue 7: a burst of 3,000 bytes at 1 MB/s passes two 1,034-byte
// frames, marks the third red, and refills in 1.034 ms per frame.
func TestMeterColours(t *testing.T) {
	for _, drop := range []bool{false, true} {
		c := defendedContents(drop)
		c[p4.TableDefence].Entries[0].Action.Params = [MaxParams]uint64{0, 0, 0} // trusted, unchecked
		p, clk := defended(t, c)
		if err := p.SetMeter(p4.MeterPriority, int(p4.MeterIndex(0, 1)), MeterConfig{CIR: 1e6, CBurst: 3000, PIR: 1e6, PBurst: 3000}); err != nil {
			t.Fatal(err)
		}
		send := func() Verdict {
			f := ipv4Frame(0x0a000002, 56<<2, 64, 1000)
			var v Verdict
			p.Ingress(f, 1, &v)
			return v
		}
		var red int
		for i := range 3 {
			v := send()
			if v.Drop || v.Queue == 0 {
				red++
				if i != 2 {
					t.Errorf("drop=%v: frame %d red, the burst holds two", drop, i)
				}
				if !drop && (v.Drop || v.Queue != 0) {
					t.Errorf("re-mark: verdict %+v, want queue 0", v)
				}
				if drop && !v.Drop {
					t.Errorf("drop: verdict %+v, want dropped", v)
				}
			}
		}
		if red != 1 || counter(t, p, p4.CounterMeter, 1) != 1 {
			t.Errorf("drop=%v: %d red, meter_counter %d; want 1 and 1", drop, red, counter(t, p, p4.CounterMeter, 1))
		}
		clk.ns += 1_034_000 // one frame's worth of tokens at 1 MB/s
		if v := send(); v.Drop || v.Queue != 7 {
			t.Errorf("drop=%v: after a refill verdict %+v, want queue 7", drop, v)
		}
		if v := send(); !(v.Drop || v.Queue == 0) {
			t.Errorf("drop=%v: bucket empty again, verdict %+v, want red", drop, v)
		}
		if v := send(); !(v.Drop || v.Queue == 0) {
			t.Errorf("drop=%v: bucket empty again, verdict %+v, want red", drop, v)
		}
	}
}

func TestMeterConfigChecked(t *testing.T) {
	p := New()
	for _, c := range []MeterConfig{{CIR: -1}, {CIR: 10, PIR: 5}, {PBurst: MaxMeterBurst + 1}} {
		if err := p.SetMeter(p4.MeterPriority, 1, c); err == nil {
			t.Errorf("SetMeter(%+v) accepted", c)
		}
	}
	if err := p.SetMeter(p4.MeterPriority, p4.MeterSlots, MeterConfig{}); err == nil {
		t.Error("index MeterSlots accepted")
	}
	want := MeterConfig{CIR: 5, CBurst: 6, PIR: 7, PBurst: 8}
	if err := p.SetMeter(p4.MeterPriority, 9, want); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Meter(p4.MeterPriority, 9); err != nil || got != want {
		t.Errorf("Meter = %+v, %v; want %+v", got, err, want)
	}
}

func TestDefencesAllocateNothing(t *testing.T) {
	p, clk := defended(t, defendedContents(false))
	if err := p.SetMeter(p4.MeterPriority, int(p4.MeterIndex(0, 1)), MeterConfig{CIR: 1e6, CBurst: 3000, PIR: 1e6, PBurst: 3000}); err != nil {
		t.Fatal(err)
	}
	f := ipv4Frame(0x0a000002, 7<<5, 64, 1000)
	var v Verdict
	allocs := testing.AllocsPerRun(1000, func() {
		f[ipTTLOff], f[ipTOSOff] = 64, 7<<5
		clk.ns += 1000
		p.Ingress(f, 1, &v)
	})
	if allocs != 0 {
		t.Errorf("Ingress with defences allocates %.1f times per packet, want 0", allocs)
	}
}
