package p4rt

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/homatb/homatb/p4"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

const testDevice = 7

// harness is a server on a loopback listener and a client connected to it.
type harness struct {
	t      *testing.T
	srv    *Server
	client p4v1.P4RuntimeClient
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, Config{DeviceID: testDevice})
}

func newHarnessWith(t *testing.T, cfg Config) *harness {
	t.Helper()
	leakCheck(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(cfg)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &harness{t: t, srv: srv, client: p4v1.NewP4RuntimeClient(conn)}
}

// leakCheck fails the test if goroutines started during it outlive it
// (stream senders and receivers must end with their stream). Registered
// first, it runs after every other cleanup.
func leakCheck(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Errorf("%d goroutines leaked", n-before)
		}
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func eid(low uint64) *p4v1.Uint128 { return &p4v1.Uint128{Low: low} }

// controller is one open stream channel.
type controller struct {
	t      *testing.T
	stream p4v1.P4Runtime_StreamChannelClient
	cancel context.CancelFunc
	id     *p4v1.Uint128
}

// connect opens a stream channel and sends arbitration with id (nil: unset).
func (h *harness) connect(id *p4v1.Uint128) *controller {
	h.t.Helper()
	c, cancel := context.WithCancel(context.Background())
	st, err := h.client.StreamChannel(c)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	ctl := &controller{t: h.t, stream: st, cancel: cancel, id: id}
	h.t.Cleanup(cancel)
	ctl.arbitrate(testDevice, id)
	return ctl
}

func (c *controller) arbitrate(device uint64, id *p4v1.Uint128) {
	c.t.Helper()
	if err := c.stream.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{
		Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: device, ElectionId: id}}}); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next arbitration update, or the error that ended the stream.
func (c *controller) next() (*p4v1.MasterArbitrationUpdate, error) {
	for {
		m, err := c.stream.Recv()
		if err != nil {
			return nil, err
		}
		if a := m.GetArbitration(); a != nil {
			return a, nil
		}
	}
}

// expect reads the next arbitration update and checks its status code.
func (c *controller) expect(want codes.Code) *p4v1.MasterArbitrationUpdate {
	c.t.Helper()
	u, err := c.next()
	if err != nil {
		c.t.Fatalf("stream ended: %v, want an update with %v", err, want)
	}
	if got := codes.Code(u.GetStatus().GetCode()); got != want {
		c.t.Fatalf("arbitration status %v (%q), want %v", got, u.GetStatus().GetMessage(), want)
	}
	return u
}

func torConfig(t *testing.T) *p4v1.ForwardingPipelineConfig {
	t.Helper()
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	return &p4v1.ForwardingPipelineConfig{P4Info: info, P4DeviceConfig: []byte(`{"program":"tor.p4"}`),
		Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: 42}}
}

// primary connects a primary controller and pushes tor.p4.
func (h *harness) primary() *controller {
	h.t.Helper()
	ctl := h.connect(eid(10))
	ctl.expect(codes.OK)
	if _, err := h.client.SetForwardingPipelineConfig(ctx(h.t), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: testDevice, ElectionId: ctl.id, Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: torConfig(h.t)}); err != nil {
		h.t.Fatal(err)
	}
	return ctl
}

func (h *harness) write(id *p4v1.Uint128, updates ...*p4v1.Update) error {
	_, err := h.client.Write(ctx(h.t), &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: id, Updates: updates})
	return err
}

func (h *harness) read(entities ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	rc, err := h.client.Read(ctx(h.t), &p4v1.ReadRequest{DeviceId: testDevice, Entities: entities})
	if err != nil {
		return nil, err
	}
	var out []*p4v1.Entity
	for {
		r, err := rc.Recv()
		if err != nil {
			if status.Code(err) == codes.OK || err.Error() == "EOF" {
				return out, nil
			}
			return out, err
		}
		out = append(out, r.GetEntities()...)
	}
}

func update(typ p4v1.Update_Type, te *p4v1.TableEntry) *p4v1.Update {
	return &p4v1.Update{Type: typ, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}
}

func exact(id uint32, v []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
}

func lpmMatch(v []byte, plen int32) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: plen}}}
}

func action(id uint32, params ...[]byte) *p4v1.TableAction {
	a := &p4v1.Action{ActionId: id}
	for i, p := range params {
		a.Params = append(a.Params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: p})
	}
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
}

// route is an ipv4_lpm entry for dst/plen to port with a MAC.
func route(dst []byte, plen int32, port []byte) *p4v1.TableEntry {
	return &p4v1.TableEntry{TableId: p4.TableIPv4LPM, Match: []*p4v1.FieldMatch{lpmMatch(dst, plen)},
		Action: action(p4.ActionIPv4Forward, port, []byte{2, 0, 0, 0, 0, 2})}
}

// details decodes the per-update p4.v1.Error list of a batch error.
func details(t *testing.T, err error) []*p4v1.Error {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("not a status error: %v", err)
	}
	var out []*p4v1.Error
	for _, d := range st.Proto().GetDetails() {
		e := &p4v1.Error{}
		if err := d.UnmarshalTo(e); err != nil {
			t.Fatalf("detail is not a p4.v1.Error: %v", err)
		}
		out = append(out, e)
	}
	return out
}
