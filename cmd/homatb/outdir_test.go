package main

import (
	"errors"
	"testing"
)

// TestOutDir: --out is a parent directory and --run-dir an exact one for
// every command that writes a directory; both at once is a usage error.
func TestOutDir(t *testing.T) {
	for _, tt := range []struct {
		parent, exact, want string
		usage               bool
	}{
		{"", "", "", false},
		{"results", "", "results/compare-a-vs-b", false},
		{"", "/tmp/x", "/tmp/x", false},
		{"results", "/tmp/x", "", true},
	} {
		got, err := outDir(tt.parent, tt.exact, "compare-a-vs-b")
		var ue usageError
		if got != tt.want || (err != nil) != tt.usage || (err != nil && !errors.As(err, &ue)) {
			t.Errorf("outDir(%q, %q) = %q, %v; want %q, usage error %v", tt.parent, tt.exact, got, err, tt.want, tt.usage)
		}
	}
}
