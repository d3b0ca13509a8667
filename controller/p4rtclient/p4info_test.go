package p4rtclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/p4"
	"google.golang.org/protobuf/proto"
)

func TestLoadP4InfoFormats(t *testing.T) {
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := proto.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"tor.p4info.txtpb": p4.P4InfoText(),
		"tor.p4info.bin":   bin,
		"tor.p4info":       p4.P4InfoText(), // no known extension: guessed
		"tor.p4info.raw":   bin,
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := LoadP4Info(path)
		if err != nil {
			t.Errorf("LoadP4Info(%s): %v", name, err)
			continue
		}
		if !proto.Equal(got, info) {
			t.Errorf("LoadP4Info(%s) differs from the embedded P4Info", name)
		}
	}
}

func TestLoadP4InfoErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, want string
	}{
		{"garbage.txtpb", "tables { preamble { id: oops } }", "as text"},
		{"dup.txtpb", `tables { preamble { id: 1 name: "a" } } tables { preamble { id: 1 name: "b" } }`, "already used"},
		{"missing.txtpb", "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if tt.content != "" {
				if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadP4Info(path)
			if err == nil {
				t.Fatal("LoadP4Info succeeded on a bad file")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q should name %s and say %q", err, path, tt.want)
			}
		})
	}
}
