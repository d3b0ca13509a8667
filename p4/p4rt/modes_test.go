package p4rt

import (
	"testing"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/p4/pipeline"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// TestPortModeRoundTrip writes each port_mode action for port 2 over
// P4Runtime, reads the entry back in canonical form and checks the
// pipeline's verdict for a frame to port 2 carries the mode.
func TestPortModeRoundTrip(t *testing.T) {
	portMode := func(port byte, a *p4v1.TableAction) *p4v1.TableEntry {
		return &p4v1.TableEntry{TableId: p4.TablePortMode, Match: []*p4v1.FieldMatch{exact(1, []byte{port})}, Action: a}
	}
	tests := []struct {
		name     string
		in, want *p4v1.TableEntry
		mode     dataplane.Mode
		arg      uint32
		queue    uint8
	}{
		{"rank_order", portMode(2, action(p4.ActionRankOrder, []byte{0, 0, 0x75, 0x30})),
			portMode(2, action(p4.ActionRankOrder, []byte{0x75, 0x30})), dataplane.ModeRankOrder, 30000, 0},
		{"trim_above", portMode(2, action(p4.ActionTrimAbove, []byte{0, 8})),
			portMode(2, action(p4.ActionTrimAbove, []byte{8})), dataplane.ModeTrimAbove, 8, 7},
		{"strict_priority", portMode(2, action(p4.ActionStrictPriority)),
			portMode(2, action(p4.ActionStrictPriority)), dataplane.ModeStrictPriority, 0, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ctl := h.primary()
			if err := h.write(ctl.id, update(p4v1.Update_INSERT, route([]byte{10, 0, 0, 2}, 32, []byte{2})),
				update(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: p4.TableDSCPToQueue,
					Match: []*p4v1.FieldMatch{exact(1, []byte{56})}, Action: action(p4.ActionSetQueue, []byte{7})}),
				update(p4v1.Update_INSERT, tc.in)); err != nil {
				t.Fatal(err)
			}
			got, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4.TablePortMode}}})
			if err != nil || len(got) != 1 {
				t.Fatalf("read: %v, %d entries", err, len(got))
			}
			if !proto.Equal(got[0].GetTableEntry(), tc.want) {
				t.Errorf("read back %v, want %v", got[0].GetTableEntry(), tc.want)
			}
			var v pipeline.Verdict
			h.srv.Pipeline().Ingress(testFrame(), 1, &v)
			if v.Drop || v.EgressPort != 2 || v.Mode != tc.mode || v.ModeArg != tc.arg || v.Queue != tc.queue {
				t.Errorf("verdict %+v, want port 2 queue %d mode %d arg %d", v, tc.queue, tc.mode, tc.arg)
			}
		})
	}
}

// TestPortModeRejects checks the server validates port_mode writes like
// any table's: arguments wider than the P4Info says, foreign actions.
func TestPortModeRejects(t *testing.T) {
	h := newHarness(t)
	ctl := h.primary()
	for name, te := range map[string]*p4v1.TableEntry{
		"threshold wider than 16 bits": {TableId: p4.TablePortMode, Match: []*p4v1.FieldMatch{exact(1, []byte{2})},
			Action: action(p4.ActionTrimAbove, []byte{1, 0, 0})},
		"set_queue in port_mode": {TableId: p4.TablePortMode, Match: []*p4v1.FieldMatch{exact(1, []byte{2})},
			Action: action(p4.ActionSetQueue, []byte{1})},
		"port wider than 9 bits": {TableId: p4.TablePortMode, Match: []*p4v1.FieldMatch{exact(1, []byte{4, 0})},
			Action: action(p4.ActionStrictPriority)},
	} {
		if err := h.write(ctl.id, update(p4v1.Update_INSERT, te)); status.Code(err) == codes.OK {
			t.Errorf("%s: accepted", name)
		}
	}
}
