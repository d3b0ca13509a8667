package dispatch

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/homatb/homatb/rundir"
)

// A task's per-RPC files (rpcs.csv, served.csv) are compressed in two zstd
// frames: the header and the calibration rows, then the experiment's rows.
// A zstd stream of several frames decompresses to their contents one after
// the other, so Merge writes the merged file by copying the first task's
// first frame and every task's second, compressed as they are: it neither
// decompresses the tasks' rows nor compresses the merged ones again, and
// the run directory never holds them plain.

// CompressTask compresses task directory dir's plain per-RPC files in two
// frames each (whatever their size) and removes the plain ones. A task
// calls it after its run, which left them plain (testbed.Options.Plain).
func CompressTask(dir string) error {
	for _, name := range []string{rundir.RPCs().File, rundir.ServedRPCs().File} {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := compressFrames(path, path+rundir.ZstdExt); err != nil {
			return err
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("compress %s: %w", path, err)
		}
	}
	return nil
}

// calibrationPrefix starts the experiment column of a calibration row.
var calibrationPrefix = []byte(rundir.CalibrationExperiment(""))

// compressFrames writes CSV file src to dst as two zstd frames, the split
// before the first row past the header that is not calibration. The split
// goes by each line's start; Merge checks the first frame's rows before it
// copies frames, so a file it misjudges is merged row by row.
func compressFrames(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("compress %s: %w", src, err)
	}
	defer in.Close()
	br := bufio.NewReaderSize(in, 1<<20)
	var head bytes.Buffer
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("compress %s: a line longer than %d bytes", src, br.Size())
		}
		if !first && len(line) > 0 && !bytes.HasPrefix(line, calibrationPrefix) {
			// The experiment's first row: it starts the second frame.
			// UnreadSlice is not there; keep it for the frame.
			rest := io.MultiReader(bytes.NewReader(bytes.Clone(line)), br)
			return writeFrames(dst, head.Bytes(), rest)
		}
		head.Write(line)
		if errors.Is(err, io.EOF) {
			return writeFrames(dst, head.Bytes(), nil)
		}
		if err != nil {
			return fmt.Errorf("compress %s: %w", src, err)
		}
	}
}

// writeFrames writes dst as a zstd frame of head and, unless rest is nil,
// one of rest's bytes.
func writeFrames(dst string, head []byte, rest io.Reader) error {
	return rundir.WriteAtomic(dst, func(out *os.File) error {
		bw := bufio.NewWriterSize(out, 1<<20)
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(2))
		if err != nil {
			return err
		}
		if _, err := bw.Write(enc.EncodeAll(head, nil)); err != nil {
			return err
		}
		if rest != nil {
			enc.Reset(bw)
			if _, err := io.Copy(enc, rest); err != nil {
				enc.Close()
				return err
			}
			if err := enc.Close(); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
}

// zstdMagic starts every zstd frame (RFC 8878, 3.1.1), little-endian.
const zstdMagic = 0xFD2FB528

// frameLen returns the length in bytes of the zstd frame at the start of
// r: it walks the frame's header and its blocks' headers without
// decompressing (RFC 8878, 3.1.1). The frame may end past r's end: the
// caller compares the length with r's size.
func frameLen(r io.ReaderAt) (int64, error) {
	var hdr [14]byte // magic, descriptor, window, dictionary id, content size
	n, err := r.ReadAt(hdr[:], 0)
	if n < 5 {
		return 0, fmt.Errorf("zstd frame: %d bytes, want at least 5: %w", n, cmpEOF(err))
	}
	if m := binary.LittleEndian.Uint32(hdr[:4]); m != zstdMagic {
		return 0, fmt.Errorf("zstd frame: magic %#x, want %#x", m, zstdMagic)
	}
	desc := hdr[4]
	single := desc&0x20 != 0
	if desc&0x08 != 0 {
		return 0, fmt.Errorf("zstd frame: reserved bit set in descriptor %#x", desc)
	}
	off := int64(5)
	if !single {
		off++ // window descriptor
	}
	off += [4]int64{0, 1, 2, 4}[desc&0x03] // dictionary id
	switch fcs := desc >> 6; {
	case fcs == 0 && single:
		off++
	case fcs > 0:
		off += [4]int64{0, 2, 4, 8}[fcs]
	}
	var bh [3]byte
	for {
		if _, err := r.ReadAt(bh[:], off); err != nil {
			return 0, fmt.Errorf("zstd frame: block header at %d: %w", off, cmpEOF(err))
		}
		v := uint32(bh[0]) | uint32(bh[1])<<8 | uint32(bh[2])<<16
		last, typ, size := v&1 != 0, (v>>1)&3, int64(v>>3)
		off += 3
		switch typ {
		case 0, 2: // raw, compressed
			off += size
		case 1: // RLE: one byte repeated size times
			off++
		default:
			return 0, fmt.Errorf("zstd frame: block at %d of the reserved type", off-3)
		}
		if last {
			break
		}
	}
	if desc&0x04 != 0 {
		off += 4 // content checksum
	}
	return off, nil
}

// cmpEOF makes a read short of a frame's end an unexpected EOF.
func cmpEOF(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// taskFrames is one task's compressed file of a format, as CompressTask
// wrote it: its first frame (header and calibration) is head bytes long,
// the rest of the file is the experiment's rows.
type taskFrames struct {
	path       string
	head, size int64
}

// framedTasks checks that every task's file of format f that exists is as
// CompressTask writes it, compressed in two frames: the first decompresses
// to header and calibration rows alone, the second starts with a row that
// is not calibration. It returns the tasks' files (nil when no task has
// one), or ok false when a task's is plain or otherwise laid out.
func framedTasks[T any](tasks []string, f *rundir.CSVFormat[T], header []byte, exp func(*T) string) (out []taskFrames, ok bool, err error) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20))
	if err != nil {
		return nil, false, err
	}
	defer dec.Close()
	for _, td := range tasks {
		plain := filepath.Join(td, f.File)
		if _, err := os.Stat(plain); err == nil {
			return nil, false, nil
		}
		tf, ok, err := checkFrames(plain+rundir.ZstdExt, f, header, exp, dec)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || !ok {
			return nil, ok, err
		}
		out = append(out, tf)
	}
	return out, true, nil
}

// checkFrames checks one task's compressed file (framedTasks); a missing
// file is fs.ErrNotExist, one laid out otherwise ok false.
func checkFrames[T any](path string, f *rundir.CSVFormat[T], header []byte, exp func(*T) string, dec *zstd.Decoder) (taskFrames, bool, error) {
	tf := taskFrames{path: path}
	in, err := os.Open(path)
	if err != nil {
		return tf, false, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return tf, false, err
	}
	tf.size = fi.Size()
	if tf.head, err = frameLen(in); err != nil || tf.head > tf.size {
		return tf, false, nil
	}
	raw := make([]byte, tf.head)
	if _, err := in.ReadAt(raw, 0); err != nil {
		return tf, false, fmt.Errorf("merge %s: %w", path, err)
	}
	head, err := dec.DecodeAll(raw, nil)
	if err != nil || !bytes.HasPrefix(head, header) {
		return tf, false, nil
	}
	calib := func(r io.Reader, wantCalib bool, all bool) bool {
		rd, err := f.NewReader(r, path)
		if err != nil {
			return false
		}
		var row T
		for {
			err := rd.Read(&row)
			if errors.Is(err, io.EOF) {
				return true
			}
			if err != nil || isCalibration(exp(&row)) != wantCalib {
				return false
			}
			if !all {
				return true
			}
		}
	}
	if !calib(bytes.NewReader(head), true, true) {
		return tf, false, nil
	}
	if tf.size == tf.head {
		return tf, true, nil
	}
	// The second frame's first row, read behind the header (a decoder of
	// its own: one that streams cannot also DecodeAll).
	sd, err := zstd.NewReader(io.NewSectionReader(in, tf.head, tf.size-tf.head), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return tf, false, nil
	}
	defer sd.Close()
	return tf, calib(io.MultiReader(bytes.NewReader(header), sd), false, false), nil
}

// concatFrames writes dst from the tasks' files: the first's first frame,
// then every task's second, copied as they are.
func concatFrames(dst string, tasks []taskFrames) error {
	return rundir.WriteAtomic(dst, func(out *os.File) error {
		for i, tf := range tasks {
			from := tf.head
			if i == 0 {
				from = 0
			}
			if err := copyRange(out, tf.path, from, tf.size); err != nil {
				return err
			}
		}
		return nil
	})
}

// copyRange appends bytes [from, to) of file path to out; between files
// the kernel copies them (copy_file_range).
func copyRange(out *os.File, path string, from, to int64) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := in.Seek(from, io.SeekStart); err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(in, to-from))
	if err == nil && n != to-from {
		err = fmt.Errorf("%s: copied %d bytes of %d: %w", path, n, to-from, io.ErrUnexpectedEOF)
	}
	return err
}

// plainIfSmall decompresses dir's file name+ZstdExt into name when it
// holds less than rundir.CompressAbove bytes, as a run in one process
// leaves such a file plain (rundir.CompressLarge): a split run's files
// are then named as its.
func plainIfSmall(dir, name string) error {
	zst := filepath.Join(dir, name+rundir.ZstdExt)
	n, err := decompress(zst, io.Discard, rundir.CompressAbove)
	if err != nil || n >= rundir.CompressAbove {
		return err
	}
	err = rundir.WriteAtomic(filepath.Join(dir, name), func(out *os.File) error {
		_, err := decompress(zst, out, rundir.CompressAbove)
		return err
	})
	if err != nil {
		return err
	}
	return os.Remove(zst)
}

// decompress writes at most limit bytes of zstd file path to w and
// returns how many it wrote.
func decompress(path string, w io.Writer, limit int64) (int64, error) {
	in, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	dec, err := zstd.NewReader(bufio.NewReaderSize(in, 1<<16), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	defer dec.Close()
	n, err := io.CopyN(w, dec, limit)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil {
		return n, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}
