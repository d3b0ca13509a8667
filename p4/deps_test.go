package p4

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/homatb/homatb/"

// TestDependenciesStayInP4 checks the rule docs/architecture.md states:
// the switch (every package under p4/, tests aside) links nothing of this
// module outside p4/ and internal/ except Homa's wire leaf
// (wire, whose layout the switch parses). Other modules
// (P4Runtime, gRPC) are allowed.
func TestDependenciesStayInP4(t *testing.T) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to list the dependencies with")
		}
	}
	cmd := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"p4/...")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	allowed := func(p string) bool {
		rel, ours := strings.CutPrefix(p, module)
		return !ours || rel == "p4" || strings.HasPrefix(rel, "p4/") || strings.HasPrefix(rel, "internal/") ||
			rel == "wire"
	}
	var ours int
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) {
			ours++
		}
		if !allowed(p) {
			t.Errorf("p4 links %s", p)
		}
	}
	if ours < 5 {
		t.Errorf("go list found %d packages of this module under p4: the pattern matched nothing useful\n%s", ours, out)
	}
}
