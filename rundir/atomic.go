package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteJSON writes v as indented JSON (and a final newline) to path
// atomically: into a temporary file of the same directory, then renamed,
// so a reader never sees half a file even when the writer is killed
// mid-write. The file is readable by all (0644), as a run directory's
// files are.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// writeAtomic is WriteAtomic for a writer that needs only io.Writer.
func writeAtomic(path string, write func(io.Writer) error) error {
	return WriteAtomic(path, func(f *os.File) error { return write(f) })
}

// WriteAtomic writes path by write into a temporary file of the same
// directory (readable by all, 0644), renamed over path once whole: a reader
// never sees half a file, and a writer killed midway leaves what was
// there. On an error the temporary file goes. write gets the *os.File so
// that it can copy into it with the kernel's help (io.Copy from a file).
func WriteAtomic(path string, write func(*os.File) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("write %s: %w", path, err), os.Remove(tmp.Name()))
		}
	}()
	// CreateTemp makes the file private.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
