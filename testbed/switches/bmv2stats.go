package switches

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/topo"
)

// QueueCounterReader reads one switch's tor.p4 queue and defence counters
// over P4Runtime (*Control does).
type QueueCounterReader interface {
	QueueCounters(ctx context.Context, sw string) ([]controller.Sample, error)
	DefenceCounters(ctx context.Context, sw string) ([]controller.DefenceCount, error)
}

// A run's controller is what its BMv2 statistics read through.
var _ QueueCounterReader = (*Control)(nil)

// QueueCounters reads switch sw's queue counters.
func (c *Control) QueueCounters(ctx context.Context, sw string) ([]controller.Sample, error) {
	return c.switches.QueueCounters(ctx, sw)
}

// DefenceCounters reads switch sw's defence counters, by ingress port.
func (c *Control) DefenceCounters(ctx context.Context, sw string) ([]controller.DefenceCount, error) {
	return c.switches.DefenceCounters(ctx, sw)
}

// BMv2Stats is a BMv2 switch's statistics (switchStats): tor.p4's queue
// counters over P4Runtime, and the kernel port shaper's per-queue classes
// read with tc in the switch's namespace. Per (port, queue): enq_* is what
// entered BMv2's queue (ingress_queue_counter); sent_* what left the port
// (the shaper's class); drop_pkts what BMv2's queue dropped (entered but
// never reached egress_queue_counter) plus what the shaper's FIFO dropped;
// depth_* the shaper's backlog (BMv2's own queue depth is a register).
// Per port, the defences' counts are tor.p4's remark, meter and spoof
// counters.
type BMv2Stats struct {
	sw       topo.Switch
	rateBps  uint64
	counters QueueCounterReader
	// tc runs tc in the switch's namespace and returns its output;
	// dropRx drops every frame an interface there receives until closed.
	tc     func(ctx context.Context, args ...string) ([]byte, error)
	dropRx func(netns, dev string) (io.Closer, error)

	mu   sync.Mutex
	down map[int]*downPort // ports whose links are cut
}

// NewBMv2Stats reads switch sw of a run at rateBps, its counters through
// counters.
func NewBMv2Stats(sw topo.Switch, rateBps uint64, counters QueueCounterReader) *BMv2Stats {
	return &BMv2Stats{sw: sw, rateBps: rateBps, counters: counters,
		tc: nsTool(sw.NetNS, "tc"), dropRx: dropRxXDP, down: map[int]*downPort{}}
}

// nsTool returns a runner of tool in the network namespace netns, each run
// bounded to 3 s.
func nsTool(netns, tool string) func(ctx context.Context, args ...string) ([]byte, error) {
	return func(ctx context.Context, args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + netns, "--", tool}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s %s in %s: %w: %s", tool, strings.Join(args, " "), netns, err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
}

// ResetWindow has nothing to restart: BMv2 keeps no windowed gauges that
// the run reads.
func (b *BMv2Stats) ResetWindow(context.Context) error { return nil }

// tcQdisc is the part of `tc -s -j qdisc show` the statistics use.
type tcQdisc struct {
	Kind    string `json:"kind"`
	Handle  string `json:"handle"`
	Parent  string `json:"parent"`
	Bytes   uint64 `json:"bytes"`
	Packets uint64 `json:"packets"`
	Drops   uint64 `json:"drops"`
	Backlog int    `json:"backlog"`
	Qlen    int    `json:"qlen"`
}

// shaperQueues reads the port shaper of every interface: the FIFO under
// class 1:1q is queue q (mininet/homatb_mn.py, shaper_commands).
func (b *BMv2Stats) shaperQueues(ctx context.Context) (map[string]map[int]tcQdisc, error) {
	out := map[string]map[int]tcQdisc{}
	for _, port := range b.sw.Ports {
		dev := b.sw.Intfs[port]
		raw, err := b.tc(ctx, "-s", "-j", "qdisc", "show", "dev", dev)
		if err != nil {
			return nil, err
		}
		var qs []tcQdisc
		if err := json.Unmarshal(raw, &qs); err != nil {
			return nil, fmt.Errorf("tc qdisc show dev %s: %w", dev, err)
		}
		byQueue := map[int]tcQdisc{}
		for _, q := range qs {
			if n, ok := shaperQueue(q.Parent); ok {
				byQueue[n] = q
			}
		}
		if len(byQueue) != p4.QueuesPerPort {
			return nil, fmt.Errorf("switch %s port %d (%s): the port shaper has %d of %d queues", b.sw.Name, port, dev, len(byQueue), p4.QueuesPerPort)
		}
		out[dev] = byQueue
	}
	return out, nil
}

// shaperQueue is the queue whose FIFO hangs off parent in the port shaper.
func shaperQueue(parent string) (int, bool) {
	minor, ok := strings.CutPrefix(parent, "1:1")
	if !ok || len(minor) != 1 {
		return 0, false
	}
	n, err := strconv.Atoi(minor)
	return n, err == nil && n < p4.QueuesPerPort
}

// Fetch returns the switch's statistics: counters and shaper queues.
func (b *BMv2Stats) Fetch(ctx context.Context) (rundir.SwitchStats, error) {
	st := rundir.SwitchStats{DeviceID: b.sw.DeviceID}
	rows, err := b.counters.QueueCounters(ctx, b.sw.Name)
	if err != nil {
		return st, fmt.Errorf("switch %s counters: %w", b.sw.Name, err)
	}
	shaper, err := b.shaperQueues(ctx)
	if err != nil {
		return st, err
	}
	defences, err := b.counters.DefenceCounters(ctx, b.sw.Name)
	if err != nil {
		return st, fmt.Errorf("switch %s defence counters: %w", b.sw.Name, err)
	}
	byPort := map[int]controller.DefenceCount{}
	for _, d := range defences {
		byPort[d.Port] = d
	}
	byKey := map[[2]int]controller.Sample{}
	for _, r := range rows {
		byKey[[2]int{r.Port, r.Queue}] = r
	}
	for _, port := range b.sw.Ports {
		dev := b.sw.Intfs[port]
		d := byPort[port]
		p := switchstats.Port{Port: uint16(port), Iface: dev, RateBps: b.rateBps,
			RemarkedPkts: uint64(d.Remarked), MeteredPkts: uint64(d.Metered), SpoofDrops: uint64(d.Spoofed)}
		for q := range p4.QueuesPerPort {
			c := byKey[[2]int{port, q}]
			k := shaper[dev][q]
			// Entered BMv2's queue but never left it: its tail drops (the
			// queue is empty when an experiment's statistics are read).
			tmDrops := uint64(max(c.EnqPkts-c.SentPkts, 0))
			p.Queues = append(p.Queues, switchstats.Queue{Queue: q,
				EnqPkts: uint64(c.EnqPkts), EnqBytes: uint64(c.EnqBytes),
				SentPkts: k.Packets, SentBytes: k.Bytes,
				DropPkts: tmDrops + k.Drops, DepthPkts: k.Qlen, DepthBytes: k.Backlog})
			p.TxPkts += k.Packets
			p.TxBytes += k.Bytes
		}
		st.Ports = append(st.Ports, p)
	}
	return st, nil
}

var errBMv2Faults = errors.New("packet loss needs the embedded target: BMv2 has no fault injector (links can only go down)")

// downPort is a port whose link is cut, and the timer that mends it.
type downPort struct {
	cut   *cut
	timer *time.Timer
}

// SetFault cuts a port's link for fs.DownFor, both ways (linkcut.go: BMv2
// has no fault injector, and taking its interface down would stop the
// port for good), and a timer mends it; "0s" mends it now. Packet loss is
// refused; a setting of no loss (what clearing the faults sends) is
// accepted.
func (b *BMv2Stats) SetFault(ctx context.Context, fs switchstats.FaultSetting) error {
	if (fs.DropProb != nil && *fs.DropProb != 0) || (fs.DropEvery != nil && *fs.DropEvery != 0) {
		return errBMv2Faults
	}
	if fs.DownFor == nil {
		return nil
	}
	d, err := time.ParseDuration(*fs.DownFor)
	if err != nil || d < 0 {
		return fmt.Errorf("switch %s port %d: down_for %q: want a duration of 0s or more", b.sw.Name, fs.Port, *fs.DownFor)
	}
	port := int(fs.Port)
	dev, ok := b.sw.Intfs[port]
	if !ok {
		return fmt.Errorf("switch %s has no port %d", b.sw.Name, port)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var c *cut // the port's cut if it is down already
	if dp := b.down[port]; dp != nil {
		dp.timer.Stop()
		delete(b.down, port)
		c = dp.cut
	}
	if d == 0 {
		if c == nil {
			return nil
		}
		return b.mend(ctx, dev, c)
	}
	if c == nil {
		if c, err = b.cutPort(ctx, dev); err != nil {
			return err
		}
	}
	dp := &downPort{cut: c}
	dp.timer = time.AfterFunc(d, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.down[port] != dp {
			return // mended meanwhile
		}
		delete(b.down, port)
		// Clear mends every faulted port too, so a failure here leaves
		// the link cut only until the experiment ends.
		_ = b.mend(context.Background(), dev, c)
	})
	b.down[port] = dp
	return nil
}

// StartPostcards refuses: BMv2 writes no per-packet records.
func (b *BMv2Stats) StartPostcards(context.Context, string) error {
	return errors.New("per-packet switch records need the embedded target")
}

// StopPostcards has nothing to stop.
func (b *BMv2Stats) StopPostcards(context.Context) (switchstats.PostcardSummary, error) {
	return switchstats.PostcardSummary{}, nil
}
