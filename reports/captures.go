package reports

import (
	"fmt"
	"path"

	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"
)

// captureRow is one packet capture of an experiment (the scenario's
// capture block), as the report lists it.
type captureRow struct {
	Experiment string
	// File is the capture's path relative to the run directory, which is
	// where report.html sits, so it is also the link.
	File, Point      string
	Packets, LeftOut uint64
	KernelDrops      uint64
	Bytes            int64
	Snaplen          int
	Error            string
	// Dissector is the run's copy of the dissector; Command opens the
	// capture with tshark and it, from the run directory.
	Dissector, Command string
}

// tsharkCommand is the command that decodes a capture of the run with the
// dissector the run wrote beside its captures (docs/dissector.md).
func tsharkCommand(file string) string {
	return fmt.Sprintf("tshark -X lua_script:%s -r %s", dissectorPath, file)
}

// dissectorPath is where a run keeps its copy of the dissector.
var dissectorPath = path.Join(rundir.CapturesDir, rundir.DissectorFile)

// captureRows lists every experiment's captures in manifest order.
func captureRows(m *stats.Manifest) []captureRow {
	if m == nil {
		return nil
	}
	var rows []captureRow
	for _, e := range m.Experiments {
		for _, c := range e.Captures {
			rows = append(rows, captureRow{Experiment: e.Name, File: c.File, Point: c.Point, Packets: c.Packets,
				LeftOut: c.LeftOut, KernelDrops: c.KernelDrops, Bytes: c.Bytes, Snaplen: c.Snaplen, Error: c.Error,
				Dissector: dissectorPath, Command: tsharkCommand(c.File)})
		}
	}
	return rows
}
