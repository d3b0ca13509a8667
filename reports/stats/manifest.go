package stats

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"

	"github.com/homatb/homatb/rundir"
)

// Manifest is the run's manifest.json (rundir.Manifest) as reports hold
// it: raw keeps the file's bytes so the report can show it verbatim.
type Manifest struct {
	rundir.Manifest
	Raw []byte
}

// readManifest loads manifest.json. A missing manifest is not an error: the
// report is still built from the records, with a fidelity warning.
func readManifest(dir string) (*Manifest, bool, error) {
	m, raw, err := rundir.ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return &Manifest{}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return &Manifest{Manifest: *m, Raw: raw}, true, nil
}

func MapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func ListOf(v any) []any {
	l, _ := v.([]any)
	return l
}

// Scalar formats a scalar of generic JSON; "" for nil.
func Scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
