package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/testbed/scenario"
)

// TestRunRefusesUsedRunDir: a run directory an earlier run left is refused
// before anything starts, so two runs' records can never mix.
func TestRunRefusesUsedRunDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rpcs.csv"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(t.Context(), &scenario.Plan{Base: &scenario.Scenario{Name: "x"}}, Options{RunDir: dir})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Run in a used directory: %v, want a \"not empty\" error", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "rpcs.csv")); string(b) != "old\n" {
		t.Errorf("the earlier run's file was touched: %q", b)
	}
}
