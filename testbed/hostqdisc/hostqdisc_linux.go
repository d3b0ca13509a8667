//go:build linux

package hostqdisc

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Filter priorities: Homa's match first, then the one that takes the rest.
const (
	homaFilterPrio = 1
	restFilterPrio = 2
)

// shaper is the link's htb as Mininet made it: the root and the one class
// that shapes to the link rate.
type shaper struct {
	link  netlink.Link
	root  uint32 // the htb's handle (major:0)
	class uint32 // the link's class (major:1)
	// divided reports whether the plan's classes are there.
	divided bool
}

// findShaper reads ifName's root htb and its link class.
func findShaper(ifName string) (shaper, error) {
	link, err := netlink.LinkByName(ifName)
	if err != nil {
		return shaper{}, fmt.Errorf("hostqdisc: %s: %w", ifName, err)
	}
	qs, err := netlink.QdiscList(link)
	if err != nil {
		return shaper{}, fmt.Errorf("hostqdisc: qdiscs of %s: %w", ifName, err)
	}
	s := shaper{link: link}
	for _, q := range qs {
		if q.Attrs().Parent != netlink.HANDLE_ROOT {
			continue
		}
		if q.Type() != "htb" {
			return shaper{}, fmt.Errorf("hostqdisc: the root qdisc of %s is %s: expected the htb shaper (link.shaper: htb)", ifName, q.Type())
		}
		s.root = q.Attrs().Handle
	}
	if s.root == 0 {
		return shaper{}, fmt.Errorf("hostqdisc: %s has no root qdisc: expected the link's htb shaper", ifName)
	}
	cs, err := netlink.ClassList(link, 0)
	if err != nil {
		return shaper{}, fmt.Errorf("hostqdisc: classes of %s: %w", ifName, err)
	}
	for _, c := range cs {
		a := c.Attrs()
		// htb reports its top classes' parent as the root (TC_H_ROOT).
		top := a.Parent == netlink.HANDLE_ROOT && a.Handle>>16 == s.root>>16
		switch {
		case top && s.class != 0:
			return shaper{}, fmt.Errorf("hostqdisc: %s's htb has classes %x and %x at its root: expected one, the link's", ifName, s.class, a.Handle)
		case top:
			s.class = a.Handle
		case a.Handle == s.minor(HomaMinor):
			s.divided = true
		}
	}
	if s.class == 0 {
		return shaper{}, fmt.Errorf("hostqdisc: %s's htb has no class: expected the link's", ifName)
	}
	return s, nil
}

func (s shaper) minor(m uint16) uint32 { return netlink.MakeHandle(uint16(s.root>>16), m) }

// Apply divides the link of interface ifName (in the calling thread's
// namespace) as p says, or with p nil takes the division away, leaving
// the link's one class as Mininet made it. It may be called again with
// the same or another plan. The interface's root must be an htb with one
// class, the link's (Mininet's TCIntf).
func Apply(ifName string, p *Plan) error {
	s, err := findShaper(ifName)
	if err != nil {
		return err
	}
	// The filters go first: while they stand, the classes they name must.
	if err := s.delFilters(); err != nil {
		return err
	}
	if p == nil {
		if !s.divided {
			return nil
		}
		var errs []error
		for _, m := range []uint16{HomaMinor, TCPMinor} {
			c := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: s.link.Attrs().Index, Handle: s.minor(m), Parent: s.class}, netlink.HtbClassAttrs{})
			if err := netlink.ClassDel(c); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("hostqdisc: delete class %x of %s: %w", s.minor(m), ifName, err))
			}
		}
		return errors.Join(errs...)
	}
	for _, c := range p.Classes() {
		hc := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: s.link.Attrs().Index, Handle: s.minor(c.Minor), Parent: s.class},
			netlink.HtbClassAttrs{Rate: c.RateBps, Ceil: c.CeilBps, Buffer: c.BurstBytes, Cbuffer: c.BurstBytes, Prio: c.Prio, Quantum: c.QuantumBytes})
		if err := netlink.ClassReplace(hc); err != nil {
			return fmt.Errorf("hostqdisc: htb class %x on %s (sch_htb): %w", s.minor(c.Minor), ifName, err)
		}
	}
	homa := &netlink.U32{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: s.link.Attrs().Index, Parent: s.root, Priority: homaFilterPrio, Protocol: unix.ETH_P_IP},
		ClassId:     s.minor(HomaMinor),
		// The IP header's third word is TTL, protocol and checksum.
		Sel: &netlink.TcU32Sel{Flags: netlink.TC_U32_TERMINAL, Keys: []netlink.TcU32Key{{Mask: 0x00ff0000, Val: HomaProtocol << 16, Off: 8}}},
	}
	rest := &netlink.U32{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: s.link.Attrs().Index, Parent: s.root, Priority: restFilterPrio, Protocol: unix.ETH_P_ALL},
		ClassId:     s.minor(TCPMinor), // Sel nil: every packet
	}
	for _, f := range []*netlink.U32{homa, rest} {
		if err := netlink.FilterAdd(f); err != nil {
			return fmt.Errorf("hostqdisc: u32 filter on %s (cls_u32): %w", ifName, err)
		}
	}
	return nil
}

// delFilters removes the filters at the root htb: the plan's, the only
// ones a host's link has.
func (s shaper) delFilters() error {
	fs, err := netlink.FilterList(s.link, s.root)
	if err != nil {
		return fmt.Errorf("hostqdisc: filters of %s: %w", s.link.Attrs().Name, err)
	}
	for _, f := range fs {
		if err := netlink.FilterDel(f); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("hostqdisc: delete filter of %s: %w", s.link.Attrs().Name, err)
		}
	}
	return nil
}

// Read returns the counters of ifName's two classes; it fails when the
// link is not divided.
func Read(ifName string) (Stats, error) {
	s, err := findShaper(ifName)
	if err != nil {
		return Stats{}, err
	}
	if !s.divided {
		return Stats{}, fmt.Errorf("hostqdisc: %s's link is not divided (host_qdisc: none)", ifName)
	}
	cs, err := netlink.ClassList(s.link, s.root)
	if err != nil {
		return Stats{}, fmt.Errorf("hostqdisc: classes of %s: %w", ifName, err)
	}
	var st Stats
	for _, c := range cs {
		var into *Counters
		switch c.Attrs().Handle {
		case s.minor(HomaMinor):
			into = &st.Homa
		case s.minor(TCPMinor):
			into = &st.TCP
		default:
			continue
		}
		if cs := c.Attrs().Statistics; cs != nil && cs.Basic != nil && cs.Queue != nil {
			*into = Counters{Bytes: cs.Basic.Bytes, Packets: uint64(cs.Basic.Packets), Drops: uint64(cs.Queue.Drops), Backlog: cs.Queue.Qlen}
		}
	}
	return st, nil
}

// Probe builds the division on a dummy link in a namespace of its own,
// which ends with it, and says what this kernel lacks for it: htb
// (sch_htb) or u32 (cls_u32).
func Probe() error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends in its namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- fmt.Errorf("hostqdisc: a namespace to probe in: %w", err)
			return
		}
		ch <- probeHere()
	}()
	return <-ch
}

func probeHere() error {
	// A veth end, as a host's link is (this kernel may have no dummy).
	d := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "hqprobe0"}, PeerName: "hqprobe1"}
	if err := netlink.LinkAdd(d); err != nil {
		return fmt.Errorf("hostqdisc: probe link: %w", err)
	}
	if err := netlink.LinkSetUp(d); err != nil {
		return fmt.Errorf("hostqdisc: probe link up: %w", err)
	}
	idx := d.Attrs().Index
	root := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(5, 0), Parent: netlink.HANDLE_ROOT})
	root.Defcls = 1
	if err := netlink.QdiscAdd(root); err != nil {
		return fmt.Errorf("no htb qdisc (sch_htb): %w", err)
	}
	c := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(5, 1), Parent: netlink.MakeHandle(5, 0)},
		netlink.HtbClassAttrs{Rate: 100_000_000, Buffer: Burst, Cbuffer: Burst})
	if err := netlink.ClassAdd(c); err != nil {
		return fmt.Errorf("no htb class (sch_htb): %w", err)
	}
	p, err := NewPlan(100_000_000, 1500)
	if err != nil {
		return err
	}
	return Apply("hqprobe0", &p)
}
