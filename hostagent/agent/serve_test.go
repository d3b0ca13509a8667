package agent

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/homatb/homatb/hostagent/agentpb"
)

// runAgent starts Run with o and returns a channel that receives its
// result; it fails the test if the agent does not come up.
func runAgent(t *testing.T, ctx context.Context, o Options) <-chan error {
	t.Helper()
	ready := make(chan struct{})
	o.Ready = func() { close(ready) }
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("agent %s did not start: %v", o.Name, err)
	case <-time.After(10 * time.Second):
		t.Fatal("agent not ready after 10 s")
	}
	return done
}

// TestControlOverTCPUntilShutdown drives an agent through its TCP control
// listener (agents on other machines) and ends it with Shutdown.
func TestControlOverTCPUntilShutdown(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(int(freePort(t)))
	done := runAgent(t, context.Background(), Options{Listen: addr, Name: "remote", RecordsDir: t.TempDir()})
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	api := agentpb.NewAgentClient(cc)
	ctx := t.Context()
	if _, err := api.Configure(ctx, &agentpb.ConfigureRequest{
		Experiment: "tcp-control", Transport: agentpb.Transport_TRANSPORT_TCP,
		Address: "127.0.0.1", ServerPorts: []uint32{freePort(t)},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Start(ctx, &agentpb.StartRequest{}); err != nil {
		t.Fatal(err)
	}
	st, err := api.Status(ctx, &agentpb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := st.Recv(); err != nil || r.GetState() != StateRunning || r.GetExperiment() != "tcp-control" {
		t.Fatalf("status %v, %v: want experiment tcp-control running", r, err)
	}
	if _, err := api.Shutdown(ctx, &agentpb.ShutdownRequest{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after Shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Shutdown")
	}
}

// TestControlSocketStaleAndLive: a socket file nobody answers is replaced;
// one a live agent answers is refused, and the live agent keeps it.
func TestControlSocketStaleAndLive(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "h1.sock")
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close() // the file stays, as after a crash
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAgent(t, ctx, Options{Socket: socket, Name: "h1", RecordsDir: t.TempDir()})
	err = Run(t.Context(), Options{Socket: socket, Name: "h2", RecordsDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "live agent") {
		t.Errorf("second agent on a live socket: %v, want a refusal naming the live agent", err)
	}
	if c, err := net.Dial("unix", socket); err != nil {
		t.Errorf("the live agent lost its socket: %v", err)
	} else {
		c.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("agent: %v", err)
	}
}
