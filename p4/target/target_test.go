package target

import (
	"context"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// A switch without a dataplane serves P4Runtime on the port it picked and
// stops cleanly when its context ends.
func TestSwitchServesUntilCancelled(t *testing.T) {
	sw, err := New(Config{DeviceID: 3, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if sw.Dataplane() != nil || sw.Pipeline() == nil {
		t.Fatalf("dataplane %v, pipeline %v: want none and one", sw.Dataplane(), sw.Pipeline())
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- sw.Run(ctx) }()

	conn, err := grpc.NewClient(sw.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	caps, err := p4v1.NewP4RuntimeClient(conn).Capabilities(rctx, &p4v1.CapabilitiesRequest{})
	if err != nil || caps.GetP4RuntimeApiVersion() == "" {
		t.Fatalf("Capabilities = %v, %v", caps, err)
	}
	cancel()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestNewFailsOnABadAddress(t *testing.T) {
	if _, err := New(Config{Addr: "256.0.0.1:0"}); err == nil {
		t.Error("New listened on 256.0.0.1")
	}
}
