package rundir

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
