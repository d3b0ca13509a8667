package simnet

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/p4/pipeline"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/simnet/tcpmodel"
)

// Host is a host of the network and where it attaches.
type Host struct {
	Name string
	IP   netip.Addr
	MAC  uint64 // 48 bits
	// Switch is the host's switch, Port its port there.
	Switch string
	Port   uint16
}

// Link joins two switches' ports.
type Link struct {
	A     string
	APort uint16
	B     string
	BPort uint16
	// RateBps is the link's rate; zero means Config.UplinkBps.
	RateBps uint64
}

// Config describes a network. Every link runs at RateBps.
type Config struct {
	RateBps uint64
	// UplinkBps is the rate of the links between switches; zero means
	// RateBps.
	UplinkBps uint64
	// WireOverhead is what a link charges per frame beyond its bytes
	// (fabric.WireOverhead: preamble, gap, FCS).
	WireOverhead int
	// QueueDepthPkts is each switch egress queue's depth in packets (and
	// QueueDepthBytes its bytes, 0: no bound); PortBufferBytes and
	// PortBufferPkts bound a port's eight queues together (0: no bound).
	QueueDepthPkts, QueueDepthBytes int
	PortBufferBytes, PortBufferPkts int
	// SharedBufferBytes, when positive, is each switch's buffer, shared by
	// the queues of all its ports with dynamic thresholds of SharedAlpha
	// (0: the embedded switch's default), as the embedded switch's is.
	SharedBufferBytes int
	SharedAlpha       float64
	// Delay is each link's propagation delay.
	Delay time.Duration
	// SwitchDelay is a switch's fixed latency: a frame's ingress runs this
	// long after the frame has arrived (store and forward is separate: a
	// frame arrives when its last bit does).
	SwitchDelay time.Duration
	// HostTxDelay and HostRxDelay are a host's software and NIC time per
	// packet on the way out (after the NIC's serialisation, so the order
	// of a host's frames is kept) and on the way in (before the endpoint
	// sees the packet). The Homa paper's simulator charges 0.5 µs each
	// (hostNicSxThinkTime, hostSwTurnAroundTime) and 0.25 µs per switch.
	HostTxDelay, HostRxDelay time.Duration
	// HostBurstBytes, when positive, makes each host's NIC the emulated
	// hosts' shaper: a token bucket at the link rate holding this many
	// bytes (Mininet's htb and tbf hold 15 kB), which hands frames to the
	// switch as soon as it has the tokens, so up to a burst of them wait in
	// the switch's priority queues rather than in the host. 0 makes it a
	// real NIC: a FIFO that serialises each frame at the link rate.
	HostBurstBytes int
	Hosts          []Host
	Links          []Link
	// Switches are the switches' tor.p4 pipelines, programmed.
	Switches map[string]*pipeline.Pipeline
	// Seed makes loss repeatable.
	Seed uint64
	// HeadBytes, when positive, has the hosts' endpoints carry only each
	// message's first HeadBytes bytes (homa.DrivenConfig.HeadBytes):
	// frames have their real length, and the payload past those bytes is
	// neither written nor read. 0 carries every byte.
	HeadBytes int
	// PFC is the switches' priority flow control (zero: off): PAUSE
	// frames go on the links as the embedded switch sends them, switches
	// obey them on their ports and the hosts' roce endpoints on theirs.
	PFC dataplane.PFC
}

// Network is a running simulated network.
type Network struct {
	cfg      Config
	clock    Clock
	hosts    []*Node
	byName   map[string]*Node
	byIP     map[uint32]*Node // by IPv4 address (v4)
	switches map[string]*swtch
	names    []string // switch names, sorted
	rng      *rand.Rand
	// frames are frame buffers back from delivered and dropped frames,
	// packets the ports' packets, shared so the next port takes the one
	// the last let go (both last in, first out: the most recently used
	// is the likeliest in the cache).
	frames  [][]byte
	packets dataplane.PacketPool
	// postcard, when set, receives every frame a switch sends, as the
	// embedded switch records it.
	postcard func(sw string, p *switchstats.Postcard)
	card     switchstats.Postcard
	// tcp is the TCP model's hosts, once a Node has started one;
	// scheduleFn schedules their timers, made once.
	tcp        *tcpmodel.Net
	scheduleFn tcpmodel.Schedule
}

// OnPostcard has every switch report each frame it sends to fn, with the
// times on the simulation's clock (ns since it started).
func (n *Network) OnPostcard(fn func(sw string, p *switchstats.Postcard)) {
	n.postcard = fn
}

// New builds the network; nothing happens until its Clock runs.
func New(cfg Config) (*Network, error) {
	if cfg.RateBps == 0 {
		return nil, fmt.Errorf("simnet: no link rate")
	}
	if cfg.QueueDepthPkts == 0 {
		cfg.QueueDepthPkts = dataplane.DefaultQueueDepthPkts
	}
	n := &Network{cfg: cfg, byName: map[string]*Node{}, byIP: map[uint32]*Node{},
		switches: map[string]*swtch{}, rng: rand.New(rand.NewPCG(cfg.Seed, 0x51e7))}
	n.scheduleFn = n.clock.AtTime
	for name, pl := range cfg.Switches {
		if pl == nil {
			return nil, fmt.Errorf("simnet: switch %s has no pipeline", name)
		}
		pl.SetClock(func() int64 { return n.clock.now }) // the meters run on virtual time
		sw := &swtch{n: n, name: name, pl: pl}
		if cfg.SharedBufferBytes > 0 {
			sw.shared = dataplane.NewSharedBuffer(cfg.SharedBufferBytes, cfg.SharedAlpha)
		}
		for p := range sw.defences {
			sw.defences[p][0], sw.defences[p][1], sw.defences[p][2] = pl.DefenceCounters(uint16(p))
		}
		n.switches[name] = sw
		n.names = append(n.names, name)
	}
	slices.Sort(n.names)
	for _, h := range cfg.Hosts {
		sw := n.switches[h.Switch]
		if sw == nil {
			return nil, fmt.Errorf("simnet: host %s: no switch %q", h.Name, h.Switch)
		}
		if !h.IP.Is4() {
			return nil, fmt.Errorf("simnet: host %s: address %v is not IPv4", h.Name, h.IP)
		}
		if n.byName[h.Name] != nil || n.byIP[v4(h.IP)] != nil {
			return nil, fmt.Errorf("simnet: host %s: name or address %v used twice", h.Name, h.IP)
		}
		node := &Node{n: n, Host: h}
		node.wakeFn = node.wake
		toSwitch := func(f []byte) { sw.receive(f, h.Port) }
		toSwitchDelay := cfg.Delay + cfg.HostTxDelay + cfg.SwitchDelay
		if cfg.HostBurstBytes > 0 {
			node.shaper = &bucket{n: n, out: toSwitch, delay: toSwitchDelay.Nanoseconds(), rate: fabric.BytesPerSecond(cfg.RateBps) / 1e9, burst: float64(cfg.HostBurstBytes),
				tokens: float64(cfg.HostBurstBytes)}
			node.shaper.releaseFn = node.shaper.release
			node.shaper.lossAt = &node.shaper.lossDrops
		} else {
			node.nic = n.newPort(toSwitch, toSwitchDelay, cfg.RateBps, nil)
		}
		if sw.ports.get(h.Port) != nil {
			return nil, fmt.Errorf("simnet: host %s: port %d of %s used twice", h.Name, h.Port, h.Switch)
		}
		hp := n.newPort(node.receive, cfg.Delay+cfg.HostRxDelay, cfg.RateBps, sw)
		hp.sw, hp.num = sw, h.Port
		sw.ports.set(h.Port, hp)
		n.hosts = append(n.hosts, node)
		n.byName[h.Name], n.byIP[v4(h.IP)] = node, node
	}
	for _, l := range cfg.Links {
		a, b := n.switches[l.A], n.switches[l.B]
		if a == nil || b == nil {
			return nil, fmt.Errorf("simnet: link %s:%d-%s:%d: unknown switch", l.A, l.APort, l.B, l.BPort)
		}
		if a.ports.get(l.APort) != nil || b.ports.get(l.BPort) != nil {
			return nil, fmt.Errorf("simnet: link %s:%d-%s:%d: port used twice", l.A, l.APort, l.B, l.BPort)
		}
		up := cmp.Or(l.RateBps, cfg.UplinkBps, cfg.RateBps)
		hop := cfg.Delay + cfg.SwitchDelay
		ap := n.newPort(func(f []byte) { b.receive(f, l.BPort) }, hop, up, a)
		bp := n.newPort(func(f []byte) { a.receive(f, l.APort) }, hop, up, b)
		ap.sw, ap.num, bp.sw, bp.num = a, l.APort, b, l.BPort
		a.ports.set(l.APort, ap)
		b.ports.set(l.BPort, bp)
	}
	return n, nil
}

// Clock is the network's virtual time and event queue.
func (n *Network) Clock() *Clock { return &n.clock }

// Node returns the named host.
func (n *Network) Node(name string) *Node { return n.byName[name] }

// Nodes returns every host in the order of Config.Hosts.
func (n *Network) Nodes() []*Node { return n.hosts }

// port is one direction of a link: its sender's queues and shaper (a
// switch's egress port, or a host's NIC), then the wire's delay.
type port struct {
	// The fields a frame's departure reads come first, in the port's
	// first two cache lines.
	n   *Network
	pm  *dataplane.PortModel
	out func([]byte)
	// wakeFn is wake, made once: scheduling it allocates nothing.
	wakeFn func(int64)
	// sw and num are a switch port's switch and number (postcards).
	sw *swtch
	// wakeAt is when the scheduled service event is due, and onLink says
	// it is the end of a frame's serialisation, which nothing can bring
	// forward; otherwise the port waits for a paused or rate-limited queue,
	// and a resume or a frame for another queue schedules it anew (the
	// earlier event, superseded, finds wakeAt moved and does nothing).
	wakeAt int64
	// delay is from the end of a frame's serialisation to its arrival:
	// the wire's, then the receiver's fixed latency.
	delay int64
	loss  float64 // probability a frame is lost on this link
	// downFrom and downTo bound the windows the link is down, both ways
	// (a switch port toward a host; SetDown).
	downFrom, downTo []int64
	pending          bool // a service event is scheduled
	onLink           bool
	num              uint16
	// counters of a switch port
	txPkts, txBytes       uint64
	lossDrops, queueDrops uint64
	// lossAt is where the frames this port loses count: its own
	// lossDrops, or those of the switch port at the other end where the
	// fault is, which counts them as the embedded switch counts ingress
	// drops.
	lossAt *uint64
	rate   uint64 // bit/s
	// ceMarks counts, per queue, the frames the egress control marked CE.
	ceMarks [dataplane.NumQueues]uint64
	md      pipeline.EgressMeta
	// ins are, per queue of a switch port under PFC, each queued frame's
	// ingress port, in order (strict priority only), and pfc the port's
	// own PFC state as an ingress port.
	ins [dataplane.NumQueues]inFIFO
	pfc dataplane.PFCIngress
}

// inFIFO is a queue's frames' ingress ports in order, allocation-free
// once grown.
type inFIFO struct {
	d    []uint32
	head int
}

func (q *inFIFO) push(v uint32) {
	if q.head > 0 && q.head == len(q.d) {
		q.d, q.head = q.d[:0], 0
	}
	q.d = append(q.d, v)
}

func (q *inFIFO) pop() (uint32, bool) {
	if q.head == len(q.d) {
		return 0, false
	}
	v := q.d[q.head]
	q.head++
	return v, true
}

// nicQueuePkts is a host NIC's queue: Linux's default txqueuelen.
const nicQueuePkts = 1000

// newPort makes a port sending to out: a port of switch sw, with the
// switches' queue limits and sw's shared buffer, or a host's NIC (sw nil).
func (n *Network) newPort(out func([]byte), delay time.Duration, rateBps uint64, sw *swtch) *port {
	pc := dataplane.PortModelConfig{RateBps: rateBps, WireOverhead: n.cfg.WireOverhead, QueueDepthPkts: nicQueuePkts,
		SingleCaller: true, Packets: &n.packets}
	if sw != nil {
		c := &n.cfg
		pc.QueueDepthPkts, pc.QueueDepthBytes = c.QueueDepthPkts, c.QueueDepthBytes
		pc.PortBufferBytes, pc.PortBufferPkts, pc.Shared = c.PortBufferBytes, c.PortBufferPkts, sw.shared
	}
	p := &port{n: n, out: out, rate: rateBps, delay: delay.Nanoseconds(), pm: dataplane.NewPortModel(pc)}
	p.wakeFn = p.wake
	p.lossAt = &p.lossDrops
	return p
}

// enqueue queues frame f, which came in on switch port inPort, as verdict
// v says; false if the port dropped it.
func (p *port) enqueue(f []byte, v dataplane.Verdict, inPort uint16) bool {
	pfc := p.sw != nil && p.n.cfg.PFC.On() && (v.Mode == dataplane.ModeStrictPriority || v.Mode == dataplane.ModeTrimAbove)
	var trimmed uint64
	if pfc && v.Mode == dataplane.ModeTrimAbove {
		trimmed = p.pm.Trimmed()
	}
	ok := p.pm.Enqueue(f, v, p.n.clock.now, inPort)
	if !ok {
		p.queueDrops++
		p.n.freeFrame(f)
	} else if pfc {
		// A trim_above port queues by strict priority too; a trimmed
		// frame went to TrimQueue.
		q := min(v.Queue, dataplane.NumQueues-1)
		if v.Mode == dataplane.ModeTrimAbove && p.pm.Trimmed() != trimmed {
			q = dataplane.TrimQueue
		}
		p.ins[q].push(uint32(inPort))
		p.sw.held(inPort, q)
	}
	p.kick()
	return ok
}

// kick services the port now unless it is sending a frame: an arrival or
// a resume may let a queue send before the port's scheduled wake.
func (p *port) kick() {
	if !p.pending || !p.onLink {
		p.service()
	}
}

// at schedules the port's service at t; onLink says t is the end of a
// frame on the link.
func (p *port) at(t int64, onLink bool) {
	t = max(t, p.n.clock.now) // as the clock keeps it
	if p.pending && p.wakeAt == t {
		p.onLink = p.onLink || onLink
		return // that event is scheduled already
	}
	p.pending, p.onLink, p.wakeAt = true, onLink, t
	p.n.clock.AtTime(t, p.wakeFn)
}

// wake is a scheduled service event at t; one a later schedule superseded
// does nothing.
func (p *port) wake(t int64) {
	if p.pending && t == p.wakeAt {
		p.pending = false // this event is spent
		p.service()
	}
}

// service sends the next frame when the port may: it leaves the port when
// its serialization ends and arrives after the link's delay.
func (p *port) service() {
	now := p.n.clock.now
	d, ok, wake := p.pm.Dequeue(now)
	switch {
	case ok:
		p.txPkts++
		p.txBytes += uint64(len(d.Frame))
		f := d.Frame
		if p.sw != nil {
			if p.n.cfg.PFC.On() {
				if in, ok := p.ins[d.Queue&(dataplane.NumQueues-1)].pop(); ok {
					p.sw.left(uint16(in), d.Queue, now)
				}
			}
			p.egress(&d)
		}
		if p.n.postcard != nil && p.sw != nil {
			p.n.sent(p, &d)
		}
		if (p.loss > 0 && p.n.rng.Float64() < p.loss) || p.isDown(now) {
			*p.lossAt++
			p.n.freeFrame(f)
		} else {
			p.n.clock.AtFrame(d.End+p.delay, p.out, f)
		}
		p.at(d.End, true)
	case wake != 0:
		p.at(wake, false)
	default:
		p.pending = false // nothing queued; the next arrival wakes it
	}
}

// egress runs tor.p4's egress control on an ECN-capable frame a switch
// port sends (the TCP model's and the roce variant's: Homa's never set
// ECT), with the queue depth it found when it came, so the switch marks
// CE as the emulation's does.
func (p *port) egress(d *dataplane.PortDeparture) {
	f := d.Frame
	if len(f) < frameHdr || f[12] != 0x08 || f[13] != 0x00 {
		return
	}
	tos := f[ethLen+1]
	if tos&3 == 0 || tos&3 == 3 {
		return
	}
	p.md = pipeline.EgressMeta{EgressPort: p.num, Queue: d.Queue, EnqDepthPkts: d.EnqDepth, Length: len(f)}
	p.sw.pl.Egress(f, &p.md)
	if f[ethLen+1]&3 == 3 {
		p.ceMarks[d.Queue&(dataplane.NumQueues-1)]++
	}
}

// portTable is a switch's ports by number, nil where nothing is attached.
type portTable []*port

func (t portTable) get(n uint16) *port {
	if int(n) < len(t) {
		return t[n]
	}
	return nil
}

func (t *portTable) set(n uint16, p *port) {
	for len(*t) <= int(n) {
		*t = append(*t, nil)
	}
	(*t)[n] = p
}

// v4 is an IPv4 address as a number (the key of Network.byIP: Go's maps
// take a fast path for 32-bit keys); 0 for any other address.
func v4(a netip.Addr) uint32 {
	if !a.Is4() {
		return 0
	}
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// swtch is one switch: tor.p4's pipeline in front of its ports.
type swtch struct {
	n      *Network
	name   string
	pl     *pipeline.Pipeline
	ports  portTable
	drops  uint64 // the pipeline's drops (no route)
	noPort uint64 // verdicts for a port with nothing attached
	// defences are the pipeline's defence counters by port when the
	// network was built: the pipeline outlives it, its statistics do not.
	defences [p4.PortSlots][3]uint64
	// shared is the buffer the switch's ports share (nil: none).
	shared *dataplane.SharedBuffer
	// faulty says a port of the switch has a window down (setDown), so
	// an arriving frame's ingress port is looked at.
	faulty bool
}

// receive runs ingress on a frame arriving on inPort and queues it.
func (s *swtch) receive(f []byte, inPort uint16) {
	if s.faulty {
		if in := s.ports.get(inPort); in != nil && in.isDown(s.n.clock.now) {
			in.lossDrops++
			s.n.freeFrame(f)
			return
		}
	}
	if s.n.cfg.PFC.On() && s.pause(f, inPort) {
		return
	}
	var v dataplane.Verdict
	s.pl.IngressAt(f, inPort, s.n.clock.now, &v)
	if v.Drop {
		s.drops++
		s.n.freeFrame(f)
		return
	}
	p := s.ports.get(v.EgressPort)
	if p == nil {
		s.noPort++
		s.n.freeFrame(f)
		return
	}
	p.enqueue(f, v, inPort)
}

// sent reports a frame switch port p sends, as a postcard: it arrived
// and was queued at once (the pipeline takes no time of its own).
func (n *Network) sent(p *port, d *dataplane.PortDeparture) {
	if len(d.Frame) == 0 {
		return
	}
	c := &n.card
	c.ArrivalNs, c.EnqueueNs, c.DequeueNs = d.EnqueueNs, d.EnqueueNs, d.Start
	c.IngressPort, c.EgressPort, c.Queue, c.FrameLen = d.InPort, p.num, d.Queue, uint16(len(d.Frame))
	c.ParseKey(d.Frame)
	n.postcard(p.sw.name, c)
}

// Frame layout: Ethernet, IPv4 without options, then the Homa packet.
const (
	ethLen   = 14
	ipLen    = 20
	frameHdr = ethLen + ipLen
)

// frame builds the frame carrying payload, a packet of IP protocol proto,
// from src to dst, in a buffer from the network's free list; pad more
// bytes of it are counted in its length, not written.
func (n *Network) frame(src, dst *Host, proto, tos uint8, payload []byte, pad int) []byte {
	f := n.frameOf(src, dst, proto, tos, len(payload)+pad)
	copy(f[frameHdr:], payload)
	return f
}

// frameOf builds the Ethernet and IPv4 headers of a frame from src to dst
// with size bytes of IP payload, which the caller writes.
func (n *Network) frameOf(src, dst *Host, proto, tos uint8, size int) []byte {
	f := n.newFrame(frameHdr + size)
	putMAC(f[0:6], dst.MAC)
	putMAC(f[6:12], src.MAC)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[ethLen:]
	ip[0], ip[1], ip[8], ip[9] = 0x45, tos, 64, proto
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen+size))
	s4, d4 := src.IP.As4(), dst.IP.As4()
	copy(ip[12:16], s4[:])
	copy(ip[16:20], d4[:])
	binary.BigEndian.PutUint16(ip[10:], ^ipSum(ip[:ipLen]))
	return f
}

// ipSum is the ones'-complement sum of an IPv4 header with a zero
// checksum field.
func ipSum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		if i == 10 {
			continue
		}
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

func putMAC(b []byte, mac uint64) {
	for i := range 6 {
		b[i] = byte(mac >> (8 * (5 - i)))
	}
}

// SwitchStats are each switch's port counters since the network was
// built, in the switch statistics' format (switch name -> statistics).
func (n *Network) SwitchStats() map[string]switchstats.Stats {
	out := map[string]switchstats.Stats{}
	for _, name := range n.names {
		s := n.switches[name]
		var st switchstats.Stats
		for i, p := range s.ports {
			if p == nil {
				continue
			}
			pn := uint16(i)
			pms := p.pm.Stats()
			qs := p.pm.Queues(n.clock.now)
			p.pfc.Count(qs)
			for i := range qs {
				if q := qs[i].Queue; q >= 0 && q < len(p.ceMarks) {
					qs[i].CEMarkedPkts = p.ceMarks[q]
				}
			}
			sp := switchstats.Port{Port: pn, TxPkts: p.txPkts, TxBytes: p.txBytes,
				RateBps: p.rate, Queues: qs, RankDrops: pms.RankDrops, TrimmedPkts: pms.Trimmed, FaultDrops: p.lossDrops,
				PipelineDrops: s.drops, BadVerdicts: s.noPort}
			sp.RemarkedPkts, sp.MeteredPkts, sp.SpoofDrops = s.pl.DefenceCounters(pn)
			if int(pn) < len(s.defences) {
				base := s.defences[pn]
				sp.RemarkedPkts, sp.MeteredPkts, sp.SpoofDrops = sp.RemarkedPkts-base[0], sp.MeteredPkts-base[1], sp.SpoofDrops-base[2]
			}
			st.Ports = append(st.Ports, sp)
		}
		out[name] = st
	}
	return out
}

// SetLoss makes frames on the link into host (from its switch) be lost
// with probability toHost, and those out of it (its NIC) with fromHost, as
// the scenario's loss faults do.
func (n *Network) SetLoss(host string, toHost, fromHost float64) error {
	h := n.byName[host]
	if h == nil {
		return fmt.Errorf("simnet: no host %q", host)
	}
	sp := n.switches[h.Switch].ports.get(h.Port)
	if h.nic != nil {
		h.nic.loss, h.nic.lossAt = fromHost, &sp.lossDrops
	} else {
		h.shaper.loss, h.shaper.lossAt = fromHost, &sp.lossDrops
	}
	sp.loss = toHost
	return nil
}

// SetDown takes the link of host down, both ways, from from until to
// (ns on the simulation's clock), as the scenario's link-down faults do:
// the switch drops what the host sends and what it would send the host.
func (n *Network) SetDown(host string, from, to int64) error {
	h := n.byName[host]
	if h == nil {
		return fmt.Errorf("simnet: no host %q", host)
	}
	n.switches[h.Switch].ports.get(h.Port).setDown(from, to)
	return nil
}

// SetLinkLoss has the link between switches a and b lose frames: aToB of
// those a sends b, bToA of those b sends a, all counted at a's port, where
// the fault is.
func (n *Network) SetLinkLoss(a, b string, aToB, bToA float64) error {
	pa, pb, err := n.linkPorts(a, b)
	if err != nil {
		return err
	}
	pa.loss, pb.loss, pb.lossAt = aToB, bToA, &pa.lossDrops
	return nil
}

// linkPorts are the ports of switch a toward b and of b toward a.
func (n *Network) linkPorts(a, b string) (pa, pb *port, err error) {
	for _, l := range n.cfg.Links {
		if l.A == a && l.B == b || l.A == b && l.B == a {
			pa, pb = n.switches[l.A].ports.get(l.APort), n.switches[l.B].ports.get(l.BPort)
			if l.A != a {
				pa, pb = pb, pa
			}
			return pa, pb, nil
		}
	}
	return nil, nil, fmt.Errorf("simnet: no link %s-%s", a, b)
}

// SetLinkDown takes the link between switches a and b down, both ways,
// from from until to: the port of a toward b drops what it sends and
// what it receives, as a leaf-spine link-down fault does on the leaf.
func (n *Network) SetLinkDown(a, b string, from, to int64) error {
	pa, _, err := n.linkPorts(a, b)
	if err != nil {
		return err
	}
	pa.setDown(from, to)
	return nil
}

// setDown takes switch port p's link down, both ways, from from until to.
func (p *port) setDown(from, to int64) {
	p.downFrom, p.downTo = append(p.downFrom, from), append(p.downTo, to)
	p.sw.faulty = true
}

// isDown reports whether the link is down at now.
func (p *port) isDown(now int64) bool {
	for i, f := range p.downFrom {
		if now >= f && now < p.downTo[i] {
			return true
		}
	}
	return false
}

// bucket is an emulated host's shaper: a token bucket at the link rate
// that releases frames at once while it has tokens for them, in order.
type bucket struct {
	n       *Network
	out     func([]byte)
	delay   int64   // as port.delay
	rate    float64 // bytes per ns
	burst   float64
	tokens  float64
	at      int64 // when tokens was last brought up to date
	q       [][]byte
	pending bool // a release is scheduled
	// releaseFn is release, made once.
	releaseFn func()
	loss      float64
	// Drops counts frames refused because nicQueuePkts were waiting.
	drops, lossDrops uint64
	lossAt           *uint64 // as port.lossAt
}

func (b *bucket) send(f []byte) {
	if len(b.q) >= nicQueuePkts {
		b.drops++
		return
	}
	b.q = append(b.q, f)
	if !b.pending {
		b.release()
	}
}

// release hands on the waiting frames the tokens pay for, and schedules
// itself for when the next one is paid for.
func (b *bucket) release() {
	b.pending = false
	now := b.n.clock.now
	b.tokens = min(b.burst, b.tokens+float64(now-b.at)*b.rate)
	b.at = now
	for len(b.q) > 0 {
		f := b.q[0]
		need := float64(len(f))
		if b.tokens < need {
			b.pending = true
			b.n.clock.At(now+int64((need-b.tokens)/b.rate)+1, b.releaseFn)
			return
		}
		b.tokens -= need
		b.q[0] = nil
		b.q = b.q[1:]
		if b.loss > 0 && b.n.rng.Float64() < b.loss {
			*b.lossAt++
			b.n.freeFrame(f)
			continue
		}
		b.n.clock.AtFrame(now+b.delay, b.out, f)
	}
}

// maxFrame is the capacity of the frames the free list keeps: a 1500-byte
// MTU's frame, rounded up. Longer frames are allocated as they come and
// left to the garbage collector.
const maxFrame = 2048

// newFrame returns a frame buffer of length n, reused when one is free.
// Its bytes are not cleared: the caller writes every one.
func (n *Network) newFrame(size int) []byte {
	if k := len(n.frames); k > 0 && size <= maxFrame {
		f := n.frames[k-1]
		n.frames = n.frames[:k-1]
		return f[:size]
	}
	if size > maxFrame {
		return make([]byte, size)
	}
	return make([]byte, size, maxFrame)
}

// freeFrame takes back a frame nothing refers to any more: delivered to
// its host's endpoint (which copies what it keeps) or dropped.
func (n *Network) freeFrame(f []byte) {
	if cap(f) == maxFrame && len(n.frames) < 1<<16 {
		n.frames = append(n.frames, f[:0])
	}
}
