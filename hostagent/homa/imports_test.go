package homa_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsPointOneWay keeps the dependencies one way: the engine knows
// nothing of the agent's control API, and homaconf and wire stay leaves
// that scenario validation can import without the engine, gRPC or
// protobuf. (Direct imports suffice: wire imports only the standard
// library, which the last case checks.)
func TestImportsPointOneWay(t *testing.T) {
	std := func(p string) bool { return !strings.Contains(strings.Split(p, "/")[0], ".") }
	for _, tt := range []struct {
		dir     string
		allowed func(string) bool
	}{
		{".", func(p string) bool {
			return !strings.HasSuffix(p, "/agentpb") && !strings.HasPrefix(p, "google.golang.org/")
		}},
		{"homaconf", func(p string) bool { return std(p) || p == "github.com/homatb/homatb/wire" }},
		{"../../wire", std},
	} {
		pkg, err := build.ImportDir(tt.dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", tt.dir, err)
		}
		for _, p := range pkg.Imports {
			if !tt.allowed(p) {
				t.Errorf("package %s imports %s", pkg.Name, p)
			}
		}
	}
}
