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

// CompressAbove is the size from which a run compresses its per-RPC files
// when it ends (CompressLarge): a sweep of the Homa paper writes gigabytes
// of them, which zstd shrinks about eightfold, while a small run's files
// stay plain for a reader with head and grep.
const CompressAbove = 64 << 20

// CompressLarge compresses dir's per-RPC files (rpcs.csv, served.csv and
// the report's anatomy.csv) of at least minBytes into NAME+ZstdExt, which
// OpenRunFile and scripts/runfiles.py read as they read the plain file,
// and removes the plain ones. It returns the files it compressed. A file
// is replaced only once its compressed copy is whole: killed midway, the
// run keeps the plain file.
func CompressLarge(dir string, minBytes int64) ([]string, error) {
	var done []string
	for _, name := range []string{RPCs().File, ServedRPCs().File, Anatomies().File} {
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Size() < minBytes) {
			continue
		}
		if err != nil {
			return done, fmt.Errorf("compress %s: %w", path, err)
		}
		if err := compressFile(path, path+ZstdExt); err != nil {
			return done, err
		}
		if err := os.Remove(path); err != nil {
			return done, fmt.Errorf("compress %s: %w", path, err)
		}
		done = append(done, name)
	}
	return done, nil
}

// compressFile writes src as a zstd stream to dst (writeAtomic).
func compressFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("compress %s: %w", src, err)
	}
	defer in.Close()
	return writeAtomic(dst, func(w io.Writer) error {
		enc, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(2))
		if err != nil {
			return err
		}
		if _, err := io.Copy(enc, bufio.NewReaderSize(in, 1<<20)); err != nil {
			enc.Close()
			return err
		}
		return enc.Close()
	})
}
