package controller

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/controller/p4rtclient"
)

func TestQueueCommands(t *testing.T) {
	tests := []struct {
		name        string
		ports       []int
		rate, depth int
		want        []string
	}{
		{"both", []int{1, 2}, 1000, 64, []string{"set_queue_depth 64 1", "set_queue_rate 1000 1", "set_queue_depth 64 2", "set_queue_rate 1000 2"}},
		{"depth only", []int{3}, 0, 32, []string{"set_queue_depth 32 3"}},
		{"nothing", []int{3}, 0, 0, nil},
	}
	for _, tt := range tests {
		if got := queueCommands(tt.ports, tt.rate, tt.depth); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: queueCommands = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestSimpleSwitchCLIRun runs a stand-in CLI script: BMv2's CLI exits 0 even
// when a command fails, so Run must read its output.
func TestSimpleSwitchCLIRun(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fake_cli")
	// Echo the arguments and stdin; fail a command that names port 99.
	body := "#!/bin/sh\necho \"args: $*\"\nwhile read -r line; do case \"$line\" in *\" 99\") echo \"Error: invalid port\";; *) echo \"ok: $line\";; esac; done\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cli := simpleSwitchCLI{Path: script, ThriftPort: 9091}
	out, err := cli.Run(testContext(t), "set_queue_depth 64 1")
	if err != nil || !strings.Contains(out, "--thrift-port 9091") || !strings.Contains(out, "ok: set_queue_depth 64 1") {
		t.Fatalf("Run = %q, %v", out, err)
	}
	if _, err := cli.Run(testContext(t), "set_queue_depth 64 99"); err == nil || !strings.Contains(err.Error(), "invalid port") {
		t.Fatalf("Run of a failing command: %v, want the CLI's error", err)
	}
}

// TestBMv2Program programs a real simple_switch_grpc. It needs BMv2 and p4c
// (to compile tor.p4 to BMv2 JSON), which this project's machines lack.
func TestBMv2Program(t *testing.T) {
	ssg, err := exec.LookPath("simple_switch_grpc")
	if err != nil {
		t.Skip("simple_switch_grpc is not on PATH: BMv2 path untested here")
	}
	p4c, err := exec.LookPath("p4c-bm2-ss")
	if err != nil {
		t.Skip("p4c-bm2-ss is not on PATH: cannot compile tor.p4 for BMv2")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "tor.json")
	if out, err := exec.Command(p4c, "--p4v", "16", "-o", jsonPath, "../p4/tor.p4").CombinedOutput(); err != nil {
		t.Fatalf("p4c: %v\n%s", err, out)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, ssg, "--no-p4", "--device-id", "1", "--log-level", "warn",
		"--", "--grpc-server-addr", addr, "--priority-queues", "8")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })

	topo := &Topology{
		Pipeline: Pipeline{BMv2JSON: jsonPath},
		Switches: []Switch{{Name: "s1", DeviceID: 1, Address: addr, Target: TargetBMv2}},
	}
	for i := 1; i <= 3; i++ {
		topo.Hosts = append(topo.Hosts, Host{Name: fmt.Sprintf("h%d", i), IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}),
			MAC: MAC{2, 0, 0, 0, 0, byte(i)}, Switch: "s1", Port: i})
	}
	// Program verifies by reading back every entry it wrote.
	pctx := testContext(t)
	f, err := Connect(pctx, topo, p4rtclient.WithDialTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Program(pctx, Policy{ECNThresholdPkts: 10}); err != nil {
		t.Fatal(err)
	}
	// flow_hash(seed), a fat tree's per-switch ECMP seed, on BMv2 too:
	// Sync writes the default, Verify reads it back with its seed.
	ecmp := Policy{ECNThresholdPkts: 10, LoadBalancing: LoadBalanceECMP, SwitchSeeds: true}
	if err := f.Sync(pctx, ecmp); err != nil {
		t.Fatalf("Sync to seeded ECMP: %v", err)
	}
	if err := f.Verify(pctx, ecmp); err != nil {
		t.Fatalf("Verify seeded ECMP: %v", err)
	}
}

// TestSimpleSwitchCLINetNS: a switch in a namespace of its own is reached
// by running the CLI inside it (nsenter), on that namespace's loopback.
func TestSimpleSwitchCLINetNS(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"nsenter":  "#!/bin/sh\necho \"nsenter $1\"\nshift 2\nexec \"$@\"\n",
		"fake_cli": "#!/bin/sh\necho \"cli $*\"\ncat\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+":/bin:/usr/bin")
	cli := simpleSwitchCLI{Path: filepath.Join(dir, "fake_cli"), Host: "127.0.0.1", ThriftPort: 9092, NetNS: "/proc/42/ns/net"}
	out, err := cli.Run(testContext(t), "set_queue_rate 800 1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nsenter --net=/proc/42/ns/net", "cli --thrift-ip 127.0.0.1 --thrift-port 9092", "set_queue_rate 800 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
}
