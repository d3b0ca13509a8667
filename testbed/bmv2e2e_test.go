package testbed

import (
	"bytes"
	"context"
	"github.com/homatb/homatb/testbed/switches"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// needBMv2 skips unless BMv2 and p4c's tor.json are here (CI has neither).
func needBMv2(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"simple_switch_grpc", "simple_switch_CLI"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH: the BMv2 run is untested here (docs/bmv2.md says how to build it)", tool)
		}
	}
	if _, err := os.Stat(filepath.Join("..", switches.BMv2JSONPath)); err != nil {
		t.Skipf("no %s: make p4c (needs p4c-bm2-ss)", switches.BMv2JSONPath)
	}
}

// bmv2Smoke is a short BMv2 run: two senders, a probe, Homa only.
const bmv2Smoke = `name: bmv2-smoke
topology: {kind: star, hosts: 3}
link: {rate: 10Mbit}
switch: {target: bmv2, queue_depth_pkts: 64}
transports: [{name: homa}]
phases:
  - {name: bulk, clients: [h2], servers: [h1], sizes: "fixed:100000", arrivals: closed, max_outstanding: 1, response_bytes: 100}
  - {name: probes, clients: [h3], servers: [h1], sizes: "fixed:100", arrivals: poisson, rate_rps: 50}
warmup: 500ms
duration: 3s
drain: 1s
calibration: {skip: true}
`

// TestBMv2ListensOnlyOnLoopback runs a BMv2 scenario and, while it runs,
// checks every listening TCP socket of every process the run started (by
// its HOMATB_RUN tag): each must be bound to a loopback address, or to a
// wildcard address in a network namespace whose only addresses are
// loopback ones (BMv2's Thrift server, which binds every address, in the
// switch's own namespace). It fails if it never saw BMv2's listener.
func TestBMv2ListensOnlyOnLoopback(t *testing.T) {
	needRunPrereqs(t)
	needBMv2(t)
	bin := buildHomatb(t)
	dir, reg := runDirs(t)
	scen := filepath.Join(t.TempDir(), "bmv2-smoke.yaml")
	if err := os.WriteFile(scen, []byte(bmv2Smoke), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "run", scen, "--run-dir", dir, "--registry", reg, "--binary", bin)
	cmd.Dir = ".." // build/tor.json is relative to the repository
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	seen := map[string]listener{}
	var runErr error
	for polling := true; polling; {
		select {
		case runErr = <-done:
			polling = false
		case <-time.After(200 * time.Millisecond):
			if tag := runTag(dir); tag != "" {
				for _, l := range runListeners(t, tag) {
					seen[l.comm+" "+l.addr.String()] = l
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		// Stopped before the network was built: the preflight says why.
		t.Fatalf("run: %v, no manifest (%v)\n%s", runErr, err, out.String())
	}
	m := readManifest(t, dir)
	t.Cleanup(func() { assertNothingLeft(t, reg, m.Tag) })
	if runErr != nil {
		t.Fatalf("run: %v\n%s", runErr, out.String())
	}
	bmv2 := 0
	for key, l := range seen {
		if l.bmv2() {
			bmv2++
		}
		if l.addr.Addr().IsLoopback() {
			continue
		}
		if !l.addr.Addr().IsUnspecified() {
			t.Errorf("%s (pid %d) listens on %s, a non-loopback address", l.comm, l.pid, l.addr)
			continue
		}
		if len(l.foreign) > 0 {
			t.Errorf("%s (pid %d) listens on %s in a namespace with the non-loopback addresses %v", l.comm, l.pid, l.addr, l.foreign)
			continue
		}
		t.Logf("listener %s: wildcard in a loopback-only namespace", key)
	}
	if bmv2 == 0 {
		t.Fatalf("saw no listener of simple_switch_grpc during the run (saw %d others): the check did not run", len(seen))
	}
}
