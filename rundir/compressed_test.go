package rundir

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestOpenRunFile reads a run file plain, zstd- and gzip-compressed, each
// alone in its directory, and says fs.ErrNotExist when none is there.
func TestOpenRunFile(t *testing.T) {
	const name, text = "served.csv", "experiment,transport\nexp,homa\n"
	compress := map[string]func(io.Writer) io.WriteCloser{
		"": func(w io.Writer) io.WriteCloser { return nopCloser{w} },
		ZstdExt: func(w io.Writer) io.WriteCloser {
			enc, err := zstd.NewWriter(w)
			if err != nil {
				t.Fatal(err)
			}
			return enc
		},
		GzipExt: func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) },
	}
	for ext, mk := range compress {
		t.Run("ext"+ext, func(t *testing.T) {
			dir := t.TempDir()
			var b bytes.Buffer
			w := mk(&b)
			if _, err := io.WriteString(w, text); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+ext), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			rc, path, err := OpenRunFile(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, err := io.ReadAll(rc)
			if err != nil || string(got) != text || path != filepath.Join(dir, name+ext) {
				t.Errorf("read %q from %s (%v), want %q from %s", got, path, err, text, name+ext)
			}
		})
	}
	if _, _, err := OpenRunFile(t.TempDir(), name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no file: %v, want fs.ErrNotExist", err)
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestCompressLarge: a per-RPC file at or above the threshold is replaced
// by its zstd copy, which OpenRunFile reads back byte for byte; a smaller
// one, and files that are not per-RPC, stay as they are.
func TestCompressLarge(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("exp,1,2,3,homa\n"), 4096) // 61,440 bytes
	small := []byte("exp,1\n")
	for name, b := range map[string][]byte{"rpcs.csv": big, "served.csv": small, "hosts.csv": big, "anatomy.csv": big} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done, err := CompressLarge(dir, int64(len(big)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(done, " ") != "rpcs.csv anatomy.csv" {
		t.Fatalf("compressed %v, want [rpcs.csv anatomy.csv]", done)
	}
	if _, err := os.Stat(filepath.Join(dir, "rpcs.csv")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("rpcs.csv still there (%v)", err)
	}
	for _, name := range []string{"served.csv", "hosts.csv"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	rc, path, err := OpenRunFile(dir, "rpcs.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "rpcs.csv.zst" || !bytes.Equal(got, big) {
		t.Errorf("read %d bytes from %s, want the %d written", len(got), path, len(big))
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() >= int64(len(big))/8 {
		t.Errorf("compressed to %v bytes (%v), want under an eighth", fi.Size(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 4 {
		t.Errorf("directory holds %d entries, want 4 (no temporary file left)", len(ents))
	}
	// Again: nothing left to do.
	if done, err := CompressLarge(dir, 1); err != nil || len(done) != 1 || done[0] != "served.csv" {
		t.Errorf("second pass compressed %v (%v), want [served.csv]", done, err)
	}
}
