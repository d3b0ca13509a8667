package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/p4/p4rt"
	"github.com/homatb/homatb/p4/switchstats"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func TestParseLinkRate(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"1Gbit", 1_000_000_000, false},
		{"100mbit", 100_000_000, false},
		{"2.5Gbit", 2_500_000_000, false},
		{"64kbit", 64_000, false},
		{"1000000", 1_000_000, false},
		{"unlimited", 0, false},
		{"none", 0, false},
		{"0", 0, false},
		{"1Gbps", 1_000_000_000, false}, // read as bits, like a scenario's link_rate
		{"", 0, true},
		{"fast", 0, true},
		{"-1Mbit", 0, true},
	}
	for _, tc := range tests {
		got, err := parseLinkRate(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseLinkRate(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestSwitchFlagsToConfig(t *testing.T) {
	f := &switchFlags{
		interfaces:     []string{"1@s1-eth1", "2@s1-eth2"},
		deviceID:       3,
		linkRate:       "100Mbit",
		queueDepthPkts: 32,
		queueDepths:    []string{"2:7:8"},
		queueRates:     []string{"1:*:1000"},
		dropProb:       []string{"2:0.25"},
		dropEvery:      []string{"2:10"},
		portRates:      []string{"2:400Mbit"},
		batch:          16,
	}
	cfg, err := f.dataplaneConfig(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Ports[1] != "s1-eth1" || cfg.Ports[2] != "s1-eth2" || len(cfg.Ports) != 2 {
		t.Errorf("ports %v", cfg.Ports)
	}
	if cfg.LinkRateBps != 100_000_000 || cfg.Unshaped || cfg.DeviceID != 3 || cfg.QueueDepthPkts != 32 || cfg.BatchSize != 16 {
		t.Errorf("config %+v", cfg)
	}
	if len(cfg.QueueDepths) != 1 || cfg.QueueDepths[0] != (dataplane.QueueDepth{Port: 2, Queue: 7, Pkts: 8}) {
		t.Errorf("queue depths %+v", cfg.QueueDepths)
	}
	if len(cfg.QueueRates) != 1 || cfg.QueueRates[0] != (dataplane.QueueRate{Port: 1, Queue: -1, PPS: 1000}) {
		t.Errorf("queue rates %+v", cfg.QueueRates)
	}
	if cfg.Faults[2] != (dataplane.Fault{DropProb: 0.25, EveryN: 10}) {
		t.Errorf("faults %+v", cfg.Faults)
	}
	if len(cfg.PortRateBps) != 1 || cfg.PortRateBps[2] != 400_000_000 {
		t.Errorf("port rates %v, want port 2 at 400 Mbit/s", cfg.PortRateBps)
	}
}

func TestSwitchFlagsRejected(t *testing.T) {
	base := func() *switchFlags { return &switchFlags{interfaces: []string{"1@a"}, linkRate: "1Gbit"} }
	tests := []struct {
		name   string
		mutate func(*switchFlags)
	}{
		{"no ports", func(f *switchFlags) { f.interfaces = nil }},
		{"port 0", func(f *switchFlags) { f.interfaces = []string{"0@a"} }},
		{"port 64", func(f *switchFlags) { f.interfaces = []string{"64@a"} }},
		{"no iface", func(f *switchFlags) { f.interfaces = []string{"1@"} }},
		{"duplicate port", func(f *switchFlags) { f.interfaces = []string{"1@a", "1@b"} }},
		{"bad rate", func(f *switchFlags) { f.linkRate = "fast" }},
		{"queue 8", func(f *switchFlags) { f.queueRates = []string{"1:8:100"} }},
		{"queue depth shape", func(f *switchFlags) { f.queueDepths = []string{"1:2"} }},
		{"probability above 1", func(f *switchFlags) { f.dropProb = []string{"1:1.5"} }},
		{"drop every negative", func(f *switchFlags) { f.dropEvery = []string{"1:-3"} }},
		{"port rate shape", func(f *switchFlags) { f.portRates = []string{"1"} }},
		{"port rate unlimited", func(f *switchFlags) { f.portRates = []string{"1:unlimited"} }},
	}
	for _, tc := range tests {
		f := base()
		tc.mutate(f)
		if _, err := f.dataplaneConfig(slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// TestRunSwitch starts the whole switch command on a veth pair, checks that
// P4Runtime answers and the admin socket serves statistics, then stops it
// like SIGTERM would and checks the stats file it leaves behind.
func TestRunSwitch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for veths and AF_PACKET")
	}
	pid := os.Getpid()
	a, b := fmt.Sprintf("hsw%da", pid), fmt.Sprintf("hsw%db", pid)
	if out, err := exec.Command("ip", "link", "add", a, "type", "veth", "peer", "name", b).CombinedOutput(); err != nil {
		t.Skipf("cannot create veths: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", a).Run() })
	for _, l := range []string{a, b} {
		if out, err := exec.Command("ip", "link", "set", l, "up").CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // runSwitch binds it again

	dir := t.TempDir()
	f := &switchFlags{
		interfaces: []string{"1@" + a, "2@" + b}, deviceID: 5, grpcAddr: addr, linkRate: "100Mbit",
		queueDepthPkts: 64, batch: 16, logLevel: "warn", sharedAlpha: 1,
		statsFile: filepath.Join(dir, "stats.json"), adminSocket: filepath.Join(dir, "admin.sock"),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runSwitch(ctx, f) }()
	t.Cleanup(cancel)

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var caps *p4v1.CapabilitiesResponse
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
		caps, err = p4v1.NewP4RuntimeClient(conn).Capabilities(cctx, &p4v1.CapabilitiesRequest{})
		ccancel()
		if err == nil {
			break
		}
	}
	if err != nil || caps.GetP4RuntimeApiVersion() != p4rt.APIVersion {
		t.Fatalf("Capabilities: %v %v", caps, err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", f.adminSocket)
	}}, Timeout: 5 * time.Second}
	var live switchstats.Stats
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := hc.Get("http://switch/stats")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&live)
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin socket: %v", err)
		}
	}
	if live.DeviceID != 5 || len(live.Ports) != 2 {
		t.Errorf("admin stats %+v", live)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runSwitch: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runSwitch did not stop")
	}
	b2, err := os.ReadFile(f.statsFile)
	if err != nil {
		t.Fatal(err)
	}
	var final switchstats.Stats
	if err := json.Unmarshal(b2, &final); err != nil {
		t.Fatal(err)
	}
	if final.DeviceID != 5 || len(final.Ports) != 2 || final.Ports[0].Iface != a || final.Ports[1].RateBps != 100_000_000 {
		t.Errorf("stats file %s", b2)
	}
}
