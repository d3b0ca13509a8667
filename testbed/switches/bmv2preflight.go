package switches

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/testbed/preflight"
)

// BMv2StampPath is where `make p4c` records the SHA-256 of the p4/tor.p4 it
// compiled into BMv2JSONPath, so the preflight can tell a stale tor.json.
const BMv2StampPath = "build/tor.p4.sha256"

// BMv2JSONPath is where `make p4c` writes p4c's BMv2 output for tor.p4,
// relative to the directory homatb runs in (the repository).
const BMv2JSONPath = "build/tor.json"

// BMv2Problems checks BMv2's tool chain for a run on BMv2 switches: the
// two BMv2 programs, and p4c's output compiled from the tor.p4 this binary
// carries. Each problem names its fix.
func BMv2Problems(ctx context.Context) []preflight.Problem {
	c := bmv2Chain{jsonPath: BMv2JSONPath, stampPath: BMv2StampPath, source: p4.Source(), timeout: 10 * time.Second}
	return c.problems(ctx)
}

// bmv2Chain is what the BMv2 preflight checks: the two BMv2 programs on
// PATH, p4c's output and its stamp, against the tor.p4 this binary embeds.
type bmv2Chain struct {
	jsonPath, stampPath string
	// source is the tor.p4 the controller's P4Info describes.
	source []byte
	// timeout bounds each trial run of a BMv2 program.
	timeout time.Duration
}

// pythonModuleRE finds the module a Python program could not import.
var pythonModuleRE = regexp.MustCompile(`No module named '([^']+)'`)

// pythonFix says how to give the python3 that runs simple_switch_CLI (the
// first on PATH, by its "#!/usr/bin/env python3") the module it lacks.
func pythonFix(mod string) string {
	top, _, _ := strings.Cut(mod, ".")
	switch top {
	case "runtime_CLI", "sswitch_runtime", "bm_runtime", "bmpy_utils":
		return "reinstall BMv2 (make install in behavioral-model): its Python modules are missing"
	}
	pkg := map[string]string{"thrift": "python3-thrift", "six": "python3-six"}[top]
	py, err := exec.LookPath("python3")
	switch {
	case err != nil:
		return "install python3 and its module " + top
	case py == "/usr/bin/python3" && pkg != "":
		return "apt-get install " + pkg
	case pkg != "":
		return fmt.Sprintf("the python3 first on PATH (%s) lacks %s: pip install %s for it, or put /usr/bin first on PATH and apt-get install %s", py, top, top, pkg)
	}
	return fmt.Sprintf("install the Python module %s for %s, the python3 first on PATH", top, py)
}

// problems checks the whole BMv2 tool chain; each problem names its fix.
func (c bmv2Chain) problems(ctx context.Context) []preflight.Problem {
	var ps []preflight.Problem
	const build = "build BMv2 1.15 with PI (simple_switch_grpc) from source and install it (docs/bmv2.md), or use switch: {target: embedded}"
	if p, err := exec.LookPath("simple_switch_grpc"); err != nil {
		ps = append(ps, preflight.Problem{What: "switch target bmv2 needs simple_switch_grpc on PATH (Debian 12 does not package it)", Fix: build})
	} else if out, err := c.try(ctx, p, "--version"); err != nil {
		ps = append(ps, preflight.Problem{What: fmt.Sprintf("simple_switch_grpc does not run: %v: %s", err, lastLine(out)), Fix: "reinstall BMv2 and PI, then ldconfig (a shared library is missing or stale)"})
	}
	if p, err := exec.LookPath("simple_switch_CLI"); err != nil {
		ps = append(ps, preflight.Problem{What: "switch target bmv2 needs simple_switch_CLI on PATH (it sets the queue rates and depths)", Fix: build})
	} else if out, err := c.try(ctx, p, "--help"); err != nil {
		fix := "check that simple_switch_CLI runs: simple_switch_CLI --help"
		if m := pythonModuleRE.FindStringSubmatch(out); m != nil {
			fix = pythonFix(m[1])
		}
		ps = append(ps, preflight.Problem{What: fmt.Sprintf("simple_switch_CLI does not run: %v: %s", err, lastLine(out)), Fix: fix})
	}
	ps = append(ps, c.jsonProblems()...)
	return ps
}

// jsonProblems checks that p4c's output exists and was compiled from the
// tor.p4 this binary carries.
func (c bmv2Chain) jsonProblems() []preflight.Problem {
	const fix = "make p4c (needs p4c-bm2-ss from p4c 1.2.5; docs/bmv2.md)"
	if _, err := os.Stat(c.jsonPath); err != nil {
		return []preflight.Problem{{What: "switch target bmv2 needs " + c.jsonPath + ", p4c's output for p4/tor.p4", Fix: fix}}
	}
	b, err := os.ReadFile(c.stampPath)
	if err != nil {
		return []preflight.Problem{{What: fmt.Sprintf("cannot tell which tor.p4 %s was compiled from: %s is missing", c.jsonPath, c.stampPath), Fix: fix}}
	}
	got, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	sum := sha256.Sum256(c.source)
	if want := hex.EncodeToString(sum[:]); got != want {
		return []preflight.Problem{{What: fmt.Sprintf("%s is stale: compiled from a tor.p4 with SHA-256 %.12s…, this homatb carries %.12s…",
			c.jsonPath, got, want), Fix: fix + "; if p4/tor.p4 is current, make build first"}}
	}
	return nil
}

// try runs a program once, bounded, and returns what it printed.
func (c bmv2Chain) try(ctx context.Context, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A child that keeps the output open must not hold the preflight.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(err, fmt.Errorf("no answer within %v", c.timeout))
	}
	return out.String(), err
}

// lastLine is the last non-empty line of a program's output, where a
// Python traceback says what failed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
