package dissector

import (
	"encoding/xml"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/wire"
)

// uetCase is a UET packet package wire encodes and every uet.* field the
// dissector must show for it, with its value as package wire's structs
// hold it.
type uetCase struct {
	name string
	b    []byte
	want map[string]uint64
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// pdsWant is what the dissector shows of h's PDS header.
func pdsWant(h *wire.UETPDS, flags uint64) map[string]uint64 {
	return map[string]uint64{"uet.pds.type": uint64(h.Type), "uet.pds.next_hdr": uint64(h.Next), "uet.pds.flags": flags,
		"uet.pds.spdcid": uint64(h.SPDCID)}
}

func uetCases() []uetCase {
	var cs []uetCase
	ses := wire.SESRequest{Opcode: wire.SESOpSend, Version: 1, Flags: wire.SESFlagSOM, MsgID: 77, RIGeneration: 3, JobID: 0x010203,
		PIDOnFEP: 0x123, ResourceIndex: 0x456, BufferOffset: 1416, Initiator: 9, MatchBits: 0x1234567890, HeaderData: 0x8001_0063, RequestLength: 100000}
	for _, syn := range []bool{false, true} {
		h := wire.UETPDS{Type: wire.UETRUDReq, Next: wire.UETNextRequestStd, Retrans: !syn, AckReq: true, Syn: syn, ClearPSNOffset: 12,
			PSN: 0xfffffff0, SPDCID: 5, DPDCID: 6, SynPSNOffset: 0x0abc}
		if syn { // and with RCCC's state
			h.Type, h.CCCID, h.CreditTarget = wire.UETRUDCCReq, 0x21, 0x123456
		}
		b := wire.AppendUETRequest(nil, &h)
		b = wire.AppendSESRequest(b, &ses)
		b = append(b, make([]byte, 40)...)
		w := pdsWant(&h, b2u(h.Retrans)<<4|b2u(h.AckReq)<<3|b2u(h.Syn)<<2)
		w["uet.pds.retrans"], w["uet.pds.ackreq"], w["uet.pds.syn"] = b2u(h.Retrans), b2u(h.AckReq), b2u(h.Syn)
		w["uet.req.clear_psn_offset"], w["uet.pds.psn"] = uint64(h.ClearPSNOffset), uint64(h.PSN)
		if syn {
			w["uet.req.syn_psn_offset"] = uint64(h.SynPSNOffset)
			w["uet.req.ccc_id"], w["uet.req.credit_target"] = uint64(h.CCCID), uint64(h.CreditTarget)
		} else {
			w["uet.pds.dpdcid"] = uint64(h.DPDCID)
		}
		for k, v := range map[string]uint64{"uet.ses.opcode": uint64(ses.Opcode), "uet.ses.version": uint64(ses.Version),
			"uet.ses.flags": uint64(ses.Flags), "uet.ses.som": 1, "uet.ses.eom": 0, "uet.ses.msg_id": uint64(ses.MsgID),
			"uet.ses.ri_generation": uint64(ses.RIGeneration), "uet.ses.job_id": uint64(ses.JobID), "uet.ses.pid_on_fep": uint64(ses.PIDOnFEP),
			"uet.ses.resource_index": uint64(ses.ResourceIndex), "uet.ses.buffer_offset": ses.BufferOffset,
			"uet.ses.initiator": uint64(ses.Initiator), "uet.ses.match_bits": ses.MatchBits, "uet.ses.header_data": ses.HeaderData,
			"uet.ses.request_length": uint64(ses.RequestLength), "uet.payload_length": 40} {
			w[k] = v
		}
		cs = append(cs, uetCase{"request/syn=" + strconv.FormatBool(syn), b, w})
	}
	for _, ct := range []uint8{wire.UETCCNSCC, wire.UETCCCredit} {
		h := wire.UETPDS{Type: wire.UETAckCC, ECN: true, Probe: true, AckRequest: 2, AckPSNOffset: 3, PSN: 0xdeadbeef, SPDCID: 7, DPDCID: 8,
			CCType: ct, MPR: 16, SACKPSNOffset: 1, SACKBitmap: 0x8000_0000_0000_0005, ServiceTime: 0x1234, RcvdBytes: 0xabcdef, Credit: 0x654321, OOOCount: 42}
		w := pdsWant(&h, 1<<5|1<<3|2<<1)
		w["uet.pds.ecn_marked"], w["uet.pds.retrans"], w["uet.pds.probe"], w["uet.pds.ack_request"] = 1, 0, 1, 2
		for k, v := range map[string]uint64{"uet.ack.psn_offset": uint64(h.AckPSNOffset), "uet.ack.cack_psn": uint64(h.PSN),
			"uet.pds.dpdcid": uint64(h.DPDCID), "uet.ack.cc_type": uint64(h.CCType), "uet.ack.mpr": uint64(h.MPR),
			"uet.ack.sack_psn_offset": uint64(h.SACKPSNOffset), "uet.ack.sack_bitmap": h.SACKBitmap, "uet.ack.ooo_count": uint64(h.OOOCount)} {
			w[k] = v
		}
		if ct == wire.UETCCCredit {
			w["uet.ack.credit"] = uint64(h.Credit)
		} else {
			w["uet.ack.service_time"], w["uet.ack.rcvd_bytes"] = uint64(h.ServiceTime), uint64(h.RcvdBytes)
		}
		cs = append(cs, uetCase{"ack_cc/" + strconv.Itoa(int(ct)), wire.AppendUETAck(nil, &h), w})
	}
	n := wire.UETPDS{Type: wire.UETNack, ECN: true, NackType: 1, NackCode: wire.UETNackTrimmed, VendorCode: 0x42, PSN: 99, SPDCID: 3, DPDCID: 4, Payload: 0x11223344}
	nw := pdsWant(&n, 1<<5|1<<3)
	for k, v := range map[string]uint64{"uet.pds.ecn_marked": 1, "uet.pds.retrans": 0, "uet.pds.nack_type": 1, "uet.nack.code": uint64(n.NackCode),
		"uet.nack.vendor_code": uint64(n.VendorCode), "uet.pds.psn": uint64(n.PSN), "uet.pds.dpdcid": uint64(n.DPDCID), "uet.pds.payload": uint64(n.Payload)} {
		nw[k] = v
	}
	cs = append(cs, uetCase{"nack", wire.AppendUETNack(nil, &n), nw})
	c := wire.UETPDS{Type: wire.UETControl, Next: wire.UETCtlCredit, AckReq: true, AckPSNOffset: 0x0bad, PSN: 1234, SPDCID: 9, DPDCID: 10, Payload: 0x55667788}
	cw := pdsWant(&c, 1<<3)
	for k, v := range map[string]uint64{"uet.pds.retrans": 0, "uet.pds.ackreq": 1, "uet.pds.syn": 0, "uet.ack.psn_offset": uint64(c.AckPSNOffset),
		"uet.pds.psn": uint64(c.PSN), "uet.pds.dpdcid": uint64(c.DPDCID), "uet.pds.payload": uint64(c.Payload)} {
		cw[k] = v
	}
	cs = append(cs, uetCase{"control", wire.AppendUETControl(nil, &c), cw})
	return cs
}

// TestUETFieldsMatchWire runs tshark with the dissector over a packet of
// each UET header package wire encodes and checks every uet.* field it
// shows against the struct's value, and that it shows every field
// expected (one per header field).
func TestUETFieldsMatchWire(t *testing.T) {
	cs := uetCases()
	frames := make([]frame, len(cs))
	for i, c := range cs {
		frames[i] = frame{src: [4]byte{10, 0, 0, 1}, dst: [4]byte{10, 0, 0, 2}, b: c.b, ts: time.Unix(1, int64(i)), udpSport: uint16(0xc000 + i)}
	}
	var doc pdml
	if err := xml.Unmarshal(tshark(t, writeCapture(t, t.TempDir(), frames), "-T", "pdml"), &doc); err != nil {
		t.Fatalf("PDML: %v", err)
	}
	if len(doc.Packets) != len(cs) {
		t.Fatalf("tshark shows %d packets, want %d", len(doc.Packets), len(cs))
	}
	var flat func(fs []field, out map[string]string) map[string]string
	flat = func(fs []field, out map[string]string) map[string]string {
		for _, f := range fs {
			if strings.HasPrefix(f.Name, "uet.") {
				if _, dup := out[f.Name]; dup {
					t.Errorf("%s shown twice", f.Name)
				}
				out[f.Name] = f.Show
			}
			flat(f.Fields, out)
		}
		return out
	}
	for i, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for _, pr := range doc.Packets[i].Protos {
				if pr.Name == "uet" {
					flat(pr.Fields, got)
				}
			}
			for name, want := range c.want {
				s, ok := got[name]
				if !ok {
					t.Errorf("%s not shown", name)
					continue
				}
				switch s {
				case "True":
					s = "1"
				case "False":
					s = "0"
				}
				v, err := strconv.ParseUint(s, 0, 64)
				if err != nil || v != want {
					t.Errorf("%s shows %q, want %d (%#x)", name, s, want, want)
				}
			}
			for name := range got {
				if _, ok := c.want[name]; !ok {
					t.Errorf("%s shown (%s) but not expected", name, got[name])
				}
			}
		})
	}
}
