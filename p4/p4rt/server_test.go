package p4rt

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/pipeline"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func TestCapabilities(t *testing.T) {
	h := newHarness(t)
	r, err := h.client.Capabilities(ctx(t), &p4v1.CapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetP4RuntimeApiVersion() != "1.4.1" {
		t.Errorf("version %q, want 1.4.1", r.GetP4RuntimeApiVersion())
	}
}

func TestNoPipelineUntilConfigured(t *testing.T) {
	h := newHarness(t)
	ctl := h.connect(eid(1))
	ctl.expect(codes.OK)
	err := h.write(ctl.id, update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{2})))
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Write before config: %v, want FAILED_PRECONDITION", err)
	}
	_, err = h.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Read before config: %v, want FAILED_PRECONDITION", err)
	}
	g, err := h.client.GetForwardingPipelineConfig(ctx(t), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: testDevice})
	if err != nil || g.GetConfig() != nil {
		t.Errorf("Get before config: %v, %v; want OK with the config unset", g, err)
	}
	var v pipeline.Verdict
	h.srv.Pipeline().Ingress(testFrame(), 1, &v)
	if !v.Drop {
		t.Error("unconfigured pipeline forwarded a packet")
	}
}

// testFrame is an IPv4 packet to 10.0.0.2 with TOS CS7.
func testFrame() []byte {
	f := make([]byte, 60)
	f[12], f[13] = 0x08, 0x00
	f[14], f[15], f[22] = 0x45, 7<<5, 64
	copy(f[30:34], []byte{10, 0, 0, 2})
	return f
}

// TestErrorCodes triggers every error code the server returns, over gRPC.
func TestErrorCodes(t *testing.T) {
	mismatched := func(t *testing.T) *p4v1.ForwardingPipelineConfig {
		c := torConfig(t)
		c.P4Info.Tables[0].MatchFields[0].Bitwidth = 128
		return c
	}
	set := func(h *harness, id *p4v1.Uint128, a p4v1.SetForwardingPipelineConfigRequest_Action, c *p4v1.ForwardingPipelineConfig) error {
		_, err := h.client.SetForwardingPipelineConfig(ctx(h.t), &p4v1.SetForwardingPipelineConfigRequest{
			DeviceId: testDevice, ElectionId: id, Action: a, Config: c})
		return err
	}
	dscp := func(v []byte, q []byte) *p4v1.TableEntry {
		return &p4v1.TableEntry{TableId: p4.TableDSCPToQueue, Match: []*p4v1.FieldMatch{exact(1, v)}, Action: action(p4.ActionSetQueue, q)}
	}
	tests := []struct {
		name string
		run  func(h *harness, ctl *controller) error
		want codes.Code
		msg  string
	}{
		{"write from a client that never arbitrated", func(h *harness, _ *controller) error {
			return h.write(eid(3), update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{2})))
		}, codes.PermissionDenied, "not primary"},
		{"write without election id", func(h *harness, _ *controller) error {
			return h.write(nil, update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{2})))
		}, codes.PermissionDenied, "not primary"},
		{"set pipeline from a backup", func(h *harness, _ *controller) error {
			b := h.connect(eid(5))
			b.expect(codes.AlreadyExists)
			return set(h, eid(5), p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, torConfig(h.t))
		}, codes.PermissionDenied, "not primary"},
		{"unknown device", func(h *harness, ctl *controller) error {
			_, err := h.client.Write(ctx(h.t), &p4v1.WriteRequest{DeviceId: 99, ElectionId: ctl.id})
			return err
		}, codes.NotFound, "device_id 99"},
		{"P4Info mismatch names the difference", func(h *harness, ctl *controller) error {
			return set(h, ctl.id, p4v1.SetForwardingPipelineConfigRequest_VERIFY, mismatched(h.t))
		}, codes.InvalidArgument, "hdr.ipv4.dstAddr (id 1): bitwidth 128, this target runs 32"},
		{"VERIFY without config", func(h *harness, ctl *controller) error {
			return set(h, ctl.id, p4v1.SetForwardingPipelineConfigRequest_VERIFY, nil)
		}, codes.InvalidArgument, "P4Info required"},
		{"device config not BMv2 JSON", func(h *harness, ctl *controller) error {
			c := torConfig(h.t)
			c.P4DeviceConfig = []byte{0xff, 0x01}
			return set(h, ctl.id, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, c)
		}, codes.InvalidArgument, "neither BMv2 JSON"},
		{"COMMIT without a saved config", func(h *harness, ctl *controller) error {
			return set(h, ctl.id, p4v1.SetForwardingPipelineConfigRequest_COMMIT, nil)
		}, codes.NotFound, "VERIFY_AND_SAVE"},
		{"COMMIT with a config", func(h *harness, ctl *controller) error {
			return set(h, ctl.id, p4v1.SetForwardingPipelineConfigRequest_COMMIT, torConfig(h.t))
		}, codes.InvalidArgument, "COMMIT takes no config"},
		{"RECONCILE_AND_COMMIT", func(h *harness, ctl *controller) error {
			return set(h, ctl.id, p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT, torConfig(h.t))
		}, codes.Unimplemented, "RECONCILE_AND_COMMIT"},
		{"action UNSPECIFIED", func(h *harness, ctl *controller) error {
			return set(h, ctl.id, p4v1.SetForwardingPipelineConfigRequest_UNSPECIFIED, torConfig(h.t))
		}, codes.InvalidArgument, "unsupported action"},
		{"atomicity ROLLBACK_ON_ERROR", func(h *harness, ctl *controller) error {
			_, err := h.client.Write(ctx(h.t), &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: ctl.id,
				Atomicity: p4v1.WriteRequest_ROLLBACK_ON_ERROR, Updates: []*p4v1.Update{update(p4v1.Update_INSERT, dscp([]byte{8}, []byte{1}))}})
			return err
		}, codes.Unimplemented, "CONTINUE_ON_ERROR"},
		{"duplicate INSERT", func(h *harness, ctl *controller) error {
			if err := h.write(ctl.id, update(p4v1.Update_INSERT, dscp([]byte{8}, []byte{1}))); err != nil {
				return err
			}
			return h.write(ctl.id, update(p4v1.Update_INSERT, dscp([]byte{0, 8}, []byte{1})))
		}, codes.AlreadyExists, "use MODIFY"},
		{"MODIFY of a missing entry", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_MODIFY, dscp([]byte{8}, []byte{1})))
		}, codes.NotFound, "no such entry"},
		{"DELETE of a missing entry", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_DELETE, dscp([]byte{8}, nil)))
		}, codes.NotFound, "no such entry"},
		{"INSERT of the default entry", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: p4.TableIPv4LPM, IsDefaultAction: true, Action: action(p4.ActionDrop)}))
		}, codes.InvalidArgument, "default entry can only be modified"},
		{"DELETE of the default entry", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_DELETE, &p4v1.TableEntry{TableId: p4.TableIPv4LPM, IsDefaultAction: true}))
		}, codes.InvalidArgument, "default entry can only be modified"},
		{"LPM bits beyond the prefix", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 24, []byte{2})))
		}, codes.InvalidArgument, "bits set beyond prefix length 24"},
		{"LPM prefix length 0", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, route([]byte{0}, 0, []byte{2})))
		}, codes.InvalidArgument, "prefix length 0"},
		{"LPM prefix longer than the field", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 33, []byte{2})))
		}, codes.InvalidArgument, "prefix length 33"},
		{"empty match bytestring", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, dscp([]byte{}, []byte{1})))
		}, codes.OutOfRange, "empty bytestring"},
		{"empty param bytestring", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, dscp([]byte{8}, []byte{})))
		}, codes.OutOfRange, "empty bytestring"},
		{"oversized match value", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, dscp([]byte{0x40}, []byte{1})))
		}, codes.OutOfRange, "needs 7 bits, field is 6 bits"},
		{"oversized padded param", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{0, 0x02, 0x00})))
		}, codes.OutOfRange, "needs 10 bits, field is 9 bits"},
		{"missing exact field", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: p4.TableDSCPToQueue, Action: action(p4.ActionSetQueue, []byte{1})}))
		}, codes.InvalidArgument, "exact field hdr.ipv4.dscp (id 1) missing"},
		{"priority on an exact table", func(h *harness, ctl *controller) error {
			e := dscp([]byte{8}, []byte{1})
			e.Priority = 5
			return h.write(ctl.id, update(p4v1.Update_INSERT, e))
		}, codes.InvalidArgument, "priority must be 0"},
		{"action not in the table", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: p4.TableDSCPToQueue,
				Match: []*p4v1.FieldMatch{exact(1, []byte{8})}, Action: action(p4.ActionDrop)}))
		}, codes.InvalidArgument, "not an action of this table"},
		{"missing action param", func(h *harness, ctl *controller) error {
			e := route([]byte{10, 0, 0, 2}, 32, []byte{2})
			e.Action = action(p4.ActionIPv4Forward, []byte{2})
			return h.write(ctl.id, update(p4v1.Update_INSERT, e))
		}, codes.InvalidArgument, "param dst_mac (id 2) missing"},
		{"unknown table", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, update(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: 0x02000077}))
		}, codes.NotFound, "table id 0x02000077 not in the P4Info"},
		{"table full", func(h *harness, ctl *controller) error {
			var ups []*p4v1.Update
			for i := 0; i <= 1024; i++ {
				ups = append(ups, update(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: p4.TableARPProxy,
					Match: []*p4v1.FieldMatch{exact(1, []byte{10, 1, byte(i >> 8), byte(i)})}, Action: action(p4.ActionARPReply, []byte{2, 0, 0, 0, 0, 9})}))
			}
			return h.write(ctl.id, ups...)
		}, codes.ResourceExhausted, "table full (1024 entries)"},
		{"counter INSERT", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{
				CounterEntry: &p4v1.CounterEntry{CounterId: p4.CounterIngressQueue, Index: &p4v1.Index{Index: 1}}}}})
		}, codes.InvalidArgument, "only take MODIFY"},
		{"counter index beyond size", func(h *harness, ctl *controller) error {
			return h.write(ctl.id, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{
				CounterEntry: &p4v1.CounterEntry{CounterId: p4.CounterIngressQueue, Index: &p4v1.Index{Index: 512}, Data: &p4v1.CounterData{}}}}})
		}, codes.OutOfRange, "index 512 beyond size 512"},
		{"negative register index read", func(h *harness, _ *controller) error {
			_, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
				RegisterId: p4.RegisterQueuePeak, Index: &p4v1.Index{Index: -1}}}})
			return err
		}, codes.InvalidArgument, "negative index -1"},
		{"read of an unset entity", func(h *harness, _ *controller) error {
			_, err := h.read(&p4v1.Entity{})
			return err
		}, codes.InvalidArgument, "entity not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ctl := h.primary()
			got, msg := effective(t, tc.run(h, ctl))
			if got != tc.want {
				t.Fatalf("code %v (%q), want %v", got, msg, tc.want)
			}
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q does not mention %q", msg, tc.msg)
			}
		})
	}
}

// effective is the code and message a request failed with: for a batch
// (UNKNOWN with p4.v1.Error details) those of the first failed item, which
// must be the only one.
func effective(t *testing.T, err error) (codes.Code, string) {
	t.Helper()
	if status.Code(err) != codes.Unknown {
		return status.Code(err), status.Convert(err).Message()
	}
	var failed []*p4v1.Error
	for _, d := range details(t, err) {
		if codes.Code(d.GetCanonicalCode()) != codes.OK {
			failed = append(failed, d)
		}
	}
	if len(failed) != 1 {
		t.Fatalf("batch error %v has %d failed items, want 1", err, len(failed))
	}
	return codes.Code(failed[0].GetCanonicalCode()), failed[0].GetMessage()
}

// TestWriteErrorDetails checks the spec's batch error format: UNKNOWN with
// exactly one p4.v1.Error per update, OK for the ones that worked.
func TestWriteErrorDetails(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	good := update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{2}))
	dup := update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{3}))
	bad := update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 3}, 31, []byte{2}))
	good2 := update(p4v1.Update_INSERT, route([]byte{10, 0, 1, 0}, 24, []byte{4}))
	err := h.write(ctl.id, good, dup, bad, good2)
	if status.Code(err) != codes.Unknown {
		t.Fatalf("batch error %v, want UNKNOWN", err)
	}
	d := details(t, err)
	want := []codes.Code{codes.OK, codes.AlreadyExists, codes.InvalidArgument, codes.OK}
	if len(d) != len(want) {
		t.Fatalf("%d details, want %d", len(d), len(want))
	}
	for i, w := range want {
		if got := codes.Code(d[i].GetCanonicalCode()); got != w {
			t.Errorf("update %d: %v (%q), want %v", i, got, d[i].GetMessage(), w)
		}
		if w == codes.OK && (d[i].GetMessage() != "" || d[i].GetSpace() != "") {
			t.Errorf("update %d: OK error carries %q/%q", i, d[i].GetMessage(), d[i].GetSpace())
		}
	}
	// CONTINUE_ON_ERROR: both good updates were applied.
	got, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4.TableIPv4LPM}}})
	if err != nil || len(got) != 2 {
		t.Fatalf("read %d entries (%v), want the 2 good ones", len(got), err)
	}
}

func TestCanonicalRoundTripAndForwarding(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	// Padded input (full field width, as p4runtime_lib sends) is accepted.
	e := route([]byte{0, 10, 0, 0, 2}, 32, []byte{0, 0, 2})
	e.Action.GetAction().Params[1].Value = []byte{0, 0, 2, 0, 0, 0, 0, 2}
	q := &p4v1.TableEntry{TableId: p4.TableDSCPToQueue, Match: []*p4v1.FieldMatch{exact(1, []byte{0, 56})}, Action: action(p4.ActionSetQueue, []byte{0, 7})}
	if err := h.write(ctl.id, update(p4v1.Update_INSERT, e), update(p4v1.Update_INSERT, q)); err != nil {
		t.Fatal(err)
	}
	got, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4.TableIPv4LPM}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("read: %v, %d entries", err, len(got))
	}
	want := route([]byte{10, 0, 0, 2}, 32, []byte{2})
	if !proto.Equal(got[0].GetTableEntry(), want) {
		t.Errorf("read back %v, want canonical %v", got[0].GetTableEntry(), want)
	}
	var v pipeline.Verdict
	h.srv.Pipeline().Ingress(testFrame(), 1, &v)
	if v.Drop || v.EgressPort != 2 || v.Queue != 7 {
		t.Errorf("verdict %+v, want port 2 queue 7", v)
	}
	// DELETE takes only the key; the route goes away.
	if err := h.write(ctl.id, update(p4v1.Update_DELETE, &p4v1.TableEntry{TableId: p4.TableIPv4LPM, Match: want.Match})); err != nil {
		t.Fatal(err)
	}
	h.srv.Pipeline().Ingress(testFrame(), 1, &v)
	if !v.Drop {
		t.Error("deleted route still forwards")
	}
}

func TestDefaultEntry(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	readDefault := func() *p4v1.TableEntry {
		got, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4.TableDSCPToQueue, IsDefaultAction: true}}})
		if err != nil || len(got) != 1 {
			t.Fatalf("read default: %v, %d", err, len(got))
		}
		return got[0].GetTableEntry()
	}
	if a := readDefault().GetAction().GetAction(); a.GetActionId() != p4.ActionSetQueue || string(a.GetParams()[0].GetValue()) != "\x00" {
		t.Errorf("initial default %v, want set_queue(0)", a)
	}
	def := &p4v1.TableEntry{TableId: p4.TableDSCPToQueue, IsDefaultAction: true, Action: action(p4.ActionSetQueue, []byte{3})}
	if err := h.write(ctl.id, update(p4v1.Update_MODIFY, def)); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(readDefault(), def) {
		t.Errorf("default after MODIFY %v", readDefault())
	}
	// A route so the DSCP table is reached, then an unmapped DSCP uses queue 3.
	if err := h.write(ctl.id, update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{2}))); err != nil {
		t.Fatal(err)
	}
	var v pipeline.Verdict
	h.srv.Pipeline().Ingress(testFrame(), 1, &v)
	if v.Queue != 3 {
		t.Errorf("queue %d, want the modified default 3", v.Queue)
	}
	// MODIFY without an action resets to the P4 default.
	if err := h.write(ctl.id, update(p4v1.Update_MODIFY, &p4v1.TableEntry{TableId: p4.TableDSCPToQueue, IsDefaultAction: true})); err != nil {
		t.Fatal(err)
	}
	h.srv.Pipeline().Ingress(testFrame(), 1, &v)
	if v.Queue != 0 {
		t.Errorf("queue %d after reset, want 0", v.Queue)
	}
	// Wildcard reads leave the default entry out.
	all, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}})
	if err != nil || len(all) != 1 {
		t.Errorf("wildcard read: %d entities (%v), want just the route", len(all), err)
	}
}

func TestCountersAndRegisters(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	pl := h.srv.Pipeline()
	f := testFrame()
	if err := pl.SetCounter(p4.CounterEgressQueue, 17, 3, 300); err != nil {
		t.Fatal(err)
	}
	pl.Egress(f, &pipeline.EgressMeta{EgressPort: 2, Queue: 7, EnqDepthPkts: 12, DeqTimedeltaUs: 99, Length: len(f)})

	all, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2*p4.QueueSlots + 3*p4.PortSlots; len(all) != want {
		t.Errorf("wildcard counter read: %d cells, want %d", len(all), want)
	}
	one := func(id uint32, idx int64) *p4v1.CounterData {
		got, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: id, Index: &p4v1.Index{Index: idx}}}})
		if err != nil || len(got) != 1 {
			t.Fatalf("read counter: %v %d", err, len(got))
		}
		return got[0].GetCounterEntry().GetData()
	}
	idx := int64(p4.QueueIndex(2, 7))
	if d := one(p4.CounterEgressQueue, idx); d.GetPacketCount() != 1 || d.GetByteCount() != int64(len(f)) {
		t.Errorf("egress counter %v, want 1 packet of %d bytes", d, len(f))
	}
	// MODIFY sets (here: resets) a cell.
	err = h.write(ctl.id, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{
		CounterEntry: &p4v1.CounterEntry{CounterId: p4.CounterEgressQueue, Index: &p4v1.Index{Index: idx}, Data: &p4v1.CounterData{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := one(p4.CounterEgressQueue, idx); d.GetPacketCount() != 0 {
		t.Errorf("after reset %v", d)
	}
	if d := one(p4.CounterEgressQueue, 17); d.GetPacketCount() != 3 {
		t.Errorf("other cell changed: %v", d)
	}
	regs, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: p4.RegisterQueuePeak, Index: &p4v1.Index{Index: idx}}}},
		&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: p4.RegisterQueueDelay, Index: &p4v1.Index{Index: idx}}}})
	if err != nil || len(regs) != 2 {
		t.Fatalf("register read: %v %d", err, len(regs))
	}
	if v := regs[0].GetRegisterEntry().GetData().GetBitstring(); string(v) != "\x0c" {
		t.Errorf("queue_peak %x, want 0c", v)
	}
	if v := regs[1].GetRegisterEntry().GetData().GetBitstring(); string(v) != "\x63" {
		t.Errorf("queue_delay %x, want 63 (99 µs)", v)
	}
	allRegs, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{}}})
	if err != nil || len(allRegs) != 3*p4.QueueSlots+1 {
		t.Errorf("wildcard register read: %d (%v), want %d (three per queue, spray_seq)", len(allRegs), err, 3*p4.QueueSlots+1)
	}
}

func TestSaveThenCommit(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	if err := h.write(ctl.id, update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{2}))); err != nil {
		t.Fatal(err)
	}
	set := func(a p4v1.SetForwardingPipelineConfigRequest_Action, c *p4v1.ForwardingPipelineConfig) {
		t.Helper()
		if _, err := h.client.SetForwardingPipelineConfig(ctx(t), &p4v1.SetForwardingPipelineConfigRequest{
			DeviceId: testDevice, ElectionId: ctl.id, Action: a, Config: c}); err != nil {
			t.Fatal(err)
		}
	}
	c := torConfig(t)
	c.Cookie.Cookie = 43
	set(p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE, c)
	// Writes now go to the saved config; the dataplane keeps the old state.
	if err := h.write(ctl.id, update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 3}, 32, []byte{3}))); err != nil {
		t.Fatal(err)
	}
	var v pipeline.Verdict
	h.srv.Pipeline().Ingress(testFrame(), 1, &v)
	if v.Drop || v.EgressPort != 2 {
		t.Errorf("before COMMIT: %+v, want the old route to port 2", v)
	}
	set(p4v1.SetForwardingPipelineConfigRequest_COMMIT, nil)
	h.srv.Pipeline().Ingress(testFrame(), 1, &v)
	if !v.Drop {
		t.Errorf("after COMMIT: %+v, want the old route gone", v)
	}
	g, err := h.client.GetForwardingPipelineConfig(ctx(t), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: testDevice, ResponseType: p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY})
	if err != nil || g.GetConfig().GetCookie().GetCookie() != 43 || g.GetConfig().GetP4Info() != nil {
		t.Errorf("cookie-only get: %v, %v", g, err)
	}
	got, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}})
	if err != nil || len(got) != 1 {
		t.Errorf("after COMMIT %d entries (%v), want the one written after SAVE", len(got), err)
	}
}

func TestGetConfigResponseTypes(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	_ = ctl
	tests := []struct {
		typ                  p4v1.GetForwardingPipelineConfigRequest_ResponseType
		wantP4Info, wantData bool
	}{
		{p4v1.GetForwardingPipelineConfigRequest_ALL, true, true},
		{p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY, false, false},
		{p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE, true, false},
		{p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE, false, true},
	}
	for _, tc := range tests {
		g, err := h.client.GetForwardingPipelineConfig(ctx(t), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: testDevice, ResponseType: tc.typ})
		if err != nil {
			t.Fatal(err)
		}
		c := g.GetConfig()
		if (c.GetP4Info() != nil) != tc.wantP4Info || (len(c.GetP4DeviceConfig()) > 0) != tc.wantData || c.GetCookie().GetCookie() != 42 {
			t.Errorf("%v: p4info %v, device config %q, cookie %v", tc.typ, c.GetP4Info() != nil, c.GetP4DeviceConfig(), c.GetCookie())
		}
		if tc.wantData && string(c.GetP4DeviceConfig()) != `{"program":"tor.p4"}` {
			t.Errorf("device config %q not returned as stored", c.GetP4DeviceConfig())
		}
	}
}

func TestLegacyDeviceConfigAccepted(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte(`{"pipelines":[]}`))
	c := torConfig(t)
	c.P4DeviceConfig = b
	if _, err := h.client.SetForwardingPipelineConfig(ctx(t), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: testDevice, ElectionId: ctl.id, Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, Config: c}); err != nil {
		t.Fatalf("legacy P4DeviceConfig rejected: %v", err)
	}
}

func TestArbitration(t *testing.T) {
	h := newHarness(t)
	a := h.connect(eid(10))
	a.expect(codes.OK)
	b := h.connect(eid(5))
	if u := b.expect(codes.AlreadyExists); u.GetElectionId().GetLow() != 10 {
		t.Errorf("backup told election id %v, want the primary's 10", u.GetElectionId())
	}
	// Duplicate id: the stream is terminated with INVALID_ARGUMENT.
	dup := h.connect(eid(5))
	if _, err := dup.next(); status.Code(err) != codes.InvalidArgument {
		t.Errorf("duplicate election id: %v, want INVALID_ARGUMENT", err)
	}
	// Wrong device on the first arbitration: NOT_FOUND.
	c, cancel := h.client.StreamChannel(ctx(t))
	_ = cancel
	wrong := &controller{t: t, stream: c}
	wrong.arbitrate(99, eid(50))
	if _, err := wrong.next(); status.Code(err) != codes.NotFound {
		t.Errorf("unknown device: %v, want NOT_FOUND", err)
	}
	// A higher id takes over and everyone is told.
	n := h.connect(eid(20))
	n.expect(codes.OK)
	if u := a.expect(codes.AlreadyExists); u.GetElectionId().GetLow() != 20 {
		t.Errorf("old primary told %v, want 20", u.GetElectionId())
	}
	b.expect(codes.AlreadyExists)
	err := h.write(eid(10), update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{2})))
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("old primary write: %v, want PERMISSION_DENIED", err)
	}
	// Changing device on a live stream: FAILED_PRECONDITION.
	b.arbitrate(98, eid(5))
	if _, err := b.next(); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("device change: %v, want FAILED_PRECONDITION", err)
	}
	// The primary leaves: the remaining backup learns there is none, and is
	// not promoted (its id is below the highest ever seen).
	n.cancel()
	a.expect(codes.NotFound)
	if err := h.write(eid(10), update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{2}))); status.Code(err) != codes.PermissionDenied {
		t.Errorf("backup write after primary left: %v, want PERMISSION_DENIED", err)
	}
	// The backup wins again by re-arbitrating with an id >= the highest seen.
	a.arbitrate(testDevice, eid(20))
	a.expect(codes.OK)
	// A client with an unset election id is always a backup.
	u := h.connect(nil)
	u.expect(codes.AlreadyExists)
}

func TestPacketOutAnsweredWithStreamError(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	if err := ctl.stream.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{Payload: []byte{1}}}}); err != nil {
		t.Fatal(err)
	}
	m, err := ctl.stream.Recv()
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if codes.Code(m.GetError().GetCanonicalCode()) != codes.InvalidArgument || m.GetError().GetPacketOut() == nil {
		t.Errorf("PacketOut answer %v, want a StreamError INVALID_ARGUMENT", m)
	}
}

// TestWritesWhileForwarding: packets forwarded during Writes see either the
// old or the new tables, never a torn state (run with -race to also check
// the snapshot publication).
func TestWritesWhileForwarding(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	pl := h.srv.Pipeline()
	stop := make(chan struct{})
	bad := make(chan pipeline.Verdict, 1)
	forwarded := make(chan int, 1)
	go func() {
		n := 0
		var v pipeline.Verdict
		for {
			select {
			case <-stop:
				forwarded <- n
				return
			default:
			}
			pl.Ingress(testFrame(), 1, &v)
			// Routes only ever point at port 2 (queue 7) or 3 (queue 7).
			if !v.Drop && (v.Queue != 7 || (v.EgressPort != 2 && v.EgressPort != 3)) {
				select {
				case bad <- v:
				default:
				}
			}
			n++
		}
	}()
	q := &p4v1.TableEntry{TableId: p4.TableDSCPToQueue, Match: []*p4v1.FieldMatch{exact(1, []byte{56})}, Action: action(p4.ActionSetQueue, []byte{7})}
	if err := h.write(ctl.id, update(p4v1.Update_INSERT, q)); err != nil {
		t.Fatal(err)
	}
	r := route([]byte{10, 0, 0, 2}, 32, []byte{2})
	if err := h.write(ctl.id, update(p4v1.Update_INSERT, r)); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		r.Action = action(p4.ActionIPv4Forward, []byte{byte(2 + i%2)}, []byte{2, 0, 0, 0, 0, 2})
		typ := p4v1.Update_MODIFY
		if i%10 == 9 {
			typ = p4v1.Update_DELETE
		} else if i%10 == 0 && i > 0 {
			typ = p4v1.Update_INSERT
		}
		if err := h.write(ctl.id, update(typ, r)); err != nil {
			t.Fatalf("write %d (%v): %v", i, typ, err)
		}
	}
	close(stop)
	if n := <-forwarded; n == 0 {
		t.Error("no packet went through during the writes")
	}
	select {
	case v := <-bad:
		t.Errorf("torn verdict %+v", v)
	default:
	}
}

func TestArbitrationLimits(t *testing.T) {
	h := newHarnessWith(t, Config{DeviceID: testDevice, MaxStreams: 2})
	h.connect(eid(1)).expect(codes.OK)
	h.connect(eid(2)).expect(codes.OK)
	third := h.connect(eid(3))
	if _, err := third.next(); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("third stream with a limit of 2: %v, want RESOURCE_EXHAUSTED", err)
	}
	st, err := h.client.StreamChannel(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: testDevice, ElectionId: eid(9), Role: &p4v1.Role{Name: "telemetry"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Errorf("named role: %v, want INVALID_ARGUMENT", err)
	}
	_, err = h.client.Write(ctx(t), &p4v1.WriteRequest{DeviceId: testDevice, Role: "telemetry", ElectionId: eid(2)})
	if status.Code(err) != codes.NotFound {
		t.Errorf("write in a named role: %v, want NOT_FOUND", err)
	}
}
