package testbed

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// sharedE2E is a short cotenancy.yaml: Homa's incast beside TCP's streams
// on four hosts, without and with the host queue.
const sharedE2E = `name: co
topology: {kind: star, hosts: 4}
link: {rate: 50Mbit, shaper: htb}
switch: {target: embedded, queue_depth_pkts: 256}
transports:
  - name: homa
  - name: tcp
    tcp: {congestion: cubic}
phases:
  - {name: incast, transport: homa, clients: [h2-h4], servers: [h1], sizes: fixed:1000, response_bytes: 1000, incast: {interval: 10ms}}
  - {name: bulk, transport: tcp-cubic, clients: [all], servers: [all], sizes: fixed:200000, arrivals: closed, max_outstanding: 2, response_bytes: 100}
warmup: 300ms
duration: 1500ms
drain: 1s
calibration: {skip: true}
sweep:
  - {param: host_qdisc, values: [none, pacer]}
`

// TestSharedEndToEnd runs a shared scenario through the homatb binary in
// emulation: each experiment runs Homa's and TCP's phases at once on the
// same hosts, its records carry both transports, the summary has a part
// per transport, and with host_qdisc pacer (only) every host's link
// counted Homa's and TCP's packets in their classes.
func TestSharedEndToEnd(t *testing.T) {
	needRunPrereqs(t)
	bin := buildHomatb(t)
	dir, reg := runDirs(t)
	file := filepath.Join(t.TempDir(), "co.yaml")
	if err := os.WriteFile(file, []byte(sharedE2E), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "run", file, "--run-dir", dir, "--registry", reg, "--binary", bin)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	m := readManifest(t, dir)
	t.Cleanup(func() { assertNothingLeft(t, reg, m.Tag) })
	if err != nil {
		logs, _ := os.ReadFile(filepath.Join(dir, "logs", "homatb.log"))
		t.Fatalf("homatb run: %v\n%s\n--- logs/homatb.log ---\n%s", err, out.String(), tail(logs, 4000))
	}
	s := readSummary(t, dir, &out)
	var parts []string
	for _, e := range s.Experiments {
		parts = append(parts, e.Name)
		if strings.HasSuffix(e.Name, "/homa") || strings.HasSuffix(e.Name, "/tcp") {
			if e.RPCs.Completed == 0 {
				t.Errorf("%s: no RPC completed", e.Name)
			}
		}
	}
	for _, want := range []string{"co-homa+tcp-host_qdiscnone/homa", "co-homa+tcp-host_qdiscnone/tcp", "co-homa+tcp-host_qdiscpacer/homa", "co-homa+tcp-host_qdiscpacer/tcp"} {
		if !slices.Contains(parts, want) {
			t.Errorf("summary.json lacks part %s (has %v)", want, parts)
		}
	}
	byTransport := rpcTransports(t, filepath.Join(dir, "rpcs.csv"))
	for _, exp := range []string{"co-homa+tcp-host_qdiscnone", "co-homa+tcp-host_qdiscpacer"} {
		if byTransport[exp]["homa"] == 0 || byTransport[exp]["tcp"] == 0 {
			t.Errorf("%s: rpcs.csv rows by transport %v, want both", exp, byTransport[exp])
		}
	}
	for _, e := range m.Experiments {
		pacer := strings.HasSuffix(e.Name, "pacer")
		for _, h := range e.Hosts {
			homa, tcp := h.Transport["qdisc_homa_packets"], h.Transport["qdisc_tcp_bytes"]
			_, counted := h.Transport["qdisc_homa_packets"]
			switch {
			case pacer && (homa == 0 || tcp == 0):
				t.Errorf("%s %s: Homa's class sent %d packets, TCP's %d bytes; want both", e.Name, h.Host, homa, tcp)
			case !pacer && counted:
				t.Errorf("%s %s: host queue counters without host_qdisc pacer: %v", e.Name, h.Host, h.Transport)
			}
		}
		if pacer != slices.Contains(e.Fidelity, pacerNote) {
			t.Errorf("%s: the host queue's note in fidelity is %v, want %v", e.Name, !pacer, pacer)
		}
	}
}

// rpcTransports counts rpcs.csv's rows by experiment and transport.
func rpcTransports(t *testing.T, path string) map[string]map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	ec, tc := slices.Index(rows[0], "experiment"), slices.Index(rows[0], "transport")
	out := map[string]map[string]int{}
	for _, r := range rows[1:] {
		if out[r[ec]] == nil {
			out[r[ec]] = map[string]int{}
		}
		out[r[ec]][r[tc]]++
	}
	return out
}
