package dispatch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/homatb/homatb/rundir"
)

// Merged is what Merge made of a dispatched run.
type Merged struct {
	Manifest *rundir.Manifest
	// Missing are the experiments no task measured, each with why.
	Missing []string
}

// Merge writes the run directory dir from its tasks' directories:
// manifest.json (the first measured task's, with every task's experiment
// in plan order), rpcs.csv and served.csv (the calibration rows once, then
// each experiment's rows in plan order), and every task's other files and
// directories (switch/<experiment>/, captures) moved in; each task's log
// stays under tasks/. Once every experiment is in, the tasks' per-RPC files
// go. The merged files are compressed when the tasks' are in frames
// (CompressTask), their frames copied; otherwise they are plain, and the
// caller compresses them after the report (rundir.CompressLarge). An experiment whose task did not measure it is named
// in the manifest's fidelity with its task's outcome, and the run is then
// incomplete. outcomes may lack tasks (a detached run merged early).
func Merge(dir string, d *rundir.Dispatch, outcomes map[int]Outcome) (*Merged, error) {
	res := &Merged{}
	var done []int // tasks whose experiment is in their manifest, in plan order
	var base *rundir.Manifest
	exps := map[int]rundir.Experiment{}
	mans := map[int]*rundir.Manifest{} // the measured tasks' manifests
	for i, name := range d.Experiments {
		m, _, err := rundir.ReadManifest(rundir.TaskDir(dir, name))
		if err == nil {
			if j := slices.IndexFunc(m.Experiments, func(e rundir.Experiment) bool { return e.Name == name }); j >= 0 {
				if base == nil {
					base = m
				}
				exps[i], mans[i] = m.Experiments[j], m
				done = append(done, i)
				continue
			}
		}
		why := "its task did not write it"
		if o, ok := outcomes[i]; ok {
			why = "task " + o.String()
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			why = err.Error()
		}
		res.Missing = append(res.Missing, fmt.Sprintf("experiment %s not measured: %s", name, why))
	}
	if base == nil {
		return res, fmt.Errorf("merge %s: no task measured its experiment (%s)", dir, strings.Join(res.Missing, "; "))
	}
	taskDirs := make([]string, len(done))
	for k, i := range done {
		taskDirs[k] = rundir.TaskDir(dir, d.Experiments[i])
	}
	if err := mergeCSV(dir, taskDirs, rundir.RPCs(), func(r *rundir.RPC) string { return r.Experiment }); err != nil {
		return res, err
	}
	if err := mergeCSV(dir, taskDirs, rundir.ServedRPCs(), func(r *rundir.Served) string { return r.Experiment }); err != nil {
		return res, err
	}
	for _, td := range taskDirs {
		if err := moveRest(td, dir); err != nil {
			return res, err
		}
	}
	m := *base
	m.Experiments = nil
	for _, i := range done {
		m.Experiments = append(m.Experiments, exps[i])
	}
	m.Started, m.Ended = d.Submitted, time.Now().UnixNano()
	if m.Simulation != nil {
		sim := *m.Simulation
		sim.Events, sim.SimulatedSeconds, sim.WallSeconds = 0, 0, 0
		for _, i := range done {
			if tm := mans[i]; tm.Simulation != nil {
				sim.Events += tm.Simulation.Events
				sim.SimulatedSeconds += tm.Simulation.SimulatedSeconds
				sim.WallSeconds += tm.Simulation.WallSeconds
			}
		}
		if sim.WallSeconds > 0 {
			sim.EventsPerSecond, sim.SimPerWall = float64(sim.Events)/sim.WallSeconds, sim.SimulatedSeconds/sim.WallSeconds
		}
		sim.Model = append(slices.Clip(sim.Model), fmt.Sprintf("split over %d tasks (%s executor): each task simulated the calibration again; events, simulated and wall seconds are the tasks' sums", len(taskDirs), d.Executor))
		m.Simulation = &sim
	}
	m.Fidelity = append(slices.Clip(m.Fidelity), res.Missing...)
	m.Incomplete = len(res.Missing) > 0
	for _, e := range m.Experiments {
		m.Incomplete = m.Incomplete || e.Incomplete
	}
	if m.Incomplete && m.Error == "" && len(res.Missing) > 0 {
		m.Error = fmt.Sprintf("%d of %d experiments not measured", len(res.Missing), len(d.Experiments))
	}
	if err := rundir.WriteManifest(dir, &m); err != nil {
		return res, err
	}
	if len(res.Missing) == 0 {
		// Every task is in: no later merge reads their copies again. They
		// go only now that the merged files are whole.
		if err := dropTaskRecords(taskDirs); err != nil {
			return res, err
		}
	}
	d.Merged = true
	if err := rundir.WriteDispatch(dir, d); err != nil {
		return res, err
	}
	res.Manifest = &m
	return res, nil
}

// isCalibration says whether rows of experiment name are calibration,
// which every task measured alike: the merged file keeps the first task's.
func isCalibration(name string) bool {
	return strings.HasPrefix(name, rundir.CalibrationExperiment(""))
}

// perRPCFiles are the files Merge writes from the tasks' rows, plain and
// compressed (rundir.CompressLarge).
var perRPCFiles = []string{
	rundir.RPCs().File, rundir.RPCs().File + rundir.ZstdExt,
	rundir.ServedRPCs().File, rundir.ServedRPCs().File + rundir.ZstdExt,
}

// dropTaskRecords removes the tasks' per-RPC files once merged: a sweep's
// would otherwise double its run directory.
func dropTaskRecords(tasks []string) error {
	for _, td := range tasks {
		for _, name := range perRPCFiles {
			if err := os.Remove(filepath.Join(td, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("merge: %w", err)
			}
		}
	}
	return nil
}

// mergeCSV writes dir's file of format f from the tasks' files, compressed
// or not, in task order: every row of the first task that has the file,
// and the other tasks' rows but their calibration. When every task's file
// is in frames (CompressTask), so is the merged one, their frames copied;
// otherwise it is plain. A file no task wrote is not written; an earlier
// merge's file is replaced.
func mergeCSV[T any](dir string, tasks []string, f *rundir.CSVFormat[T], exp func(*T) string) error {
	header, err := headerLine(f)
	if err != nil {
		return err
	}
	framed, ok, err := framedTasks(tasks, f, header, exp)
	if err != nil {
		return err
	}
	if ok && len(framed) > 0 {
		// Every task's file in frames (CompressTask): the merged one is
		// theirs put together, compressed as they are.
		if err := os.Remove(filepath.Join(dir, f.File)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("merge: %w", err)
		}
		if err := concatFrames(filepath.Join(dir, f.File+rundir.ZstdExt), framed); err != nil {
			return err
		}
		return plainIfSmall(dir, f.File)
	}
	if err := os.Remove(filepath.Join(dir, f.File+rundir.ZstdExt)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("merge: %w", err)
	}
	var w *rundir.CSVWriter[T]
	var out *os.File
	first := true
	for _, td := range tasks {
		in, name, err := rundir.OpenRunFile(td, f.File)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if w == nil {
			if out, err = os.Create(filepath.Join(dir, f.File)); err != nil {
				in.Close()
				return err
			}
			defer out.Close()
			if w, err = f.NewWriter(out, true); err != nil {
				in.Close()
				return err
			}
		}
		err = mergeTask(in, name, f, header, w, out, first, exp)
		in.Close()
		if err != nil {
			return err
		}
		first = false
	}
	if w == nil {
		return nil
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Close()
}

// mergeTask appends one task's rows (its calibration's too when first) to
// w. A task's calibration rows come before its experiment's: once past
// them, a file with the header w writes is copied as it is, its rows
// being what w would write of them; another header is read row by row.
func mergeTask[T any](in io.Reader, name string, f *rundir.CSVFormat[T], header []byte, w *rundir.CSVWriter[T], out io.Writer, first bool, exp func(*T) string) error {
	br := bufio.NewReaderSize(in, 1<<20)
	peek, _ := br.Peek(len(header))
	raw := bytes.Equal(peek, header)
	rd, err := f.NewReader(br, name)
	if err != nil {
		return err
	}
	var row T
	for {
		if raw && first {
			break // every row, calibration included
		}
		err := rd.Read(&row)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if !first && isCalibration(exp(&row)) {
			continue
		}
		if err := w.Write(&row); err != nil {
			return err
		}
		if raw {
			break // the first row past the calibration: the rest as it is
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if _, err := io.Copy(out, br); err != nil {
		return fmt.Errorf("merge %s: %w", name, err)
	}
	return nil
}

// headerLine is the header line f's writer writes.
func headerLine[T any](f *rundir.CSVFormat[T]) ([]byte, error) {
	var b bytes.Buffer
	w, err := f.NewWriter(&b, true)
	if err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// moveRest moves what a task directory holds besides the files Merge
// writes itself into dir: directories' entries one by one (switch/<exp>),
// other files when dir has none of that name yet. logs/ stays in the task.
func moveRest(task, dir string) error {
	ents, err := os.ReadDir(task)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		switch name {
		case rundir.ManifestFile, "logs", "agents":
			continue
		}
		if slices.Contains(perRPCFiles, name) {
			continue
		}
		src, dst := filepath.Join(task, name), filepath.Join(dir, name)
		if !e.IsDir() {
			_, err := os.Stat(dst)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				err = os.Rename(src, dst)
			case err == nil && strings.HasSuffix(name, ".csv"):
				// Series of the experiments (telemetry.csv, hosts.csv):
				// one after the other, under one header.
				err = appendRows(dst, src)
			}
			if err != nil {
				return fmt.Errorf("merge %s: %w", src, err)
			}
			continue
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		sub, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, s := range sub {
			if err := os.Rename(filepath.Join(src, s.Name()), filepath.Join(dst, s.Name())); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("merge %s: %w", src, err)
			}
		}
	}
	return nil
}

// appendRows appends the rows of CSV file src, its header left out, to dst.
func appendRows(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	br := bufio.NewReader(in)
	if _, err := br.ReadString('\n'); err != nil {
		return nil // a header alone, or nothing
	}
	out, err := os.OpenFile(dst, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, br); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
