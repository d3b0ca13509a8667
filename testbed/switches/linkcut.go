package switches

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/homatb/homatb/internal/nsenter"
	"github.com/homatb/homatb/p4"
)

// A BMv2 link is cut without taking an interface down: simple_switch reads
// its ports with pcap, and a port whose interface goes down stops for good
// (it does not resume when the interface comes back). So a cut port drops
// what arrives in an XDP program, which runs before any packet socket sees
// the frame, and what leaves in its shaper, whose eight FIFOs get a limit
// of 0. The peer keeps its carrier, as it would behind a failed optic that
// a switch has not yet noticed.

// cut is one port's cut: the XDP attachment and the FIFO limits to restore.
type cut struct {
	rx     io.Closer
	limits [p4.QueuesPerPort]int
}

// cutPort cuts port's link (interface dev in the switch's namespace).
func (b *BMv2Stats) cutPort(ctx context.Context, dev string) (*cut, error) {
	limits, err := b.fifoLimits(ctx, dev)
	if err != nil {
		return nil, err
	}
	rx, err := b.dropRx(b.sw.NetNS, dev)
	if err != nil {
		return nil, fmt.Errorf("switch %s: drop what %s receives: %w", b.sw.Name, dev, err)
	}
	c := &cut{rx: rx, limits: limits}
	var zero [p4.QueuesPerPort]int
	if err := b.setFIFOLimits(ctx, dev, zero); err != nil {
		_ = b.mend(ctx, dev, c)
		return nil, err
	}
	return c, nil
}

// mend undoes c: the FIFOs get their limits back and XDP lets frames pass.
func (b *BMv2Stats) mend(ctx context.Context, dev string, c *cut) error {
	err := b.setFIFOLimits(ctx, dev, c.limits)
	if cerr := c.rx.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("switch %s: let %s receive again: %w", b.sw.Name, dev, cerr)
	}
	return err
}

// fifoLimits reads the packet limit of each of dev's shaper FIFOs.
func (b *BMv2Stats) fifoLimits(ctx context.Context, dev string) ([p4.QueuesPerPort]int, error) {
	var limits [p4.QueuesPerPort]int
	raw, err := b.tc(ctx, "-j", "qdisc", "show", "dev", dev)
	if err != nil {
		return limits, err
	}
	var qs []struct {
		Kind    string `json:"kind"`
		Parent  string `json:"parent"`
		Options struct {
			Limit *int `json:"limit"`
		} `json:"options"`
	}
	if err := json.Unmarshal(raw, &qs); err != nil {
		return limits, fmt.Errorf("tc qdisc show dev %s: %w", dev, err)
	}
	seen := 0
	for _, q := range qs {
		n, ok := shaperQueue(q.Parent)
		if !ok || q.Kind != "pfifo" || q.Options.Limit == nil {
			continue
		}
		limits[n] = *q.Options.Limit
		seen++
	}
	if seen != p4.QueuesPerPort {
		return limits, fmt.Errorf("switch %s (%s): the port shaper has %d of %d FIFOs", b.sw.Name, dev, seen, p4.QueuesPerPort)
	}
	return limits, nil
}

// setFIFOLimits sets the packet limit of each of dev's shaper FIFOs (queue
// q's FIFO is handle 2q: under class 1:1q, mininet/homatb_mn.py).
func (b *BMv2Stats) setFIFOLimits(ctx context.Context, dev string, limits [p4.QueuesPerPort]int) error {
	for q, l := range limits {
		if _, err := b.tc(ctx, "qdisc", "change", "dev", dev, "parent", "1:1"+strconv.Itoa(q),
			"handle", "2"+strconv.Itoa(q)+":", "pfifo", "limit", strconv.Itoa(l)); err != nil {
			return err
		}
	}
	return nil
}

// dropRxXDP attaches, to interface dev in network namespace ns, an XDP
// program that drops every frame, in generic mode (veth's native mode would
// need the peer set up for it). Closing the result detaches it; so does the
// process's end, since the attachment is a BPF link held by a descriptor.
func dropRxXDP(ns, dev string) (io.Closer, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "homatb_cut",
		Type: ebpf.XDP,
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 1), // XDP_DROP
			asm.Return(),
		},
		License: "GPL",
	})
	if err != nil {
		return nil, fmt.Errorf("load the XDP drop program: %w", err)
	}
	defer prog.Close() // the link keeps its own reference
	var l link.Link
	// The interface index means something only inside the namespace.
	err = nsenter.Do(ns, func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return fmt.Errorf("interface %s: %w", dev, err)
		}
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifi.Index, Flags: link.XDPGenericMode})
		return err
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}
