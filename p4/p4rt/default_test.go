package p4rt

import (
	"testing"

	"github.com/homatb/homatb/p4"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// p4c before 2024-08 leaves initial_default_action out of the P4Info; the
// default entry read back must still be the program's, not action id 0.
func TestDefaultEntryWithoutInitialDefaultInP4Info(t *testing.T) {
	h := newHarness(t)
	ctl := h.connect(eid(10))
	ctl.expect(codes.OK)
	cfg := torConfig(t)
	for _, tbl := range cfg.GetP4Info().GetTables() {
		tbl.InitialDefaultAction = nil
	}
	if _, err := h.client.SetForwardingPipelineConfig(ctx(t), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: testDevice, ElectionId: ctl.id, Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: cfg}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		table uint32
		want  *p4v1.TableAction
	}{
		{p4.TableIPv4LPM, action(p4.ActionDrop)},
		{p4.TableDSCPToQueue, action(p4.ActionSetQueue, []byte{0})},
		{p4.TableARPProxy, action(p4.ActionDrop)},
		{p4.TableECNConfig, action(p4.ActionNoAction)},
	}
	for _, tc := range tests {
		got, err := h.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: tc.table, IsDefaultAction: true}}})
		if err != nil || len(got) != 1 {
			t.Fatalf("read default of %#x: %d entities, %v", tc.table, len(got), err)
		}
		if a := got[0].GetTableEntry().GetAction(); !proto.Equal(a, tc.want) {
			t.Errorf("default of %#x = %v, want %v", tc.table, a, tc.want)
		}
	}
}
