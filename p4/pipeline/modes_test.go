package pipeline

import (
	"encoding/binary"
	"testing"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/wire"
)

// homaFrame is ipv4Frame carrying a Homa packet of type typ with the given
// rank and flags byte, payload bytes after the IPv4 header. Package wire
// writes the common header (cut to payload bytes), so every test of the
// switch modes reads the layout the hosts send.
func homaFrame(tos byte, typ byte, rank uint32, flags byte, payload int) []byte {
	f := ipv4Frame(0x0a000002, tos, 64, payload)
	f[ethLen+9] = wire.IPProto
	binary.BigEndian.PutUint16(f[ipCsumOff:], 0)
	binary.BigEndian.PutUint16(f[ipCsumOff:], Checksum(f[ethLen:ethLen+ipv4Len]))
	copy(f[ethLen+ipv4Len:], wire.AppendHeaderOnly(nil, &wire.Common{SPort: 1, DPort: 2, Type: wire.Type(typ),
		SenderID: 42, Rank: rank, CommonFlags: flags}))
	return f
}

// uetFrame is ipv4Frame carrying a UDP datagram to port dport whose
// payload (payload bytes) starts with a UET PDS header of type typ.
func uetFrame(tos byte, dport uint16, typ wire.UETType, payload int) []byte {
	f := ipv4Frame(0x0a000002, tos, 64, wire.UDPHeaderLen+payload)
	f[ethLen+9] = ipProtoUDP
	binary.BigEndian.PutUint16(f[ipCsumOff:], 0)
	binary.BigEndian.PutUint16(f[ipCsumOff:], Checksum(f[ethLen:ethLen+ipv4Len]))
	u := f[ethLen+ipv4Len:]
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(wire.UDPHeaderLen+payload))
	if typ == wire.UETAckCC {
		copy(u[wire.UDPHeaderLen:], wire.AppendUETAck(nil, &wire.UETPDS{Type: typ}))
	} else {
		copy(u[wire.UDPHeaderLen:], wire.AppendUETRequest(nil, &wire.UETPDS{Type: typ}))
	}
	return f
}

// modeEntry is a port_mode entry for port.
func modeEntry(port uint64, action uint32, arg uint64) Entry {
	return Entry{Match: [MaxKeyFields]FieldMatch{{Value: port, Mask: FieldMask(9)}},
		Action: ActionCall{ID: action, Params: [MaxParams]uint64{arg}}}
}

func TestIngressPortMode(t *testing.T) {
	const data = dataplane.HomaTypeData
	withOptions := homaFrame(0, data, 7, 0, 1000)
	withOptions[ethLen] = 0x46 // IHL 6: the rank is not where tor.p4 looks
	tests := []struct {
		name  string
		entry *Entry // port_mode entry for port 2, nil: none
		frame []byte
		want  Verdict
	}{
		{"no entry: strict priority", nil, homaFrame(7<<5, data, 7, 0, 1000),
			Verdict{EgressPort: 2, Queue: 7}},
		{"strict_priority entry", ptr(modeEntry(2, p4.ActionStrictPriority, 0)), homaFrame(7<<5, data, 7, 0, 1000),
			Verdict{EgressPort: 2, Queue: 7}},
		{"entry for another port", ptr(modeEntry(3, p4.ActionRankOrder, 9000)), homaFrame(7<<5, data, 7, 0, 1000),
			Verdict{EgressPort: 2, Queue: 7}},
		{"rank_order reads the rank, queue 0", ptr(modeEntry(2, p4.ActionRankOrder, 9000)), homaFrame(7<<5, data, 12345, 0, 1000),
			Verdict{EgressPort: 2, Queue: 0, Mode: dataplane.ModeRankOrder, ModeArg: 9000, Rank: 12345}},
		{"rank_order: control packet's rank", ptr(modeEntry(2, p4.ActionRankOrder, 9000)), homaFrame(7<<5, 0x11, 0, 0, 40),
			Verdict{EgressPort: 2, Queue: 0, Mode: dataplane.ModeRankOrder, ModeArg: 9000, Rank: 0}},
		{"rank_order: not Homa is rank max", ptr(modeEntry(2, p4.ActionRankOrder, 9000)), ipv4Frame(0x0a000002, 0, 64, 100),
			Verdict{EgressPort: 2, Queue: 0, Mode: dataplane.ModeRankOrder, ModeArg: 9000, Rank: dataplane.RankMax}},
		{"rank_order: IP options is rank max", ptr(modeEntry(2, p4.ActionRankOrder, 9000)), withOptions,
			Verdict{EgressPort: 2, Queue: 0, Mode: dataplane.ModeRankOrder, ModeArg: 9000, Rank: dataplane.RankMax}},
		{"rank_order: short Homa is rank max", ptr(modeEntry(2, p4.ActionRankOrder, 9000)), homaFrame(0, data, 5, 0, 1000)[:50],
			Verdict{EgressPort: 2, Queue: 0, Mode: dataplane.ModeRankOrder, ModeArg: 9000, Rank: dataplane.RankMax}},
		{"trim_above: DATA may be trimmed", ptr(modeEntry(2, p4.ActionTrimAbove, 8)), homaFrame(0, data, 0, 0, 1000),
			Verdict{EgressPort: 2, Mode: dataplane.ModeTrimAbove, ModeArg: 8, Trim: dataplane.TrimHomaData}},
		{"trim_above: header-only DATA is not", ptr(modeEntry(2, p4.ActionTrimAbove, 8)), homaFrame(0, data, 0, 0, 56),
			Verdict{EgressPort: 2, Mode: dataplane.ModeTrimAbove, ModeArg: 8}},
		{"trim_above: control packet is not", ptr(modeEntry(2, p4.ActionTrimAbove, 8)), homaFrame(0, 0x11, 0, 0, 1000),
			Verdict{EgressPort: 2, Mode: dataplane.ModeTrimAbove, ModeArg: 8}},
		{"trim_above: not Homa is not", ptr(modeEntry(2, p4.ActionTrimAbove, 8)), ipv4Frame(0x0a000002, 0, 64, 1000),
			Verdict{EgressPort: 2, Mode: dataplane.ModeTrimAbove, ModeArg: 8}},
		{"trim_above: UET data may be trimmed", ptr(modeEntry(2, p4.ActionTrimAbove, 8)), uetFrame(0, wire.UETPort, wire.UETRUDReq, 1000),
			Verdict{EgressPort: 2, Mode: dataplane.ModeTrimAbove, ModeArg: 8, Trim: dataplane.TrimUETData}},
		{"trim_above: UET data with CC state too", ptr(modeEntry(2, p4.ActionTrimAbove, 8)), uetFrame(0, wire.UETPort, wire.UETRUDCCReq, 1000),
			Verdict{EgressPort: 2, Mode: dataplane.ModeTrimAbove, ModeArg: 8, Trim: dataplane.TrimUETData}},
		{"trim_above: UET ACK is not", ptr(modeEntry(2, p4.ActionTrimAbove, 8)), uetFrame(0, wire.UETPort, wire.UETAckCC, 1000),
			Verdict{EgressPort: 2, Mode: dataplane.ModeTrimAbove, ModeArg: 8}},
		{"trim_above: UDP to another port is not", ptr(modeEntry(2, p4.ActionTrimAbove, 8)), uetFrame(0, 4791, wire.UETRUDReq, 1000),
			Verdict{EgressPort: 2, Mode: dataplane.ModeTrimAbove, ModeArg: 8}},
		{"trim_above: trimmed UET stays in queue 7, whole", ptr(modeEntry(2, p4.ActionTrimAbove, 8)),
			uetFrame(dataplane.UETTrimmedDSCP<<2, wire.UETPort, wire.UETRUDReq, wire.UETTrimmedLen),
			Verdict{EgressPort: 2, Queue: 7, Mode: dataplane.ModeTrimAbove, ModeArg: 8}},
		{"trim_above: trimmed upstream goes to queue 7", ptr(modeEntry(2, p4.ActionTrimAbove, 8)), homaFrame(0, data, 0, dataplane.HomaFlagTrimmed, 56),
			Verdict{EgressPort: 2, Queue: 7, Mode: dataplane.ModeTrimAbove, ModeArg: 8}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := torContents()
			if tc.entry != nil {
				c[p4.TablePortMode] = TableContents{Entries: []Entry{*tc.entry}}
			}
			p := New()
			if err := p.Install(c); err != nil {
				t.Fatal(err)
			}
			v := Verdict{Drop: true, Rank: 99} // Ingress must overwrite all of it
			p.Ingress(tc.frame, 1, &v)
			if v != tc.want {
				t.Errorf("verdict %+v, want %+v", v, tc.want)
			}
			idx := p4.QueueIndex(tc.want.EgressPort, tc.want.Queue)
			if pkts, _, _ := p.Counter(p4.CounterIngressQueue, int(idx)); pkts != 1 {
				t.Errorf("ingress counter of (port %d, queue %d) = %d, want 1", tc.want.EgressPort, tc.want.Queue, pkts)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestInstallPortModeChecksActions(t *testing.T) {
	c := torContents()
	c[p4.TablePortMode] = TableContents{Entries: []Entry{modeEntry(2, p4.ActionSetQueue, 1)}}
	if err := New().Install(c); err == nil {
		t.Error("port_mode accepted set_queue")
	}
	if a, ok := DefaultAction(p4.TablePortMode); !ok || a.ID != p4.ActionStrictPriority {
		t.Errorf("port_mode default %+v (ok %v), want strict_priority", a, ok)
	}
}

// Ingress in either switch mode does not allocate either.
func TestPortModeAllocs(t *testing.T) {
	for _, e := range []Entry{modeEntry(2, p4.ActionRankOrder, 9000), modeEntry(2, p4.ActionTrimAbove, 8)} {
		c := torContents()
		c[p4.TablePortMode] = TableContents{Entries: []Entry{e}}
		p := New()
		if err := p.Install(c); err != nil {
			t.Fatal(err)
		}
		f := homaFrame(0, dataplane.HomaTypeData, 1, 0, 1000)
		var v Verdict
		if n := testing.AllocsPerRun(1000, func() { f[ipTTLOff] = 64; p.Ingress(f, 1, &v) }); n != 0 {
			t.Errorf("action %#08x: %.1f allocations per packet", e.Action.ID, n)
		}
	}
}

// A default action other than strict_priority applies to every port, so
// the lookup is not skipped then.
func TestPortModeDefaultAction(t *testing.T) {
	c := torContents()
	c[p4.TablePortMode] = TableContents{Default: &ActionCall{ID: p4.ActionTrimAbove, Params: [MaxParams]uint64{3}}}
	p := New()
	if err := p.Install(c); err != nil {
		t.Fatal(err)
	}
	var v Verdict
	p.Ingress(homaFrame(0, dataplane.HomaTypeData, 0, 0, 1000), 1, &v)
	if v.Mode != dataplane.ModeTrimAbove || v.ModeArg != 3 || v.Trim != dataplane.TrimHomaData {
		t.Errorf("verdict %+v, want trim_above 3 on a Homa DATA frame", v)
	}
	// Back to the P4 default: strict priority again.
	if err := p.Install(torContents()); err != nil {
		t.Fatal(err)
	}
	p.Ingress(homaFrame(0, dataplane.HomaTypeData, 0, 0, 1000), 1, &v)
	if v.Mode != dataplane.ModeStrictPriority || v.Trim != dataplane.TrimNone {
		t.Errorf("verdict %+v after reinstall, want strict priority", v)
	}
}
