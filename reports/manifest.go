package reports

import (
	"errors"
	"io/fs"

	"github.com/homatb/homatb/rundir"
)

// manifest is the run's manifest.json (rundir.Manifest) as reports hold
// it: raw keeps the file's bytes so the report can show it verbatim.
type manifest struct {
	rundir.Manifest
	raw []byte
}

// readManifest loads manifest.json. A missing manifest is not an error: the
// report is still built from the records, with a fidelity warning.
func readManifest(dir string) (*manifest, bool, error) {
	m, raw, err := rundir.ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return &manifest{}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return &manifest{Manifest: *m, raw: raw}, true, nil
}
