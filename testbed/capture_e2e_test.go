package testbed

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// checkSmokeCaptures checks smoke.yaml's captures of smoke-homa (h1's NIC
// and the switch's port toward h1): each file is in the run directory as
// the manifest counts it, beside the dissector, and, where tshark is
// installed, tshark with the run's dissector decodes every Homa packet in
// them with its type and RPC id and calls none malformed or invalid, and
// the RPCs' DATA and GRANTs are there.
func checkSmokeCaptures(t *testing.T, dir string, m *Manifest) {
	t.Helper()
	var caps []rundir.Capture
	for _, e := range m.Experiments {
		switch e.Name {
		case "smoke-homa":
			caps = e.Captures
		default:
			if len(e.Captures) != 0 {
				t.Errorf("%s has captures; smoke.yaml asks for smoke-homa's only", e.Name)
			}
		}
	}
	if len(caps) != 2 {
		t.Fatalf("smoke-homa has %d captures, want h1 and s1-h1: %+v", len(caps), caps)
	}
	lua := filepath.Join(dir, rundir.CapturesDir, rundir.DissectorFile)
	if _, err := os.Stat(lua); err != nil {
		t.Errorf("no dissector beside the captures: %v", err)
	}
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Log("tshark is not installed (scripts/install-deps.sh installs it): the captures are not decoded")
	}
	for _, c := range caps {
		st, err := os.Stat(filepath.Join(dir, c.File))
		if err != nil || c.Error != "" || c.Packets == 0 || st.Size() != c.Bytes || c.Snaplen != 128 {
			t.Errorf("capture %+v: file %v", c, err)
			continue
		}
		if tshark == "" {
			continue
		}
		run := func(args ...string) string {
			cmd := exec.Command(tshark, append([]string{"-n", "-X", "lua_script:" + lua, "-r", filepath.Join(dir, c.File)}, args...)...)
			home := t.TempDir() // no installed copy of the dissector interferes
			cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil || strings.Contains(errOut.String(), "Lua") {
				t.Fatalf("%v: %v\n%s", cmd.Args, err, errOut.String())
			}
			return out.String()
		}
		// Per direction (pcapng interface 0: received, 1: sent), the
		// packets of each type.
		types := [2]map[string]int{{}, {}}
		lines := strings.Split(strings.TrimSpace(run("-Y", "ip.proto == 146", "-T", "fields", "-e", "frame.interface_id", "-e", "homatb.type", "-e", "homatb.rpc_id")), "\n")
		for _, l := range lines {
			f := strings.Split(l, "\t")
			if len(f) != 3 || (f[0] != "0" && f[0] != "1") || f[1] == "" || f[2] == "" {
				t.Errorf("%s: a Homa packet decoded without direction, type or RPC id: %q", c.File, l)
				break
			}
			types[f[0][0]-'0'][f[1]]++
		}
		// h1 serves h2's 100 KB requests: DATA toward h1, GRANTs from it;
		// at the switch's port, what h1 sends arrives (in), what goes to
		// h1 leaves (out).
		toH1, fromH1 := types[0], types[1]
		if strings.HasPrefix(c.Point, "switch") {
			toH1, fromH1 = types[1], types[0]
		}
		if toH1["0x10"] < 100 || fromH1["0x11"] < 100 {
			t.Errorf("%s: types toward h1 %v, from h1 %v; want DATA (0x10) toward h1 and GRANTs (0x11) from it", c.File, toH1, fromH1)
		}
		if bad := strings.TrimSpace(run("-Y", "homatb.malformed || homatb.invalid || _ws.malformed")); bad != "" {
			t.Errorf("%s: packets tshark calls malformed or invalid:\n%s", c.File, bad)
		}
		t.Logf("%s (%s): %d packets; Homa packets by type: in %v, out %v", c.File, c.Point, c.Packets, types[0], types[1])
	}
}
