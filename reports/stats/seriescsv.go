package stats

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/homatb/homatb/rundir"
)

// readSeries reads the run directory's file of format f and calls each
// with every row. A missing or empty file is no data; a bad row is an
// error naming the file, line and column.
func readSeries[T any](ctx context.Context, dir string, f *rundir.CSVFormat[T], each func(*T)) error {
	name := filepath.Join(dir, f.File)
	fd, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", f.File, err)
	}
	defer fd.Close()
	r, err := f.NewReader(bufio.NewReaderSize(fd, 1<<16), name)
	if err != nil {
		return err
	}
	var row T
	for n := 0; ; n++ {
		if n&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := r.Read(&row); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		each(&row)
	}
}
