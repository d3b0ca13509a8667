// Package mininet carries the Python side of the testbed (the runner the
// orchestrator drives and the Mininet classes also usable with
// `mn --custom`), embedded so that the homatb binary is self-contained.
package mininet

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
)

//go:embed runner.py homatb_mn.py
var files embed.FS

// Runner is the file name of the runner script among the written files.
const Runner = "runner.py"

// WriteTo writes the Python files into dir (created if needed), so a run
// directory records exactly the code that built its network.
func WriteTo(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mininet files: %w", err)
	}
	entries, err := files.ReadDir(".")
	if err != nil {
		return fmt.Errorf("mininet files: %w", err)
	}
	for _, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			return fmt.Errorf("mininet files: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return fmt.Errorf("mininet files: %w", err)
		}
	}
	return nil
}
