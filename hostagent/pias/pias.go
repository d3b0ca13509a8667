// Package pias tags the packets of kernel TCP flows for PIAS (Bai et al.,
// NSDI 2015): a tc program on a host's egress interface counts the bytes
// each direction of each TCP connection has sent and writes the DSCP of the
// level of a multi-level feedback queue into every packet, so a switch with
// strict-priority queues serves the first bytes of every flow first without
// knowing flow sizes. Congestion control stays the kernel's (DCTCP with ECN
// marking in the switch, see hostagent/tcpcc).
//
// The object is compiled from bpf/pias.c by `go generate` (bpf2go); see
// docs/transports.md, section PIAS.
package pias

//go:generate sh -c "PATH=$PATH:/usr/sbin:/sbin; bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h"
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type pias_config -type pias_level_stats pias bpf/pias.c

import (
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// MaxLevels is the most levels a Config may have: the switch has eight
// strict-priority queues per port (bpf/pias.c's MAX_LEVELS).
const MaxLevels = 8

// defaultMaxFlows sizes the flow table when Config.MaxFlows is 0.
const defaultMaxFlows = 65536

// Config says how packets are tagged.
type Config struct {
	// Thresholds are the demotion thresholds in bytes, strictly ascending
	// and above 0: a packet that leaves after its flow direction has sent
	// fewer than Thresholds[0] bytes is at level 0 (highest priority),
	// after at least Thresholds[i-1] and fewer than Thresholds[i] at level
	// i. len(Thresholds)+1 levels, at most MaxLevels.
	Thresholds []uint64
	// DSCP is each level's DSCP (0..63), level 0 first; len(Thresholds)+1
	// values. Nil means class selectors from CS7 down (level i gets CS(7-i),
	// which the switch's default policy puts in queue 7-i).
	DSCP []uint8
	// IdleReset restarts a direction's count at 0 when it sends data after
	// sending none for longer than this, so a new message on a reused
	// connection starts at level 0 again. 0: only a SYN restarts it.
	IdleReset time.Duration
	// MaxFlows is the size of the flow table (an LRU: the least recently
	// seen direction is forgotten first). 0 means 65536.
	MaxFlows uint32
}

// DefaultConfig is PIAS for a host link of rateBps bit/s and a base round
// trip rtt: MaxLevels levels with thresholds growing 4x from one
// bandwidth-delay product (Thresholds), CS7 down to CS0, and an idle reset
// after 4 round trips (at least 1 ms). docs/transports.md says why.
func DefaultConfig(rateBps uint64, rtt time.Duration) Config {
	bdp := uint64(math.Ceil(float64(rateBps) / 8 * rtt.Seconds()))
	return Config{
		Thresholds: Thresholds(bdp, MaxLevels),
		IdleReset:  max(4*rtt, time.Millisecond),
	}
}

// ForRun is the tagging a run's hosts use: DefaultConfig for the host
// link's rate and base round trip, with the scenario's thresholds and idle
// gap where it sets them (nil and 0 keep the defaults). The host agents
// and the simulator's TCP model (simnet/tcpmodel) both take it from here,
// so the two tag alike.
func ForRun(rateBps uint64, rtt time.Duration, thresholds []uint64, idleReset time.Duration) Config {
	cfg := DefaultConfig(rateBps, rtt)
	if len(thresholds) > 0 {
		cfg.Thresholds = thresholds
	}
	if idleReset > 0 {
		cfg.IdleReset = idleReset
	}
	return cfg
}

// Thresholds returns levels-1 thresholds growing geometrically by 4 from
// first bytes (at least one 1500-byte frame): first, 4 first, 16 first, ...
func Thresholds(first uint64, levels int) []uint64 {
	first = max(first, 1500)
	var ts []uint64
	for t := first; len(ts) < levels-1; t *= 4 {
		ts = append(ts, t)
	}
	return ts
}

// Validate checks the configuration; its errors name the field.
func (c Config) Validate() error {
	if len(c.Thresholds) > MaxLevels-1 {
		return fmt.Errorf("pias: Thresholds has %d values, at most %d (%d levels)", len(c.Thresholds), MaxLevels-1, MaxLevels)
	}
	for i, t := range c.Thresholds {
		if t == 0 {
			return fmt.Errorf("pias: Thresholds[%d] is 0, want > 0", i)
		}
		if i > 0 && t <= c.Thresholds[i-1] {
			return fmt.Errorf("pias: Thresholds[%d] = %d not above Thresholds[%d] = %d: thresholds must ascend", i, t, i-1, c.Thresholds[i-1])
		}
	}
	if c.DSCP != nil && len(c.DSCP) != len(c.Thresholds)+1 {
		return fmt.Errorf("pias: DSCP has %d values, want len(Thresholds)+1 = %d (one per level)", len(c.DSCP), len(c.Thresholds)+1)
	}
	for i, d := range c.DSCP {
		if d > 63 {
			return fmt.Errorf("pias: DSCP[%d] = %d outside 0..63", i, d)
		}
	}
	if c.IdleReset < 0 {
		return fmt.Errorf("pias: IdleReset = %v is negative", c.IdleReset)
	}
	return nil
}

// Levels is the number of priority levels: len(Thresholds)+1.
func (c Config) Levels() int { return len(c.Thresholds) + 1 }

// LevelDSCP is the DSCP level i's packets carry.
func (c Config) LevelDSCP(i int) uint8 {
	if c.DSCP != nil {
		return c.DSCP[i]
	}
	return uint8(MaxLevels-1-i) << 3
}

// settings is the config map's value for c (valid).
func (c Config) settings() piasPiasConfig {
	s := piasPiasConfig{Levels: uint32(c.Levels()), IdleResetNs: uint64(c.IdleReset.Nanoseconds())}
	copy(s.Threshold[:], c.Thresholds)
	for i := range c.Levels() {
		s.Dscp[i] = c.LevelDSCP(i)
	}
	return s
}

// Tagger is the program attached to one interface. Close detaches it.
type Tagger struct {
	// Iface is the interface's name.
	Iface string
	// Mode is how it is attached: "tcx" (kernel 6.6 and later) or "clsact"
	// (a tc filter in the clsact qdisc's egress hook).
	Mode string

	coll   *ebpf.Collection
	detach func() error
}

// Attach validates cfg, loads the program and attaches it to the egress
// of interface ifaceName (an Ethernet interface in the calling thread's
// network namespace): with TCX where the kernel has it, else as a tc
// filter under a clsact qdisc (created if missing, left in place on Close).
func Attach(ifaceName string, cfg Config) (*Tagger, error) {
	return attach(ifaceName, cfg, false)
}

func attach(ifaceName string, cfg Config, legacy bool) (*Tagger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ifc, err := net.InterfaceByName(ifaceName)
	if err != nil {
		return nil, fmt.Errorf("pias: interface %q: %w", ifaceName, err)
	}
	// The program reads the IPv4 header after a 14-byte Ethernet header.
	if len(ifc.HardwareAddr) != 6 {
		return nil, fmt.Errorf("pias: interface %q is not Ethernet (hardware address %q)", ifaceName, ifc.HardwareAddr)
	}
	t, err := load(cfg)
	if err != nil {
		return nil, err
	}
	t.Iface = ifaceName
	coll := t.coll
	prog := coll.Programs[piasProgHomatbPias]
	if !legacy {
		l, err := link.AttachTCX(link.TCXOptions{Interface: ifc.Index, Program: prog, Attach: ebpf.AttachTCXEgress})
		switch {
		case err == nil:
			t.Mode, t.detach = "tcx", l.Close
			return t, nil
		case !errors.Is(err, ebpf.ErrNotSupported):
			coll.Close()
			return nil, fmt.Errorf("pias: attaching to %s egress (tcx): %w", ifaceName, err)
		}
	}
	if t.detach, err = attachClsact(ifc.Index, prog); err != nil {
		coll.Close()
		return nil, fmt.Errorf("pias: attaching to %s egress (clsact, the kernel has no tcx): %w", ifaceName, err)
	}
	t.Mode = "clsact"
	return t, nil
}

// load loads the program and its maps with cfg (valid) written, attached
// nowhere.
func load(cfg Config) (*Tagger, error) {
	spec, err := loadPias()
	if err != nil {
		return nil, fmt.Errorf("pias: %w", err)
	}
	spec.Maps[piasMapFlows].MaxEntries = cfg.MaxFlows
	if cfg.MaxFlows == 0 {
		spec.Maps[piasMapFlows].MaxEntries = defaultMaxFlows
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("pias: program rejected by the verifier: %+v", ve)
		}
		return nil, fmt.Errorf("pias: loading the program: %w", err)
	}
	t := &Tagger{coll: coll, detach: func() error { return nil }}
	if err := t.SetConfig(cfg); err != nil {
		coll.Close()
		return nil, err
	}
	return t, nil
}

// attachClsact installs prog as a direct-action tc filter on the egress of
// interface index, adding a clsact qdisc if the interface has none.
func attachClsact(index int, prog *ebpf.Program) (func() error, error) {
	// A handle keeps its sockets in this thread's namespace, so Close
	// works from any thread.
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	q := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}
	if err := h.QdiscAdd(q); err != nil && !errors.Is(err, unix.EEXIST) {
		h.Close()
		return nil, fmt.Errorf("adding a clsact qdisc: %w", err)
	}
	f := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: index,
			Parent:    netlink.HANDLE_MIN_EGRESS,
			Handle:    1,
			Protocol:  unix.ETH_P_ALL,
			Priority:  1,
		},
		Fd:           prog.FD(),
		Name:         piasProgHomatbPias,
		DirectAction: true,
	}
	if err := h.FilterReplace(f); err != nil {
		h.Close()
		return nil, fmt.Errorf("adding the bpf filter: %w", err)
	}
	return func() error {
		defer h.Close()
		return h.FilterDel(f)
	}, nil
}

// SetConfig replaces the thresholds, DSCPs and idle gap while attached
// (MaxFlows keeps its value from Attach). Flows keep their counts.
func (t *Tagger) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := t.coll.Maps[piasMapSettings].Put(uint32(0), cfg.settings()); err != nil {
		return fmt.Errorf("pias: writing the settings map: %w", err)
	}
	return nil
}

// LevelStats is what left at one level since Attach.
type LevelStats struct {
	// Packets counts skbs at egress: a GSO packet counts once.
	Packets uint64
	// Bytes counts TCP payload bytes.
	Bytes uint64
}

// Stats returns each level's counts (MaxLevels entries, level 0 first) and
// how many times an idle gap restarted a direction's count.
func (t *Tagger) Stats() (levels []LevelStats, idleResets uint64, err error) {
	m := t.coll.Maps[piasMapStats]
	levels = make([]LevelStats, MaxLevels)
	for i := range MaxLevels + 1 {
		var perCPU []piasPiasLevelStats
		if err := m.Lookup(uint32(i), &perCPU); err != nil {
			return nil, 0, fmt.Errorf("pias: reading stats[%d]: %w", i, err)
		}
		for _, s := range perCPU {
			if i == MaxLevels {
				idleResets += s.Pkts
				continue
			}
			levels[i].Packets += s.Pkts
			levels[i].Bytes += s.Bytes
		}
	}
	return levels, idleResets, nil
}

// Close detaches the program and frees it.
func (t *Tagger) Close() error {
	err := t.detach()
	t.coll.Close()
	if err != nil {
		return fmt.Errorf("pias: detaching from %s: %w", t.Iface, err)
	}
	return nil
}
