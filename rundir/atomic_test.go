package rundir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteJSON writes over an existing file and checks the result, its
// mode and that no temporary file is left; a value JSON cannot encode
// leaves the old file as it was.
func TestWriteJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.json")
	for _, tt := range []struct {
		name    string
		v       any
		wantErr bool
		want    string
	}{
		{"new file", map[string]int{"a": 1}, false, "{\n  \"a\": 1\n}\n"},
		{"replaced", map[string]int{"b": 2}, false, "{\n  \"b\": 2\n}\n"},
		{"unencodable keeps the old file", map[string]any{"c": make(chan int)}, true, "{\n  \"b\": 2\n}\n"},
	} {
		err := WriteJSON(path, tt.v)
		if (err != nil) != tt.wantErr {
			t.Fatalf("%s: err %v, want error %v", tt.name, err, tt.wantErr)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != tt.want {
			t.Errorf("%s: file %q (%v), want %q", tt.name, b, err, tt.want)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v (%v), want 0644", tt.name, fi.Mode().Perm(), err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s: directory holds %d files, want only x.json", tt.name, len(ents))
		}
	}
	if err := WriteJSON(filepath.Join(dir, "missing", "y.json"), 1); err == nil {
		t.Error("a missing directory was not an error")
	}
	var m map[string]int
	if b, _ := os.ReadFile(path); json.Unmarshal(b, &m) != nil || m["b"] != 2 {
		t.Errorf("file does not decode back: %v", m)
	}
}
