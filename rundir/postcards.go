package rundir

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/homatb/homatb/p4/switchstats"
)

// Postcard is one per-packet switch record. The type, its 64-byte encoding
// and the streaming reader are declared with the switch (package
// switchstats), which writes them, so that p4 imports nothing of the
// testbed; this alias is the run directory's name for it.
type Postcard = switchstats.Postcard

// PostcardsPath is where an experiment's per-packet records of one switch
// are kept (embedded target only).
func PostcardsPath(dir, experiment, sw string) string {
	return filepath.Join(dir, SwitchDir, experiment, sw+".postcards")
}

// OpenPostcards opens the records of one switch in an experiment for
// reading one at a time; the caller closes the file.
func OpenPostcards(dir, experiment, sw string) (*switchstats.PostcardReader, io.Closer, error) {
	path := PostcardsPath(dir, experiment, sw)
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read postcards: %w", err)
	}
	pr, err := switchstats.NewPostcardReader(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return pr, f, nil
}

// ReadPostcards streams the records of one switch in an experiment to fn,
// in the order the switch wrote them (each egress port's in departure
// order; ports interleaved in runs), and returns the Unix time in
// nanoseconds of the records' clock origin: a record's DequeueNs happened
// at epoch + DequeueNs. The *Postcard is reused between calls.
func ReadPostcards(dir, experiment, sw string, fn func(*Postcard) error) (epochNs int64, err error) {
	path := PostcardsPath(dir, experiment, sw)
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read postcards: %w", err)
	}
	defer f.Close()
	epoch, err := switchstats.ReadPostcards(f, fn)
	if err != nil {
		return epoch, fmt.Errorf("%s: %w", path, err)
	}
	return epoch, nil
}
