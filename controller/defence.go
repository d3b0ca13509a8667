package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/homatb/homatb/controller/p4rtclient"
	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/pipeline"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Names of tor.p4's defence objects.
const (
	tableDefence       = "TorIngress.ingress_defence"
	tableSourceGuard   = "TorIngress.source_guard"
	tableMeterSelect   = "TorIngress.meter_select"
	actionPortDefence  = "TorIngress.port_defence"
	actionSourceOK     = "TorIngress.source_ok"
	actionUseMeter     = "TorIngress.use_meter"
	meterPriority      = "TorIngress.priority_meter"
	fieldIngressPort   = "standard_metadata.ingress_port"
	fieldIPv4Src       = "hdr.ipv4.srcAddr"
	fieldPriority      = "standard_metadata.priority"
	counterRemark      = "TorIngress.remark_counter"
	counterMeter       = "TorIngress.meter_counter"
	counterSpoof       = "TorIngress.spoof_counter"
	maxMetersPerSwitch = p4.MetersPerPort
)

// Defences are tor.p4's defences against hosts that lie, installed on the
// ports hosts are attached to (ports between switches are trusted: the
// first switch already checked what crosses them). The zero value
// installs none.
type Defences struct {
	// Untrusted names the hosts whose DSCP the switch re-marks to
	// RemarkDSCP before it picks the queue.
	Untrusted  []string
	RemarkDSCP uint8
	// AntiSpoofing drops, and counts, a packet from a host's port whose
	// IPv4 source is not that host's address.
	AntiSpoofing bool
	// Meters limit what each host's port sends into some queues.
	Meters []Meter
}

// Meter is one meter per host port over a set of queues (after DSCP trust
// and classification): a single-rate meter (tor.p4's two-rate meter with
// both rates and bursts equal) whose red packets go to queue 0 with DSCP
// 0, or are dropped when Drop is set.
type Meter struct {
	Queues     []uint8
	RateBytes  int64 // bytes per second
	BurstBytes int64
	Drop       bool
}

// Any reports whether d installs anything.
func (d Defences) Any() bool {
	return len(d.Untrusted) > 0 || d.AntiSpoofing || len(d.Meters) > 0
}

// Validate checks the remark value, the meters' queues (each in one meter
// at most), rates and bursts, and that there are at most
// p4.MetersPerPort meters.
func (d Defences) Validate() error {
	if d.RemarkDSCP > 63 {
		return fmt.Errorf("defences: remark DSCP %d outside 0..63", d.RemarkDSCP)
	}
	if len(d.Meters) > maxMetersPerSwitch {
		return fmt.Errorf("defences: %d meters, tor.p4 has room for %d per port", len(d.Meters), maxMetersPerSwitch)
	}
	seen := map[uint8]int{}
	for i, m := range d.Meters {
		if len(m.Queues) == 0 {
			return fmt.Errorf("defences: meter %d meters no queue", i)
		}
		for _, q := range m.Queues {
			if q >= p4.QueuesPerPort {
				return fmt.Errorf("defences: meter %d: queue %d outside 0..%d", i, q, p4.QueuesPerPort-1)
			}
			if j, dup := seen[q]; dup {
				return fmt.Errorf("defences: queue %d is in meters %d and %d", q, j, i)
			}
			seen[q] = i
		}
		c := pipeline.MeterConfig{CIR: m.RateBytes, CBurst: m.BurstBytes, PIR: m.RateBytes, PBurst: m.BurstBytes}
		if err := c.Check(); err != nil || m.RateBytes <= 0 || m.BurstBytes <= 0 {
			return fmt.Errorf("defences: meter %d: rate %d B/s, burst %d B: expected positive values up to %d B/s and %d B",
				i, m.RateBytes, m.BurstBytes, pipeline.MaxMeterRate, pipeline.MaxMeterBurst)
		}
	}
	return nil
}

// defenceEntries are switch name's entries for d: per host port, its
// ingress_defence action (untrusted, checked), its source_guard entry and
// its meter_select entries.
func (t *Topology) defenceEntries(name string, d Defences) ([]p4rtclient.Entry, error) {
	for _, h := range d.Untrusted {
		if !slices.ContainsFunc(t.Hosts, func(x Host) bool { return x.Name == h }) {
			return nil, fmt.Errorf("defences: untrusted host %q is not in the topology", h)
		}
	}
	var out []p4rtclient.Entry
	for _, h := range t.Hosts {
		if h.Switch != name {
			continue
		}
		port := p4rtclient.Uint(uint64(h.Port))
		untrusted := slices.Contains(d.Untrusted, h.Name)
		if untrusted || d.AntiSpoofing {
			out = append(out, p4rtclient.Entry{
				Table:  tableDefence,
				Match:  []p4rtclient.Match{p4rtclient.Exact(fieldIngressPort, port)},
				Action: actionPortDefence,
				Params: map[string]p4rtclient.Value{"remark": bit(untrusted), "dscp": p4rtclient.Uint(uint64(d.RemarkDSCP)), "guard": bit(d.AntiSpoofing)},
			})
		}
		if d.AntiSpoofing {
			out = append(out, p4rtclient.Entry{
				Table:  tableSourceGuard,
				Match:  []p4rtclient.Match{p4rtclient.Exact(fieldIngressPort, port), p4rtclient.Exact(fieldIPv4Src, p4rtclient.IPv4(h.IP))},
				Action: actionSourceOK,
			})
		}
		for i, m := range d.Meters {
			for _, q := range m.Queues {
				out = append(out, p4rtclient.Entry{
					Table:  tableMeterSelect,
					Match:  []p4rtclient.Match{p4rtclient.Exact(fieldIngressPort, port), p4rtclient.Exact(fieldPriority, p4rtclient.Uint(uint64(q)))},
					Action: actionUseMeter,
					Params: map[string]p4rtclient.Value{"index": p4rtclient.Uint(uint64(p4.MeterIndex(i, uint16(h.Port)))), "drop_red": bit(m.Drop)},
				})
			}
		}
	}
	return out, nil
}

func bit(b bool) p4rtclient.Value {
	if b {
		return p4rtclient.Uint(1)
	}
	return p4rtclient.Uint(0)
}

// meterCells are the priority_meter cells switch name's meters use.
func (t *Topology) meterCells(name string, d Defences) []p4rtclient.MeterValue {
	var out []p4rtclient.MeterValue
	for _, h := range t.Hosts {
		if h.Switch != name {
			continue
		}
		for i, m := range d.Meters {
			out = append(out, p4rtclient.MeterValue{Index: int64(p4.MeterIndex(i, uint16(h.Port))),
				CIR: m.RateBytes, CBurst: m.BurstBytes, PIR: m.RateBytes, PBurst: m.BurstBytes})
		}
	}
	return out
}

// programMeters writes switch name's meter cells and reads them back.
func (f *Switches) programMeters(ctx context.Context, name string, d Defences) error {
	want := f.topo.meterCells(name, d)
	if len(want) == 0 {
		return nil
	}
	c := f.clients[name]
	if err := c.WriteMeters(ctx, meterPriority, want...); err != nil {
		return fmt.Errorf("meters: %w", err)
	}
	if sw := f.topo.findSwitch(name); sw != nil && sw.Target == TargetBMv2 {
		return nil // BMv2 keeps rates per µs: what it reads back is rounded
	}
	got, err := c.ReadMeter(ctx, meterPriority)
	if err != nil {
		return fmt.Errorf("meters: read back: %w", err)
	}
	byIndex := map[int64]p4rtclient.MeterValue{}
	for _, g := range got {
		byIndex[g.Index] = g
	}
	for _, w := range want {
		if g := byIndex[w.Index]; g != w {
			return fmt.Errorf("meters: %s[%d] reads back %+v, wrote %+v", meterPriority, w.Index, g, w)
		}
	}
	return nil
}

// DefenceCount is what tor.p4's defences did to the packets that arrived
// on one port: re-marked (untrusted DSCP), metered (out of profile) and
// dropped as spoofed.
type DefenceCount struct {
	Port                       int
	Remarked, Metered, Spoofed int64
}

// DefenceCounters reads switch name's defence counters (remark_counter,
// meter_counter, spoof_counter, indexed by ingress port) once, for each of
// its ports in order: on BMv2, whose pipeline the testbed cannot read
// directly, they are the statistics of the defences.
func (f *Switches) DefenceCounters(ctx context.Context, name string) ([]DefenceCount, error) {
	c := f.clients[name]
	if c == nil {
		return nil, fmt.Errorf("defence counters: no switch %q", name)
	}
	s, err := c.NeedSchema()
	if err != nil {
		return nil, fmt.Errorf("defence counters: %w", err)
	}
	ports := f.topo.switchPorts(name)
	kinds := map[uint32]int{} // counter id -> 0 remarked, 1 metered, 2 spoofed
	var ents []*p4v1.Entity
	for k, cname := range []string{counterRemark, counterMeter, counterSpoof} {
		ctr, err := s.Counter(cname)
		if err != nil {
			return nil, fmt.Errorf("defence counters: %w", err)
		}
		id := ctr.GetPreamble().GetId()
		kinds[id] = k
		for _, p := range ports {
			ents = append(ents, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: id, Index: &p4v1.Index{Index: int64(p)}}}})
		}
	}
	got, err := c.Read(ctx, ents...)
	if err != nil {
		return nil, fmt.Errorf("defence counters of %s: %w", name, err)
	}
	byPort := map[int64]*[3]int64{}
	for _, p := range ports {
		byPort[int64(p)] = &[3]int64{}
	}
	for _, ent := range got {
		ce := ent.GetCounterEntry()
		if ce == nil {
			continue
		}
		if row := byPort[ce.GetIndex().GetIndex()]; row != nil {
			row[kinds[ce.GetCounterId()]] = ce.GetData().GetPacketCount()
		}
	}
	out := make([]DefenceCount, 0, len(ports))
	for _, p := range ports {
		r := byPort[int64(p)]
		out = append(out, DefenceCount{Port: p, Remarked: r[0], Metered: r[1], Spoofed: r[2]})
	}
	return out, nil
}
