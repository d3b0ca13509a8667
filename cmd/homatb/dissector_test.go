package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/wire/dissector"
)

// runCmd runs homatb with args and returns its standard output.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

// lastLine is the last line s prints.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestDissectorCmd(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"dissector"}, filepath.Join(home, "cache", "homatb", "homatb.lua")},
		{[]string{"dissector", "--out", filepath.Join(home, "x", "d.lua")}, filepath.Join(home, "x", "d.lua")},
		{[]string{"dissector", "--install"}, filepath.Join(home, ".local", "lib", "wireshark", "plugins", "homatb.lua")},
	} {
		out, err := runCmd(t, tt.args...)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got := lastLine(out); got != tt.want {
			t.Errorf("%v: last line %q, want %q", tt.args, got, tt.want)
		}
		b, err := os.ReadFile(tt.want)
		if err != nil || !bytes.Equal(b, dissector.Lua) {
			t.Errorf("%v: %s is not the dissector (%v)", tt.args, tt.want, err)
		}
	}
	if _, err := runCmd(t, "dissector", "--install", "--out", "x.lua"); exitCode(err) != 2 {
		t.Errorf("--install with --out: %v, want a usage error", err)
	}
}
