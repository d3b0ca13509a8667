package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// issueRef matches a reference to the project's issue tracker: "#33",
// "issue 33", "issues 19 and 20", "Issue #17". "homatb#2" (a benchmark
// variant's name) is no reference: a # must follow a space or bracket.
var issueRef = regexp.MustCompile(`(?i)(\bissues? #?\d+|(^|[\s(\[])#\d+\b)`)

// TestNoIssueNumbers: the README and the docs speak of the product, not of
// how it was built: no issue numbers (a reader has no tracker to look them
// up in).
func TestNoIssueNumbers(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs found: %v", err)
	}
	files = append(files, "../README.md")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := issueRef.FindString(line); m != "" {
				t.Errorf("%s:%d: issue number %q: say what the product does instead", f, i+1, strings.TrimSpace(m))
			}
		}
	}
}

// TestIssueRefMatches: the pattern catches what the docs used to cite and
// leaves benchmark variant names and prose alone.
func TestIssueRefMatches(t *testing.T) {
	for s, want := range map[string]bool{
		"see #33":                        true,
		"(#17) reports":                  true,
		"Targets (issue 2): met":         true,
		"Fixed in Issue #17":             true,
		"issues 19 and 20":               true,
		`VARIANTS="homatb homatb#2"`:     false,
		"the sender's issue and the ack": false,
		"a C# program":                   false,
	} {
		if got := issueRef.MatchString(s); got != want {
			t.Errorf("%q: match %v, want %v", s, got, want)
		}
	}
}
