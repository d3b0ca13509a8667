package switches

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeTool writes an executable shell script named name into dir.
func fakeTool(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestBMv2ChainProblems(t *testing.T) {
	source := []byte("/* tor.p4 */\n")
	sum := sha256.Sum256(source)
	good := hex.EncodeToString(sum[:]) + "  p4/tor.p4\n"
	const (
		okSwitch = "echo 1.15.5; exit 0"
		okCLI    = "echo 'usage: simple_switch_CLI'; exit 0"
		noThrift = "echo 'Traceback (most recent call last):' >&2; echo \"ModuleNotFoundError: No module named 'thrift'\" >&2; exit 1"
		noLib    = "echo 'simple_switch_grpc: error while loading shared libraries: libpiprotogrpc.so.0' >&2; exit 127"
		hangs    = "sleep 5"
	)
	cases := []struct {
		name          string
		sw, cli       string // script bodies; "" leaves the tool out of PATH
		json, stamp   string // file contents; "" leaves the file out
		want          []string
		wantProblems  int
		shortDeadline bool
	}{
		{name: "all present and current", sw: okSwitch, cli: okCLI, json: "{}", stamp: good},
		{name: "no simple_switch_grpc", cli: okCLI, json: "{}", stamp: good, wantProblems: 1,
			want: []string{"simple_switch_grpc on PATH", "docs/bmv2.md"}},
		{name: "simple_switch_grpc misses a library", sw: noLib, cli: okCLI, json: "{}", stamp: good, wantProblems: 1,
			want: []string{"simple_switch_grpc does not run", "libpiprotogrpc", "ldconfig"}},
		{name: "CLI without thrift", sw: okSwitch, cli: noThrift, json: "{}", stamp: good, wantProblems: 1,
			want: []string{"simple_switch_CLI does not run", "No module named 'thrift'", "lacks thrift", "apt-get install python3-thrift"}},
		{name: "CLI hangs", sw: okSwitch, cli: hangs, json: "{}", stamp: good, wantProblems: 1, shortDeadline: true,
			want: []string{"simple_switch_CLI does not run", "no answer within"}},
		{name: "no CLI", sw: okSwitch, json: "{}", stamp: good, wantProblems: 1,
			want: []string{"simple_switch_CLI on PATH"}},
		{name: "no tor.json", sw: okSwitch, cli: okCLI, wantProblems: 1,
			want: []string{"build/tor.json, p4c's output", "make p4c"}},
		{name: "no stamp", sw: okSwitch, cli: okCLI, json: "{}", wantProblems: 1,
			want: []string{"tor.p4.sha256 is missing", "make p4c"}},
		{name: "stale tor.json", sw: okSwitch, cli: okCLI, json: "{}", stamp: strings.Repeat("ab", 32) + "  p4/tor.p4\n", wantProblems: 1,
			want: []string{"is stale", "abababababab", hex.EncodeToString(sum[:])[:12], "make p4c"}},
		{name: "nothing at all", wantProblems: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin, repo := t.TempDir(), t.TempDir()
			if tc.sw != "" {
				fakeTool(t, bin, "simple_switch_grpc", tc.sw)
			}
			if tc.cli != "" {
				fakeTool(t, bin, "simple_switch_CLI", tc.cli)
			}
			// Only the fake tools and the shell they need, and a python3
			// that is not Debian's, as with pyenv.
			fakeTool(t, bin, "python3", "exit 0")
			t.Setenv("PATH", bin+":/bin:/usr/bin")
			c := bmv2Chain{jsonPath: filepath.Join(repo, "build/tor.json"), stampPath: filepath.Join(repo, "build/tor.p4.sha256"),
				source: source, timeout: 5 * time.Second}
			if tc.shortDeadline {
				c.timeout = 200 * time.Millisecond
			}
			if err := os.MkdirAll(filepath.Join(repo, "build"), 0o755); err != nil {
				t.Fatal(err)
			}
			for path, body := range map[string]string{c.jsonPath: tc.json, c.stampPath: tc.stamp} {
				if body != "" {
					if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			ps := c.problems(context.Background())
			if len(ps) != tc.wantProblems {
				t.Fatalf("%d problems, want %d: %v", len(ps), tc.wantProblems, ps)
			}
			var text strings.Builder
			for _, p := range ps {
				if p.Fix == "" {
					t.Errorf("problem %q names no fix", p.What)
				}
				text.WriteString(p.String() + "\n")
			}
			for _, w := range tc.want {
				if !strings.Contains(text.String(), w) {
					t.Errorf("problems do not mention %q:\n%s", w, text.String())
				}
			}
		})
	}
}
