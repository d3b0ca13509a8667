package testbed

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	hostagent "github.com/homatb/homatb/hostagent/agent"
	"github.com/homatb/homatb/internal/runcerts"
)

// serveAgent runs an agent on a loopback port with the credentials in dir
// until the test ends and returns its address.
func serveAgent(t *testing.T, name, dir string) string {
	t.Helper()
	cfg, err := runcerts.ServerConfig(runcerts.AgentFiles(dir))
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freeTestPort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- hostagent.Run(ctx, hostagent.Options{Listen: addr, Name: name, RecordsDir: t.TempDir(), TLS: cfg, Ready: func() { close(ready) }})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("agent %s: %v", name, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("agent %s not ready", name)
	}
	return addr
}

// TestPreflightExternal: with the run's credentials, an agent that answers
// and runs this build passes; one that does not answer, one holding
// another run's credentials and a switch whose P4Runtime does not answer
// are each a problem, with what to do.
func TestPreflightExternal(t *testing.T) {
	run, other := t.TempDir(), t.TempDir()
	for _, d := range []string{run, other} {
		if err := runcerts.Generate(d, runcerts.Options{Validity: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	good := serveAgent(t, "h1", run)
	stranger := serveAgent(t, "h3", other)
	silent := "127.0.0.1:" + strconv.Itoa(freeTestPort(t))
	noSwitch := "127.0.0.1:" + strconv.Itoa(freeTestPort(t))
	yaml := fmt.Sprintf(`name: pre
topology:
  kind: external
  external:
    certs: %q
    hosts:
      - {name: h1, address: 10.0.0.1, mac: "02:00:00:00:00:01", agent: %q}
      - {name: h2, address: 10.0.0.2, mac: "02:00:00:00:00:02", agent: %q}
      - {name: h3, address: 10.0.0.3, mac: "02:00:00:00:00:03", agent: %q}
    switches:
      - {name: tor, p4runtime: %q, device_id: 1, target: embedded, ports: {h1: 1, h2: 2, h3: 3}}
transports: [{name: homa}]
phases:
  - {name: p, clients: [h2], servers: [h1], sizes: "fixed:100", arrivals: closed, max_outstanding: 1}
`, run, good, silent, stranger, noSwitch)
	left, err := Preflight(mustPlan(t, yaml), "", "")
	var pe *PreflightError
	if !errors.As(err, &pe) || left != nil {
		t.Fatalf("preflight: %v (leftovers %v), want a preflight error", err, left)
	}
	all := err.Error()
	for _, want := range []string{
		"agent h2 not answering at " + silent, "homatb agent --name h2 --listen " + silent + " --tls-cert",
		"agent h3 at " + stranger + " refused the TLS handshake",
		"switch tor: P4Runtime at " + noSwitch + " does not answer",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("preflight says\n%s\nwant %q", all, want)
		}
	}
	if strings.Contains(all, "h1") {
		t.Errorf("the run's own agent h1 is a problem:\n%s", all)
	}
	t.Log(all)
	if len(pe.Problems) != 3 {
		t.Errorf("%d problems, want 3 (h2, h3, tor):\n%s", len(pe.Problems), all)
	}
}
