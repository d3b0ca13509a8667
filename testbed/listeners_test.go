package testbed

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// listener is one listening TCP socket of a process.
type listener struct {
	pid  int
	comm string
	addr netip.AddrPort
	// foreign are the non-loopback addresses of its network namespace,
	// read while the process ran (for wildcard listeners only).
	foreign []string
}

// bmv2 reports whether the listener is BMv2's (simple_switch_grpc, or a
// stand-in named like it).
func (l listener) bmv2() bool { return strings.HasPrefix(l.comm, "simple_switch") }

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
