package rundir

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
)

// GzipExt ends the name of a run file compressed with gzip (an archived
// run's rpcs.csv.gz).
const GzipExt = ".gz"

// OpenRunFile opens the run directory's file name (rpcs.csv, served.csv),
// or, when it is absent, name+ZstdExt or name+GzipExt (a run whose files
// were compressed after it ran, e.g. `zstd --rm`), decompressing as it
// reads; it returns the path opened. A missing file is fs.ErrNotExist.
func OpenRunFile(dir, name string) (io.ReadCloser, string, error) {
	plain := filepath.Join(dir, name)
	for _, path := range []string{plain, plain + ZstdExt, plain + GzipExt} {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("open %s: %w", path, err)
		}
		switch filepath.Ext(path) {
		case ZstdExt:
			dec, err := zstd.NewReader(bufio.NewReaderSize(f, 1<<16), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
			if err != nil {
				f.Close()
				return nil, "", fmt.Errorf("open %s: %w", path, err)
			}
			return zstdFile{dec, f}, path, nil
		case GzipExt:
			zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
			if err != nil {
				f.Close()
				return nil, "", fmt.Errorf("open %s: %w", path, err)
			}
			return gzipFile{zr, f}, path, nil
		}
		return f, path, nil
	}
	return nil, "", fmt.Errorf("%s: neither %s nor %s%s nor %s%s: %w", dir, name, name, ZstdExt, name, GzipExt, fs.ErrNotExist)
}

type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzipFile) Close() error { return errors.Join(g.Reader.Close(), g.f.Close()) }

type zstdFile struct {
	dec *zstd.Decoder
	f   *os.File
}

func (z zstdFile) Read(p []byte) (int, error) { return z.dec.Read(p) }

func (z zstdFile) Close() error {
	z.dec.Close()
	return z.f.Close()
}
