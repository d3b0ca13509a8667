package testbed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/internal/runcerts"
	"github.com/homatb/homatb/testbed/agents"
)

// externalTraffic is the traffic both runs of TestExternalEndToEnd carry:
// a bulk client and a probe client to one server, both transports.
const externalTraffic = `link:
  rate: 100Mbit
switch:
  queue_depth_pkts: 128
transports:
  - name: homa
  - name: tcp
phases:
  - name: bulk
    clients: [h2]
    servers: [h1]
    sizes: fixed:20000
    arrivals: closed
    max_outstanding: 1
    response_bytes: 100
  - name: probes
    clients: [h3]
    servers: [h1]
    sizes: fixed:100
    arrivals: poisson
    rate_rps: 100
warmup: 500ms
duration: 2s
drain: 500ms
calibration:
  sizes: [100, 10000]
  samples: 5
`

// nsHost is one namespace the test makes to stand for a machine: its
// data-plane NIC on a switch port, and a control link to the root
// namespace (a cluster's management network) where its agent listens.
type nsHost struct {
	name, ns   string
	data, mac  string // data-plane address and MAC
	ctl, agent string // control address (ns side) and agent address
	swIntf     string // switch side of the data link (root namespace)
	ctlIntf    string // root side of the control link
	port       int
}

// TestExternalEndToEnd runs a scenario on an external topology whose hosts
// are namespaces this test makes with ip(8) (not Mininet), each running
// `homatb agent --listen` on its namespace address with the run's
// credentials (mutual TLS), behind an embedded switch process reached over
// P4Runtime on TCP. The run directory must have the structure of an
// emulated run of the same traffic (run through Mininet when it is
// installed), and the agents must refuse clients without the credentials.
func TestExternalEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes namespaces and veths")
	}
	for _, tool := range []string{"ip", "ethtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	bin := buildHomatb(t)
	base := t.TempDir()
	certs := filepath.Join(base, "certs")
	tag := testTag(t)
	hosts := make([]nsHost, 3)
	var ctlAddrs []string
	for i := range hosts {
		n := i + 1
		hosts[i] = nsHost{
			name: "h" + strconv.Itoa(n), ns: "homatb-" + tag + "-h" + strconv.Itoa(n), port: n,
			data: fmt.Sprintf("10.0.0.%d", n), mac: fmt.Sprintf("02:00:00:00:00:%02x", n),
			ctl:    fmt.Sprintf("10.199.%d.2", n),
			swIntf: fmt.Sprintf("%ss1e%d", tag, n), ctlIntf: fmt.Sprintf("%sh%de1", tag, n),
		}
		hosts[i].agent = hosts[i].ctl + ":7100"
		ctlAddrs = append(ctlAddrs, hosts[i].ctl)
	}
	if err := runcerts.Generate(certs, runcerts.Options{Hosts: ctlAddrs, Validity: time.Hour}); err != nil {
		t.Fatal(err)
	}
	makeNamespaces(t, hosts)

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	logs := filepath.Join(base, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		start(t, ctx, filepath.Join(logs, "agent-"+h.name+".log"), "ip", "netns", "exec", h.ns, bin, "agent", "--name", h.name,
			"--listen", h.agent, "--tls-cert", filepath.Join(certs, runcerts.AgentCertFile),
			"--tls-key", filepath.Join(certs, runcerts.AgentKeyFile), "--tls-ca", filepath.Join(certs, runcerts.CAFile),
			"--records-dir", filepath.Join(base, "records", h.name))
	}
	p4rt := "127.0.0.1:" + strconv.Itoa(freeTestPort(t))
	admin := filepath.Join(base, "s1-admin.sock")
	swArgs := []string{bin, "switch", "--device-id", "1", "--grpc-server-addr", p4rt, "--link-rate", "100Mbit",
		"--queue-depth-pkts", "128", "--admin-socket", admin}
	for _, h := range hosts {
		swArgs = append(swArgs, "-i", fmt.Sprintf("%d@%s", h.port, h.swIntf))
	}
	start(t, ctx, filepath.Join(logs, "s1.log"), swArgs...)
	waitForAgents(t, ctx, hosts, logs)

	refusesStrangers(t, ctx, hosts[0], filepath.Join(logs, "agent-h1.log"))

	// The run, through the homatb binary as a person runs it.
	file := filepath.Join(base, "external.yaml")
	var topo strings.Builder
	fmt.Fprintf(&topo, "name: external\ntopology:\n  kind: external\n  external:\n    certs: %s\n    hosts:\n", certs)
	for _, h := range hosts {
		fmt.Fprintf(&topo, "      - {name: %s, address: %s/24, mac: %q, agent: %q}\n", h.name, h.data, h.mac, h.agent)
	}
	fmt.Fprintf(&topo, "    switches:\n      - {name: s1, p4runtime: %q, device_id: 1, target: embedded, admin_socket: %s, ports: {h1: 1, h2: 2, h3: 3}}\n", p4rt, admin)
	if err := os.WriteFile(file, []byte(topo.String()+externalTraffic), 0o644); err != nil {
		t.Fatal(err)
	}
	extDir := filepath.Join(base, "ext-run")
	runScenario(t, ctx, bin, file, extDir, filepath.Join(base, "reg"))

	m := readManifest(t, extDir)
	if len(m.Machines) != len(hosts) {
		t.Errorf("manifest machines %v: want the %d machines", m.Machines, len(hosts))
	}
	for _, h := range hosts {
		hm := m.Machines[h.name]
		if hm.Kernel == "" || hm.NIC != "eth0" || hm.NICDriver != "veth" || hm.ClockBoundUs <= 0 || hm.Agent != h.agent {
			t.Errorf("manifest machine of %s: %+v, want kernel, NIC eth0 (veth), a clock bound and agent %s", h.name, hm, h.agent)
		}
	}
	if !slices.ContainsFunc(m.Fidelity, func(s string) bool { return strings.Contains(s, "clock") }) {
		t.Errorf("fidelity says nothing of the hosts' clocks: %v", m.Fidelity)
	}
	ext := readSummary(t, extDir, &bytes.Buffer{})
	if len(ext.Experiments) != 2 {
		t.Fatalf("external run: %d experiments, want 2 (homa, tcp)", len(ext.Experiments))
	}
	for _, e := range ext.Experiments {
		if e.RPCs.Completed == 0 || e.RPCs.Issued != e.RPCs.Completed+e.RPCs.Failed+e.RPCs.InFlight {
			t.Errorf("experiment %s: books %+v: want completed RPCs that balance", e.Name, e.RPCs)
		}
	}

	// The same traffic emulated, for the structure to compare against.
	if err := exec.Command("/usr/bin/python3", "-c", "import mininet.net").Run(); err != nil {
		t.Logf("Mininet is not installed: the external run is not compared with an emulated one")
		return
	}
	emuFile := filepath.Join(base, "emulated.yaml")
	if err := os.WriteFile(emuFile, []byte("name: external\ntopology:\n  kind: star\n  hosts: 3\n"+externalTraffic), 0o644); err != nil {
		t.Fatal(err)
	}
	emuDir := filepath.Join(base, "emu-run")
	runScenario(t, ctx, bin, emuFile, emuDir, filepath.Join(base, "reg-emu"))
	if a, b := runFiles(t, emuDir), runFiles(t, extDir); !slices.Equal(a, b) {
		t.Errorf("run directories differ:\nemulated %v\nexternal %v", a, b)
	}
	if a, b := summaryKeys(t, emuDir), summaryKeys(t, extDir); !slices.Equal(a, b) {
		t.Errorf("summary.json keys differ:\nemulated %v\nexternal %v", a, b)
	}
	t.Logf("run directories alike: %v", runFiles(t, extDir))
	t.Logf("external run's machines %+v, fidelity %q", m.Machines, m.Fidelity)
}

// testTag is a fresh run-like tag ("hb" and five hex digits), so that
// `homatb clean` recognises the interfaces if the test dies.
func testTag(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "hb" + hex.EncodeToString(b)[:5]
}

// sh runs a command and fails the test with its output if it fails.
func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// makeNamespaces makes each host's namespace with its data link (to be a
// switch port) and its control link, and removes them at the end.
func makeNamespaces(t *testing.T, hosts []nsHost) {
	for i, h := range hosts {
		t.Cleanup(func() {
			_ = exec.Command("ip", "netns", "del", h.ns).Run() // takes the veths with it
			_ = exec.Command("ip", "link", "del", h.swIntf).Run()
			_ = exec.Command("ip", "link", "del", h.ctlIntf).Run()
		})
		in := func(args ...string) { sh(t, append([]string{"ip", "netns", "exec", h.ns}, args...)...) }
		sh(t, "ip", "netns", "add", h.ns)
		sh(t, "ip", "link", "add", h.swIntf, "type", "veth", "peer", "name", "eth0", "netns", h.ns)
		sh(t, "ip", "link", "add", h.ctlIntf, "type", "veth", "peer", "name", "ctl0", "netns", h.ns)
		in("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
		in("ip", "link", "set", "lo", "up")
		in("ip", "link", "set", "eth0", "address", h.mac, "mtu", "1500", "up")
		in("ip", "addr", "add", h.data+"/24", "dev", "eth0")
		in("ip", "link", "set", "ctl0", "up")
		in("ip", "addr", "add", h.ctl+"/30", "dev", "ctl0")
		sh(t, "sysctl", "-qw", "net.ipv6.conf."+h.swIntf+".disable_ipv6=1")
		sh(t, "ip", "link", "set", h.swIntf, "mtu", "1500", "up")
		sh(t, "ip", "link", "set", h.ctlIntf, "up")
		sh(t, "ip", "addr", "add", fmt.Sprintf("10.199.%d.1/30", i+1), "dev", h.ctlIntf)
		// As Mininet's hosts: no offloads (the switch sees real frames),
		// static ARP.
		for _, f := range []string{"rx", "tx", "sg", "tso", "gso", "gro"} {
			_ = exec.Command("ethtool", "-K", h.swIntf, f, "off").Run()
			_ = exec.Command("ip", "netns", "exec", h.ns, "ethtool", "-K", "eth0", f, "off").Run()
		}
		for _, o := range hosts {
			if o.name != h.name {
				in("ip", "neigh", "replace", o.data, "lladdr", o.mac, "dev", "eth0", "nud", "permanent")
			}
		}
	}
}

// start starts a process for the test's life, its output in log.
func start(t *testing.T, ctx context.Context, log string, args ...string) {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
	})
}

func freeTestPort(t *testing.T) int {
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitForAgents waits until every agent logs that it listens.
func waitForAgents(t *testing.T, ctx context.Context, hosts []nsHost, logs string) {
	for _, h := range hosts {
		log := filepath.Join(logs, "agent-"+h.name+".log")
		for {
			b, _ := os.ReadFile(log)
			if bytes.Contains(b, []byte("control API listening")) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("agent %s not listening: %s", h.name, b)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// refusesStrangers calls an agent without the run's credentials, in plain
// text and over TLS without a client certificate: both are refused, and
// the agent's log says so.
func refusesStrangers(t *testing.T, ctx context.Context, h nsHost, log string) {
	t.Helper()
	cc, err := grpc.NewClient(h.agent, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := agentpb.NewAgentClient(cc).Start(cctx, &agentpb.StartRequest{}); err == nil {
		t.Fatal("agent started a workload for a client without the run's credentials")
	}
	a, err := agents.DialRemote(cctx, h.name, h.agent, nil)
	if err == nil {
		a.Close()
		t.Fatal("a plain-text orchestrator reached an agent listening with TLS")
	}
	if !strings.Contains(err.Error(), "topology.external.certs") {
		t.Errorf("plain-text orchestrator's error %q does not point at the credentials", err)
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(log); bytes.Contains(b, []byte("refused control connection")) {
			return
		}
	}
	t.Errorf("agent %s's log does not say it refused a connection", h.name)
}

// runScenario runs `homatb run` and fails with its output and log when it
// fails.
func runScenario(t *testing.T, ctx context.Context, bin, file, dir, reg string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "run", file, "--run-dir", dir, "--registry", reg, "--binary", bin)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		logs, _ := os.ReadFile(filepath.Join(dir, "logs", "homatb.log"))
		t.Fatalf("homatb run %s: %v\n%s\n%s", filepath.Base(file), err, out.String(), logs)
	}
}

// runFiles lists a run directory's files and directories, logs and the
// agents' own files aside (which processes log where differs by design).
func runFiles(t *testing.T, dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "logs" || rel == "agents" || rel == "mininet" {
			return fs.SkipDir
		}
		// The final statistics an emulated switch writes as it exits: a
		// switch the run did not start outlives it.
		if rel != "." && rel != filepath.Join("switch", "s1-final.json") {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// summaryKeys lists summary.json's keys two levels down, experiments'
// keys included (the first experiment's stands for all).
func summaryKeys(t *testing.T, dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		out = append(out, k)
		switch v := doc[k].(type) {
		case map[string]any:
			for _, k2 := range slices.Sorted(maps.Keys(v)) {
				out = append(out, k+"."+k2)
			}
		case []any:
			if len(v) > 0 {
				if e, ok := v[0].(map[string]any); ok {
					for _, k2 := range slices.Sorted(maps.Keys(e)) {
						out = append(out, k+"[]."+k2)
					}
				}
			}
		}
	}
	return out
}
