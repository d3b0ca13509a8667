package agent

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/internal/runcerts"
)

// syncBuffer is a log sink the agent's goroutines write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestListenOffLoopbackNeedsTLS: an agent refuses to open its control API
// on a network address without the run's credentials, and says how.
func TestListenOffLoopbackNeedsTLS(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0", "10.0.0.1:7100", "[::]:0"} {
		err := Run(t.Context(), Options{Listen: addr, Name: "h1", RecordsDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "--tls-cert") || !strings.Contains(err.Error(), addr) {
			t.Errorf("Listen %s without TLS: got %v, want a refusal naming the address and --tls-cert", addr, err)
		}
	}
}

// TestMutualTLSRefusesStrangers serves the control API with a run's
// credentials and calls Status as the run's orchestrator (answered) and
// as clients without them: no certificate, a certificate from another
// run's CA, plain text. Each stranger gets an error and the agent's log
// says it refused the connection.
func TestMutualTLSRefusesStrangers(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	for _, d := range []string{dir, other} {
		if err := runcerts.Generate(d, runcerts.Options{Hosts: []string{"127.0.0.1"}, Validity: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	srvTLS, err := runcerts.ServerConfig(runcerts.AgentFiles(dir))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	addr := "127.0.0.1:" + strconv.Itoa(int(freePort(t)))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runAgent(t, ctx, Options{Listen: addr, Name: "h1", RecordsDir: t.TempDir(), TLS: srvTLS,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})

	own, err := runcerts.ClientConfig(runcerts.ClientFiles(dir))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := runcerts.ClientConfig(runcerts.ClientFiles(other))
	if err != nil {
		t.Fatal(err)
	}
	// A foreign client that trusts this run's agent, so only the agent's
	// check of the client certificate can stop it.
	foreign.RootCAs = own.RootCAs
	noCert := own.Clone()
	noCert.Certificates = nil

	status := func(creds credentials.TransportCredentials) error {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return err
		}
		defer cc.Close()
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		defer ccancel()
		st, err := agentpb.NewAgentClient(cc).Status(cctx, &agentpb.StatusRequest{})
		if err == nil {
			_, err = st.Recv()
		}
		return err
	}
	if err := status(credentials.NewTLS(own)); err != nil {
		t.Fatalf("the run's orchestrator was refused: %v", err)
	}
	strangers := []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"no client certificate", credentials.NewTLS(noCert)},
		{"certificate from another CA", credentials.NewTLS(foreign)},
		{"plain text", insecure.NewCredentials()},
	}
	for _, s := range strangers {
		t.Run(s.name, func(t *testing.T) {
			before := strings.Count(logs.String(), "refused control connection")
			if err := status(s.creds); err == nil {
				t.Fatal("Status answered a client without the run's credentials")
			}
			deadline := time.Now().Add(2 * time.Second)
			for strings.Count(logs.String(), "refused control connection") == before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if strings.Count(logs.String(), "refused control connection") == before {
				t.Errorf("agent log does not say it refused the connection:\n%s", logs.String())
			}
		})
	}
}

// TestStatusDescribesMachine: asked, the first Status reply names the
// kernel, CPU and the NIC holding the given address (loopback here).
func TestStatusDescribesMachine(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(int(freePort(t)))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runAgent(t, ctx, Options{Listen: addr, Name: "h1", RecordsDir: t.TempDir()})
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	st, err := agentpb.NewAgentClient(cc).Status(ctx, &agentpb.StatusRequest{MachineFor: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	m := r.GetMachine()
	if m.GetKernel() == "" || m.GetCpus() == 0 || m.GetNic() != "lo" || m.GetAgentVersion() == "" {
		t.Errorf("machine %v: want kernel, CPUs, NIC lo and a version", m)
	}
	if r.GetUnixNs() == 0 {
		t.Error("no clock reading in the reply")
	}
}
