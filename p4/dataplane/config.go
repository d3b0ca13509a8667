package dataplane

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// NumQueues is the number of strict-priority queues per egress port; queue 7
// is served first, as in BMv2 with --priority-queues 8.
const NumQueues = 8

// MaxPort is the highest port number; v1model ports are 9 bits, but the
// tor.p4 counters are indexed port*8+queue < 512, so ports are 1..63.
const MaxPort = 63

// Defaults used where a Config field is zero.
const (
	DefaultLinkRateBps    = 1_000_000_000
	DefaultQueueDepthPkts = 64 // BMv2's per (port, priority) default
	DefaultBatchSize      = 64
	DefaultMaxFrame       = 2048
	DefaultShaperLag      = time.Millisecond
	DefaultSharedAlpha    = 1.0
	DefaultPcapRecords    = 4096
	// DefaultPostcardRing is 2 MiB of records per port: even at the
	// writer's longest period (50 ms) it absorbs 650,000 frames/s, above
	// what a port forwards on this testbed.
	DefaultPostcardRing = 1 << 15
)

// QueueDepth overrides the packet limit of queues, like BMv2's
// `set_queue_depth <nb_pkts> [<port> [<priority>]]`: Port 0 means every port,
// Queue -1 every queue of the port.
type QueueDepth struct {
	Port  uint16
	Queue int
	Pkts  int
}

// QueueRate limits queues in packets per second, like BMv2's
// `set_queue_rate <pps> [<port> [<priority>]]`: Port 0 means every port,
// Queue -1 every queue of the port, PPS 0 unlimited. It applies on top of the
// port's link-rate shaper.
type QueueRate struct {
	Port  uint16
	Queue int
	PPS   uint64
}

// Fault is the loss injected on one port, as if the frame were lost on the
// wire: on egress after the traffic manager, on ingress before the
// pipeline. Both rules apply when both are set.
type Fault struct {
	DropProb  float64   // probability in [0, 1] of dropping each frame
	EveryN    uint64    // drop every Nth frame; 0 disables
	Direction Direction // which frames the rules apply to (default Egress)
}

// Config configures a Dataplane. Zero values mean the documented default.
type Config struct {
	DeviceID uint64
	// Ports maps port numbers (1..MaxPort) to interface names.
	Ports map[uint16]string
	// LinkRateBps is the shaped rate of every egress port (default 1 Gbit/s);
	// PortRateBps overrides it per port. Unshaped turns the shaper off.
	LinkRateBps uint64
	PortRateBps map[uint16]uint64
	Unshaped    bool
	// QueueDepthPkts and QueueDepthBytes limit each (port, queue); a zero
	// byte limit means packets alone limit the queue.
	QueueDepthPkts  int
	QueueDepthBytes int
	QueueDepths     []QueueDepth
	QueueRates      []QueueRate
	// PortBufferBytes and PortBufferPkts limit the sum over a port's queues
	// (zero: no port-wide limit).
	PortBufferBytes int
	PortBufferPkts  int
	// SharedBufferBytes, when positive, puts all queues of the switch in one
	// shared buffer with dynamic thresholds (Choudhury-Hahne): a queue may
	// grow while its bytes stay below SharedAlpha times the free buffer.
	SharedBufferBytes int
	SharedAlpha       float64
	// PcapDir, when set, receives <iface>_in.pcap and <iface>_out.pcap per port.
	PcapDir string
	// PcapRecords is the number of frames a capture may lag behind the hot
	// path before frames are left out of it (counted as pcap_drops).
	PcapRecords int
	// PostcardRing is the number of per-packet records (StartPostcards) a
	// port may hold before its writer drains them; further records are
	// counted as postcard_drops. Rounded up to a power of two.
	PostcardRing int
	// PFC turns priority flow control on for some queues (zero: off).
	PFC PFC
	// Faults sets the initial fault injection per port.
	Faults map[uint16]Fault
	// BatchSize is the receive and send batch (default 64); it is fixed for
	// the dataplane's life because buffer pools are sized from it.
	BatchSize int
	// MaxFrame is the receive buffer size; longer frames are dropped and
	// counted as oversize (offloads left on produce them).
	MaxFrame int
	// Spin, when positive, receives on every port from one goroutine that
	// keeps polling all sockets for Spin after the last frame before it
	// sleeps: it trades CPU for the cost of waking an idle vCPU.
	Spin time.Duration
	// ShaperLag bounds how far the shaper lets a port catch up after the
	// scheduler woke late: departures are never scheduled further than this
	// (or four full frames at the port's rate, if longer) in the past, so
	// late wake-ups become short bursts, not lost capacity; later ones
	// lose link time, counted in the port's LostLinkNs.
	ShaperLag time.Duration
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns a copy of c with zero fields filled and checks it.
func (c Config) withDefaults() (Config, error) {
	if len(c.Ports) == 0 {
		return c, errors.New("dataplane: no ports configured")
	}
	for p, iface := range c.Ports {
		if p == 0 || p > MaxPort {
			return c, fmt.Errorf("dataplane: port %d out of range 1..%d", p, MaxPort)
		}
		if iface == "" {
			return c, fmt.Errorf("dataplane: port %d has no interface", p)
		}
	}
	if c.LinkRateBps == 0 {
		c.LinkRateBps = DefaultLinkRateBps
	}
	if c.QueueDepthPkts == 0 {
		c.QueueDepthPkts = DefaultQueueDepthPkts
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.ShaperLag == 0 {
		c.ShaperLag = DefaultShaperLag
	}
	if c.SharedAlpha == 0 {
		c.SharedAlpha = DefaultSharedAlpha
	}
	if c.PcapRecords == 0 {
		c.PcapRecords = DefaultPcapRecords
	}
	if c.PostcardRing <= 0 {
		c.PostcardRing = DefaultPostcardRing
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.QueueDepthPkts < 0, c.QueueDepthBytes < 0, c.PortBufferBytes < 0,
		c.PortBufferPkts < 0, c.SharedBufferBytes < 0:
		return c, errors.New("dataplane: negative buffer limit")
	case c.BatchSize < 1 || c.BatchSize > 1024:
		return c, fmt.Errorf("dataplane: batch size %d not in 1..1024", c.BatchSize)
	case c.MaxFrame < 64:
		return c, fmt.Errorf("dataplane: max frame %d below 64", c.MaxFrame)
	case c.Spin < 0 || c.ShaperLag < 0:
		return c, errors.New("dataplane: negative duration")
	}
	if err := c.PFC.check(); err != nil {
		return c, err
	}
	for p, r := range c.PortRateBps {
		if _, ok := c.Ports[p]; !ok {
			return c, fmt.Errorf("dataplane: rate for unknown port %d", p)
		}
		if r == 0 {
			return c, fmt.Errorf("dataplane: port %d rate is zero", p)
		}
	}
	for _, d := range c.QueueDepths {
		if err := c.checkPortQueue(d.Port, d.Queue); err != nil {
			return c, fmt.Errorf("dataplane: queue depth: %w", err)
		}
		if d.Pkts < 1 {
			return c, fmt.Errorf("dataplane: queue depth %d for port %d below 1", d.Pkts, d.Port)
		}
	}
	for _, r := range c.QueueRates {
		if err := c.checkPortQueue(r.Port, r.Queue); err != nil {
			return c, fmt.Errorf("dataplane: queue rate: %w", err)
		}
	}
	for p, f := range c.Faults {
		if _, ok := c.Ports[p]; !ok {
			return c, fmt.Errorf("dataplane: fault for unknown port %d", p)
		}
		if err := f.check(); err != nil {
			return c, fmt.Errorf("dataplane: port %d: %w", p, err)
		}
	}
	return c, nil
}

func (c *Config) checkPortQueue(port uint16, queue int) error {
	if _, ok := c.Ports[port]; port != 0 && !ok {
		return fmt.Errorf("unknown port %d", port)
	}
	if queue < -1 || queue >= NumQueues {
		return fmt.Errorf("queue %d not in 0..%d", queue, NumQueues-1)
	}
	return nil
}

func (f Fault) check() error {
	if !(f.DropProb >= 0 && f.DropProb <= 1) {
		return fmt.Errorf("drop probability %v not in [0, 1]", f.DropProb)
	}
	if f.Direction > Both {
		return fmt.Errorf("fault %v: expected egress, ingress or both", f.Direction)
	}
	return nil
}

// matches reports whether a BMv2-style (port, queue) selector covers (p, q).
func matches(selPort uint16, selQueue int, p uint16, q int) bool {
	return (selPort == 0 || selPort == p) && (selQueue == -1 || selQueue == q)
}

// queueLimitPkts is the packet limit of (p, q) after the overrides, which
// apply in order like successive set_queue_depth commands.
func (c *Config) queueLimitPkts(p uint16, q int) int {
	n := c.QueueDepthPkts
	for _, d := range c.QueueDepths {
		if matches(d.Port, d.Queue, p, q) {
			n = d.Pkts
		}
	}
	if c.PFC.Priorities&(1<<q) != 0 {
		n += c.PFC.HeadroomPkts
	}
	return n
}

// queueRatePPS is the packet rate limit of (p, q); 0 is unlimited.
func (c *Config) queueRatePPS(p uint16, q int) uint64 {
	var r uint64
	for _, qr := range c.QueueRates {
		if matches(qr.Port, qr.Queue, p, q) {
			r = qr.PPS
		}
	}
	return r
}

// portRate is the shaped rate of port p in bit/s; 0 means unshaped.
func (c *Config) portRate(p uint16) uint64 {
	if c.Unshaped {
		return 0
	}
	if r, ok := c.PortRateBps[p]; ok {
		return r
	}
	return c.LinkRateBps
}
