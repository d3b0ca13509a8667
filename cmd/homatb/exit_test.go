package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oneTransport is a valid scenario of one experiment.
const oneTransport = `name: t
topology: {kind: star, hosts: 3}
transports:
  - name: homa
phases:
  - {name: bulk, clients: [h2], servers: [h1], sizes: "fixed:1000", arrivals: closed, max_outstanding: 1}
duration: 1s
`

// TestExitCodes runs homatb's commands in process and checks the exit code
// each outcome maps to, and what it prints.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(oneTransport), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(oneTransport, "name: homa", "name: dctcp", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	tcp := filepath.Join(dir, "tcp.yaml")
	if err := os.WriteFile(tcp, []byte(strings.Replace(oneTransport, "  - name: homa\n", "  - name: homa\n  - name: tcp\n    tcp: {congestion: bbr}\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	simFile := filepath.Join(dir, "simfile.yaml")
	if err := os.WriteFile(simFile, []byte(oneTransport+"simulated: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sim := filepath.Join(dir, "sim")
	for _, tc := range []struct {
		name    string
		args    []string
		stdin   string
		code    int
		wantOut string
		wantErr string
	}{
		{"valid, one experiment", []string{"validate", good}, "", exitOK, "good.yaml: ok, 1 experiment\n", ""},
		{"valid on stdin", []string{"validate", "-"}, oneTransport, exitOK, "-: ok, 1 experiment\n", ""},
		{"invalid on stdin", []string{"validate", "-"}, "name: t\ntopology: {kind: star\n", exitUsage, "", "<stdin>:2: topology: a mapping opened with { is not closed"},
		{"invalid file", []string{"validate", bad}, "", exitUsage, "", "bad.yaml:4: transports[0].name"},
		{"no file", []string{"validate"}, "", exitUsage, "", "requires at least 1 arg"},
		{"unknown command", []string{"valdate"}, "", exitUsage, "", `unknown command "valdate"; did you mean validate?`},
		{"unknown flag", []string{"run", "--nope", good}, "", exitUsage, "", "unknown flag: --nope"},
		{"bad flag value", []string{"run", "--repetitions", "500", good}, "", exitUsage, "", "--repetitions: expected 1 to 100"},
		{"invalid scenario to run", []string{"run", bad}, "", exitUsage, "", "dctcp is kernel TCP"},
		{"dry run", []string{"run", "--dry-run", good}, "", exitOK, "1 experiment, about", ""},
		{"report of no run", []string{"report", filepath.Join(dir, "none")}, "", exitFailed, "", "none"},
		{"version", []string{"version"}, "", exitOK, "homatb ", ""},
		{"simulate refuses BBR", []string{"validate", "--simulate", tcp}, "", exitUsage, "", "tcp.yaml:6: transports[1].tcp.congestion: bbr is emulation-only"},
		{"only names none", []string{"run", "--dry-run", "--only", "ndp", good}, "", exitUsage, "", `no configuration of this scenario is "ndp" (it has homa)`},
		{"simulated run", []string{"run", "--simulate", "--run-dir", sim, good}, "", exitOK, "(simulated)", ""},
		{"simulated: true runs in the twin without the flag", []string{"run", "--run-dir", filepath.Join(dir, "sim2"), simFile}, "", exitOK, "(simulated)", ""},
		{"compare into an exact directory", []string{"compare", sim, sim, "--run-dir", filepath.Join(dir, "cmp")}, "", exitOK, filepath.Join(dir, "cmp", "compare.html"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := newRootCmd()
			var out, errOut bytes.Buffer
			root.SetArgs(tc.args)
			root.SetIn(strings.NewReader(tc.stdin))
			root.SetOut(&out)
			root.SetErr(&errOut)
			err := root.Execute()
			if err != nil {
				errOut.WriteString(err.Error())
			}
			if code := exitCode(err); code != tc.code {
				t.Errorf("exit code %d, want %d (error: %v)", code, tc.code, err)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("stdout %q, want it to contain %q", out.String(), tc.wantOut)
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errOut.String(), tc.wantErr)
			}
		})
	}
}

// TestNoBackticksInFlagUsage: pflag takes `text` in a usage for the name
// of the flag's value, so "from `homatb certs`" printed as
// "--tls-cert homatb certs".
func TestNoBackticksInFlagUsage(t *testing.T) {
	if bad := flagUsagesWithBackticks(newRootCmd()); len(bad) > 0 {
		t.Errorf("flag usages with a backtick: %v", bad)
	}
}
