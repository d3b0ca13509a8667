//go:build linux

package linkpause

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// bucket is a token bucket filter's setting: its rate in bytes a second,
// its size (the burst) and its queue's limit in bytes.
type bucket struct {
	rate         uint64
	burst, limit uint32
}

// tbfSetter changes one tbf qdisc over a netlink socket of its own,
// opened in the namespace it was made in, so that it may run on any
// thread (a timer's). It writes the message tc writes: the rate with its
// Ethernet link layer and rate table, and the burst in bytes, from which
// the kernel sizes the largest packet the bucket admits (without them it
// sizes it below one frame and drops every frame).
type tbfSetter struct {
	sock           *nl.SocketHandle
	ifindex        int32
	handle, parent uint32
	frame          uint32
}

func newTBFSetter(q netlink.Tbf, frame uint32) (*tbfSetter, error) {
	s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("linkpause: netlink socket: %w", err)
	}
	a := q.Attrs()
	return &tbfSetter{sock: &nl.SocketHandle{Socket: s}, ifindex: int32(a.LinkIndex), handle: a.Handle, parent: a.Parent, frame: frame}, nil
}

func (t *tbfSetter) set(b bucket) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_ACK)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: t.sock}
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: t.ifindex, Handle: t.handle, Parent: t.parent})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("tbf")))
	opt := nl.TcTbfQopt{Limit: b.limit, Buffer: netlink.Xmittime(b.rate, b.burst)}
	opt.Rate.Rate = uint32(min(b.rate, 1<<32-1))
	var rtab [256]uint32
	if netlink.CalcRtable(&opt.Rate, rtab[:], -1, t.frame, nl.LINKLAYER_ETHERNET) < 0 {
		return fmt.Errorf("linkpause: rate table of %d B/s", b.rate)
	}
	options := nl.NewRtAttr(nl.TCA_OPTIONS, nil)
	options.AddRtAttr(nl.TCA_TBF_PARMS, opt.Serialize())
	options.AddRtAttr(nl.TCA_TBF_BURST, nl.Uint32Attr(b.burst))
	if b.rate >= 1<<32 {
		options.AddRtAttr(nl.TCA_TBF_RATE64, nl.Uint64Attr(b.rate))
	}
	options.AddRtAttr(nl.TCA_TBF_RTAB, netlink.SerializeRtab(rtab))
	req.AddData(options)
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return fmt.Errorf("linkpause: change tbf to %d B/s, burst %d B: %w", b.rate, b.burst, err)
	}
	return nil
}

func (t *tbfSetter) close() { t.sock.Close() }
