// Package docs holds the user documentation; its test checks that every
// YAML block in the README and the docs is valid as written.
package docs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/testbed/scenario"
)

// yamlBlock is one ```yaml block of a Markdown file.
type yamlBlock struct {
	file string
	line int // of the block's first line
	text string
}

// yamlBlocks returns the ```yaml blocks of a Markdown file.
func yamlBlocks(t *testing.T, path string) []yamlBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []yamlBlock
	var cur *yamlBlock
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```yaml":
			cur = &yamlBlock{file: path, line: i + 2}
		case cur != nil && strings.HasPrefix(strings.TrimSpace(line), "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return out
}

// fragmentBase is the scenario a fragment (a block with some top-level
// keys only) is read into: its keys replace the base's.
const fragmentBase = `name: fragment
topology: {kind: star, hosts: 4}
transports:
  - name: homa
  - name: tcp
phases:
  - {name: bulk, clients: [h2-h3], servers: [h1], sizes: "fixed:1000", arrivals: closed, max_outstanding: 1}
duration: 10s
`

// TestYAMLBlocksValidate: a block that is a whole scenario validates as
// homatb validate would; a fragment validates inside a small scenario; a
// controller topology (switches and hosts, no phases) loads with
// homatb controller's loader.
func TestYAMLBlocksValidate(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../README.md")
	n := 0
	for _, f := range files {
		for _, b := range yamlBlocks(t, f) {
			n++
			var top map[string]any
			if err := yaml.Unmarshal([]byte(b.text), &top); err != nil {
				t.Errorf("%s:%d: block is not YAML: %v", b.file, b.line, err)
				continue
			}
			_, hasPhases := top["phases"]
			_, hasName := top["name"]
			_, hasSwitches := top["switches"]
			switch {
			case hasSwitches && !hasPhases:
				path := filepath.Join(t.TempDir(), "topology.yaml")
				if err := os.WriteFile(path, []byte(b.text), 0o644); err != nil {
					t.Fatal(err)
				}
				if _, err := controller.LoadTopology(path); err != nil {
					t.Errorf("%s:%d: controller topology: %v", b.file, b.line, err)
				}
			case hasPhases && hasName:
				checkScenario(t, b, b.text, true)
			default:
				var base map[string]any
				if err := yaml.Unmarshal([]byte(fragmentBase), &base); err != nil {
					t.Fatal(err)
				}
				for k, v := range top {
					base[k] = v
				}
				text, err := yaml.Marshal(base)
				if err != nil {
					t.Fatal(err)
				}
				checkScenario(t, b, string(text), false)
			}
		}
	}
	if n == 0 {
		t.Fatal("no YAML blocks found in the docs")
	}
}

// checkScenario validates one block's scenario text; whole is true when
// text is the block itself, so the errors' lines can be the file's.
func checkScenario(t *testing.T, b yamlBlock, text string, whole bool) {
	t.Helper()
	src, err := scenario.Parse(b.file, []byte(text))
	if err == nil {
		_, err = src.Plan(scenario.Options{})
	}
	var es scenario.Errors
	switch {
	case err == nil:
	case whole && errors.As(err, &es):
		for _, e := range es {
			e.Line += b.line - 1
		}
		t.Errorf("scenario block:\n%v", es)
	default:
		t.Errorf("%s:%d: fragment in a small scenario: %v", b.file, b.line, err)
	}
}
