package rundir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/homatb/homatb/p4/switchstats"
)

// Postcard is one per-packet switch record. The type, its 64-byte encoding
// and the streaming reader are declared with the switch (package
// switchstats), which writes them, so that p4 imports nothing of the
// testbed; this alias is the run directory's name for it.
type Postcard = switchstats.Postcard

// What a run keeps of the switches' per-packet records (scenario key
// switch.records).
const (
	// RecordsAll keeps every record, compressed.
	RecordsAll = "all"
	// RecordsSampled keeps, compressed, the records the latency anatomy
	// reads of the RPCs its sieve keeps (package anatomy, Sieve): every
	// short RPC, the tail of the long ones and a sample of the rest.
	RecordsSampled = "sampled"
	// RecordsNone keeps none, and so no anatomy.
	RecordsNone = "none"
)

// PostcardsExt ends the name of a switch's records as the switch writes
// them; ZstdExt follows it once the run has compressed them
// (<sw>.postcards.zst: a zstd stream of the same bytes). Readers take
// either.
const (
	PostcardsExt = ".postcards"
	ZstdExt      = ".zst"
)

// PostcardsPath is where an experiment's per-packet records of one switch
// are written (embedded target only), before the run compresses them into
// PostcardsPath+ZstdExt.
func PostcardsPath(dir, experiment, sw string) string {
	return filepath.Join(dir, SwitchDir, experiment, sw+PostcardsExt)
}

// PostcardSwitches lists the switches with records in an experiment
// (experiment "*": in any), compressed or not, sorted, each once.
func PostcardSwitches(dir, experiment string) ([]string, error) {
	return postcardNames(dir, experiment, func(path string) string {
		return strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ZstdExt), PostcardsExt)
	})
}

// PostcardExperiments lists the experiments with switch records, sorted.
func PostcardExperiments(dir string) ([]string, error) {
	return postcardNames(dir, "*", func(path string) string { return filepath.Base(filepath.Dir(path)) })
}

func postcardNames(dir, experiment string, name func(string) string) ([]string, error) {
	var out []string
	for _, pat := range []string{PostcardsPath(dir, experiment, "*"), PostcardsPath(dir, experiment, "*") + ZstdExt} {
		files, err := filepath.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("list postcards: %w", err)
		}
		for _, f := range files {
			if n := name(f); !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// openPostcardFile opens one switch's records, the plain file while there
// is one (the switch's, until the run has kept them) and else the
// compressed one, and returns a reader of the plain bytes and the path
// opened.
func openPostcardFile(dir, experiment, sw string) (io.Reader, io.Closer, string, error) {
	rel, err := filepath.Rel(dir, PostcardsPath(dir, experiment, sw))
	if err != nil {
		return nil, nil, "", fmt.Errorf("read postcards: %w", err)
	}
	rc, path, err := OpenRunFile(dir, rel)
	if err != nil {
		return nil, nil, path, fmt.Errorf("read postcards: %w", err)
	}
	return rc, rc, path, nil
}

// OpenPostcards opens the records of one switch in an experiment
// (compressed or not) for reading one at a time; the caller closes them.
func OpenPostcards(dir, experiment, sw string) (*switchstats.PostcardReader, io.Closer, error) {
	r, c, path, err := openPostcardFile(dir, experiment, sw)
	if err != nil {
		return nil, nil, err
	}
	pr, err := switchstats.NewPostcardReader(r)
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return pr, c, nil
}

// ReadPostcards streams the records of one switch in an experiment to fn,
// in the order the switch wrote them (each egress port's in departure
// order; ports interleaved in runs), and returns the Unix time in
// nanoseconds of the records' clock origin: a record's DequeueNs happened
// at epoch + DequeueNs. The *Postcard is reused between calls.
func ReadPostcards(dir, experiment, sw string, fn func(*Postcard) error) (epochNs int64, err error) {
	r, c, path, err := openPostcardFile(dir, experiment, sw)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	epoch, err := switchstats.ReadPostcards(r, fn)
	if err != nil {
		return epoch, fmt.Errorf("%s: %w", path, err)
	}
	return epoch, nil
}

// postcardsWindow is the zstd window of compressed records.
const postcardsWindow = 1 << 20

// PostcardsWriter writes one switch's records of an experiment compressed
// (PostcardsPath+ZstdExt), replacing any file there.
type PostcardsWriter struct {
	path string
	f    *os.File
	enc  *zstd.Encoder
	rec  [switchstats.PostcardLen]byte
	err  error
}

// CreatePostcards starts the compressed records of switch sw with a file
// header of clock origin epochNs and flags (switchstats.PostcardSieved).
func CreatePostcards(dir, experiment, sw string, epochNs int64, flags uint8) (*PostcardsWriter, error) {
	path := PostcardsPath(dir, experiment, sw) + ZstdExt
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("postcards: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("postcards: %w", err)
	}
	// One goroutine and the default level: records of consecutive frames
	// share most bytes, so the default already takes them to a few bytes.
	// A window of 1 MiB (not 8) and the encoder's lower-memory mode: the
	// records repeat at short distance, so the file grows by a few parts
	// in a million, and the run that writes it at an experiment's end
	// needs some 15 MiB less.
	enc, err := zstd.NewWriter(f, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(postcardsWindow),
		zstd.WithLowerEncoderMem(true))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("postcards: %s: %w", path, err)
	}
	w := &PostcardsWriter{path: path, f: f, enc: enc}
	h := switchstats.AppendPostcardHeader(nil, epochNs)
	switchstats.SetPostcardFlags(h, flags)
	_, w.err = enc.Write(h)
	return w, nil
}

// Write appends one record; the first error is kept for Close.
func (w *PostcardsWriter) Write(p *Postcard) {
	if w.err != nil {
		return
	}
	p.Encode(&w.rec)
	_, w.err = w.enc.Write(w.rec[:])
}

// Close ends the stream and the file.
func (w *PostcardsWriter) Close() error {
	err := errors.Join(w.err, w.enc.Close(), w.f.Close())
	if err != nil {
		return fmt.Errorf("postcards: %s: %w", w.path, err)
	}
	return nil
}
