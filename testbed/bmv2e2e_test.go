package testbed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	if _, err := os.Stat(filepath.Join("..", BMv2JSONPath)); err != nil {
		t.Skipf("no %s: make p4c (needs p4c-bm2-ss)", BMv2JSONPath)
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

// listener is one listening TCP socket of a process.
type listener struct {
	pid  int
	comm string
	addr netip.AddrPort
	// foreign are the non-loopback addresses of its network namespace,
	// read while the process ran (for wildcard listeners only).
	foreign []string
}

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
					seen[fmt.Sprintf("%s %d %s", l.comm, l.pid, l.addr)] = l
				}
			}
		}
	}
	m := readManifest(t, dir)
	t.Cleanup(func() { assertNothingLeft(t, reg, m.Tag) })
	if runErr != nil {
		t.Fatalf("run: %v\n%s", runErr, out.String())
	}
	bmv2 := 0
	for key, l := range seen {
		if strings.HasPrefix(l.comm, "simple_switch") {
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

// runTag is the run's tag once manifest.json names it.
func runTag(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return ""
	}
	var m struct{ Tag string }
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.Tag
}

// runListeners returns the listening TCP sockets of the processes whose
// environment carries HOMATB_RUN=tag.
func runListeners(t *testing.T, tag string) []listener {
	t.Helper()
	want := []byte("HOMATB_RUN=" + tag + "\x00")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []listener
	for _, p := range procs {
		env, err := os.ReadFile(p + "/environ")
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(filepath.Base(p), &pid); err != nil {
			continue
		}
		comm, _ := os.ReadFile(p + "/comm")
		inodes := socketInodes(p)
		for _, f := range []string{"/net/tcp", "/net/tcp6"} {
			for inode, addr := range listening(p + f) {
				if !inodes[inode] {
					continue
				}
				l := listener{pid: pid, comm: strings.TrimSpace(string(comm)), addr: addr}
				if addr.Addr().IsUnspecified() {
					l.foreign = nsAddrs(t, p+"/ns/net")
				}
				out = append(out, l)
			}
		}
	}
	return out
}

// socketInodes are the inodes of the sockets a process holds open.
func socketInodes(proc string) map[string]bool {
	fds, _ := filepath.Glob(proc + "/fd/*")
	out := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			out[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	return out
}

// listening parses /proc/<pid>/net/tcp{,6}: listening sockets (state 0A)
// by inode.
func listening(path string) map[string]netip.AddrPort {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]netip.AddrPort{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" {
			continue
		}
		if ap, ok := procNetAddr(fs[1]); ok {
			out[fs[9]] = ap
		}
	}
	return out
}

// procNetAddr decodes a /proc/net/tcp address: hex, 32-bit words in host
// (little-endian) order, then the port.
func procNetAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(h)
	port, perr := hex.DecodeString(p)
	if !ok || err != nil || perr != nil || len(port) != 2 || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a.Unmap(), uint16(port[0])<<8|uint16(port[1])), true
}

// nsAddrs lists the non-loopback addresses of a network namespace.
func nsAddrs(t *testing.T, ns string) []string {
	t.Helper()
	out, err := exec.Command("nsenter", "--net="+ns, "--", "ip", "-j", "addr", "show").Output()
	if err != nil {
		// The process ended between the listing and now: nothing to judge.
		t.Logf("addresses of %s: %v", ns, err)
		return nil
	}
	var links []struct {
		AddrInfo []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		t.Fatalf("ip -j addr in %s: %v", ns, err)
	}
	var bad []string
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if ip, err := netip.ParseAddr(a.Local); err != nil || !ip.IsLoopback() {
				bad = append(bad, a.Local)
			}
		}
	}
	return bad
}

func TestProcNetAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:2382":                         "0.0.0.0:9090",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"0000000000000000FFFF00000100007F:0050": "127.0.0.1:80",
		"00000000000000000000000000000000:2382": "[::]:9090",
	} {
		got, ok := procNetAddr(in)
		if !ok || got.String() != want {
			t.Errorf("procNetAddr(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	if _, ok := procNetAddr("zz:1"); ok {
		t.Error("procNetAddr accepted a bad address")
	}
}
