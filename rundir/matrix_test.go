package rundir

import (
	"strings"
	"testing"

	"github.com/homatb/homatb/workloads"
)

func TestCheckMatrixOrder(t *testing.T) {
	m, err := workloads.ParseMatrix("c.cm", []byte(`Nodes 3
Connections 4
Triggers 2
0->1 id 1 start 0 size 10 send_done_trigger 1
1->2 id 2 start 0 size 10 recv_done_trigger 2
2->0 id 3 trigger 1 size 10
0->2 id 4 trigger 2 size 10
trigger id 1 oneshot
trigger id 2 barrier count 1
`))
	if err != nil {
		t.Fatal(err)
	}
	good := func() []RPC {
		return []RPC{
			{Matrix: "m", Client: "h1", Flow: 1, SentNs: 100, IntendedNs: 100, DoneNs: 200, Status: StatusCompleted},
			{Matrix: "m", Client: "h2", Flow: 2, SentNs: 100, IntendedNs: 100, DoneNs: 300, Status: StatusCompleted},
			{Matrix: "m", Client: "h3", Flow: 3, Trigger: 1, InputNs: 250, IntendedNs: 250, SentNs: 260, DoneNs: 400, Status: StatusCompleted},
			{Matrix: "m", Client: "h1", Flow: 4, Trigger: 2, InputNs: 150, IntendedNs: 150, SentNs: 150, DoneNs: 400, Status: StatusCompleted},
			{Matrix: "m", Client: "h1", Trigger: 1, IntendedNs: 200, SentNs: 201, DoneNs: 300, Status: StatusCompleted}, // a notification
		}
	}
	if n, err := CheckMatrixOrder(good(), m); err != nil || n != 2 {
		t.Fatalf("good rows: checked %d, %v; want 2, nil", n, err)
	}
	for _, c := range []struct {
		name string
		edit func([]RPC)
		want string
	}{
		{"before send_done", func(r []RPC) { r[2].InputNs, r[2].IntendedNs = 199, 199 }, "oneshot trigger 1 fired at 199, when 0 of the 1"},
		{"sender failed", func(r []RPC) { r[0].Status = StatusFailed }, "0 of the 1"},
		{"before recv_done could", func(r []RPC) { r[3].InputNs, r[3].IntendedNs, r[3].SentNs = 99, 99, 99 }, "barrier trigger 2 fired at 99"},
		{"sent before intended", func(r []RPC) { r[2].SentNs = 240 }, "want fired <= intended <= sent"},
		{"wrong trigger", func(r []RPC) { r[2].Trigger = 2 }, "trigger 2 is not the flow's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := good()
			c.edit(rows)
			if _, err := CheckMatrixOrder(rows, m); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
