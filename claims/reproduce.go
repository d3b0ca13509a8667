package claims

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"gopkg.in/yaml.v3"

	"github.com/homatb/homatb/queuemodel"
	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"
)

// Runner runs a scenario (in the twin, homatb run --simulate, or
// emulated, homatb run) with the given repetitions into runDir and
// returns its summary.json.
type Runner func(ctx context.Context, scenarioFile string, repetitions int, runDir string) (*stats.Summary, error)

// Options are the settings of Reproduce.
type Options struct {
	// IDs are the claims to measure (none or "all": every one).
	IDs []string
	// Quick runs one seed and the scenarios' quick variants; otherwise
	// three seeds at full length.
	Quick bool
	// Jobs bounds how many scenario runs go at once (default 1).
	Jobs int
	// Out is the output directory: claims.json, claims.html, the quick
	// scenarios and the run directories go there.
	Out string
	// Root is the directory the registry's scenario paths are relative to
	// (the repository; default ".").
	Root string
	// Twin runs twin scenarios and Emulate emulated ones; nil leaves
	// their claims unmeasured.
	Twin, Emulate Runner
	// Messages per queue-model run (default the article's 400,000).
	Messages int
	// QueueSeeds, when above zero, runs the queue model with seeds 1 to
	// QueueSeeds instead of queueSeeds (the spread of a claim over many
	// single runs, as the article made one).
	QueueSeeds int
	// Progress, when set, gets a line as each claim or run finishes.
	Progress io.Writer
	// Scenarios overrides the scenario file of a claim's registry path
	// (tests use a tiny one).
	Scenarios map[string]string
	// Quicks overrides the quick overrides of a registry path.
	Quicks map[string]string
	// Reuse reads a scenario's run already in Out (a complete one with
	// as many repetitions as the seeds) instead of running it again: the
	// claims are judged afresh from its summary.json.
	Reuse bool
}

// seeds are the seeds of the scenario runs: one for --quick, three
// otherwise.
func (o Options) seeds() []uint64 {
	if o.Quick {
		return []uint64{1}
	}
	return queueSeeds()
}

// queueSeeds are the queue model's seeds, with --quick too: all of A1-A9
// takes seconds, and one seed of 400,000 messages is not enough for the
// article's 1% (PS's mean slowdown at 70% load: 3.29, 3.35 and 3.36 with
// seeds 1-3, against 3.33).
func queueSeeds() []uint64 { return []uint64{1, 2, 3} }

// modelSeeds are the queue model's seeds of this measurement.
func (o Options) modelSeeds() []uint64 {
	if o.QueueSeeds <= 0 {
		return queueSeeds()
	}
	s := make([]uint64, o.QueueSeeds)
	for i := range s {
		s[i] = uint64(i + 1)
	}
	return s
}

// Select returns the claims named by ids, in the registry's order.
func Select(ids []string) ([]Claim, error) {
	all := Registry()
	if len(ids) == 0 || (len(ids) == 1 && strings.EqualFold(ids[0], "all")) {
		return all, nil
	}
	var out []Claim
	want := map[string]bool{}
	for _, id := range ids {
		id = strings.ToUpper(strings.TrimSpace(id))
		if !slices.ContainsFunc(all, func(c Claim) bool { return c.ID == id }) {
			return nil, fmt.Errorf("unknown claim %q (expected ids such as A1, B2, or all)", id)
		}
		want[id] = true
	}
	for _, c := range all {
		if want[c.ID] {
			out = append(out, c)
		}
	}
	return out, nil
}

// Reproduce measures the selected claims and returns a row for each.
func Reproduce(ctx context.Context, opt Options) ([]Row, error) {
	sel, err := Select(opt.IDs)
	if err != nil {
		return nil, err
	}
	if opt.Jobs < 1 {
		opt.Jobs = 1
	}
	if opt.Messages == 0 {
		opt.Messages = queuemodel.ArticleMessages
	}
	if opt.Root == "" {
		opt.Root = "."
	}
	if err := opt.scenariosPresent(sel); err != nil {
		return nil, err
	}
	rows := make([]Row, len(sel))
	for i := range sel {
		rows[i] = newRow(&sel[i], opt)
	}

	// The queue model first: all of it takes seconds. Seed by seed, so
	// that the cache of runs, which claims share, holds one seed's runs:
	// with --queue-seeds the runs of every seed would not fit in memory.
	var qc []int
	for i := range sel {
		if sel[i].queue != nil && sel[i].Pending == "" {
			qc = append(qc, i)
		}
	}
	values := make([][][]float64, len(sel))
	took := make([]time.Duration, len(sel))
	var q *queueRuns
	for _, seed := range opt.modelSeeds() {
		q = newQueueRuns(opt.Messages)
		for _, i := range qc {
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			start := time.Now()
			v, err := sel[i].queue(q, seed)
			if err != nil {
				return rows, fmt.Errorf("%s: %w", sel[i].ID, err)
			}
			values[i] = append(values[i], v)
			took[i] += time.Since(start)
		}
	}
	for _, i := range qc {
		c := &sel[i]
		rows[i].Seeds = opt.modelSeeds()
		judge(c, &rows[i], values[i])
		if c.note != nil {
			rows[i].Note = joinNote(rows[i].Note, c.note(q))
		}
		progress(opt.Progress, "%s %s (%.1fs)", c.ID, rows[i].Verdict, took[i].Seconds())
	}

	// Twin and emulation claims: one run per scenario, shared by its
	// claims.
	byScenario := map[string][]int{}
	var order []string
	for i, c := range sel {
		if c.twin == nil || c.Pending != "" {
			continue
		}
		if opt.runner(c.Mode) == nil {
			rows[i].Verdict, rows[i].Note = NotYetMeasured, fmt.Sprintf("no %s runner here", c.Mode)
			continue
		}
		if _, ok := byScenario[c.Scenario]; !ok {
			order = append(order, c.Scenario)
		}
		byScenario[c.Scenario] = append(byScenario[c.Scenario], i)
	}
	var mu sync.Mutex
	// An emulated run has the machine to itself (its results are the
	// machine's timing): it waits for the twin's runs to end and none
	// starts beside it. Twin runs share the machine with each other.
	var machine sync.RWMutex
	var g errgroup.Group
	g.SetLimit(opt.Jobs)
	var errs []error
	for _, sc := range order {
		g.Go(func() error {
			mode := sel[byScenario[sc][0]].Mode
			if mode == ModeEmulation {
				machine.Lock()
				defer machine.Unlock()
			} else {
				machine.RLock()
				defer machine.RUnlock()
			}
			if ctx.Err() != nil {
				mu.Lock()
				defer mu.Unlock()
				for _, i := range byScenario[sc] {
					rows[i].Verdict, rows[i].Note = NotYetMeasured, "not run: reproduce was interrupted ("+context.Cause(ctx).Error()+")"
				}
				return nil
			}
			start := time.Now()
			file, runDir, err := prepare(sc, opt)
			var sum *stats.Summary
			if err == nil && opt.Reuse {
				sum = reusable(runDir, len(opt.seeds()))
			}
			if err == nil && sum == nil {
				sum, err = opt.runner(mode)(ctx, file, len(opt.seeds()), runDir)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, i := range byScenario[sc] {
				c, r := &sel[i], &rows[i]
				r.RunDir = runDir
				switch {
				case err != nil && ctx.Err() != nil:
					// What an interrupted run measured is in its directory, but
					// not the claim's seeds: no verdict.
					r.Verdict, r.Note = NotYetMeasured, "interrupted before it was measured: "+err.Error()
					continue
				case err != nil:
					r.Verdict, r.Note = NotReproduced, "the run failed: "+err.Error()
					continue
				}
				measureTwin(c, r, sum)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", sc, err))
			}
			progress(opt.Progress, "%s: %d claims (%.0fs)", sc, len(byScenario[sc]), time.Since(start).Seconds())
			return nil
		})
	}
	_ = g.Wait()
	return rows, errors.Join(errs...)
}

// reusable is the summary of the run in dir when the run is complete and
// has reps repetitions (nil otherwise).
func reusable(dir string, reps int) *stats.Summary {
	m, _, err := rundir.ReadManifest(dir)
	if err != nil || m.Incomplete {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil
	}
	var sum stats.Summary
	if json.Unmarshal(b, &sum) != nil || len(repetitions(sum.Experiments)) != reps {
		return nil
	}
	return &sum
}

// runner is the runner of a mode.
func (o Options) runner(m Mode) Runner {
	if m == ModeEmulation {
		return o.Emulate
	}
	return o.Twin
}

// measureTwin reads a twin claim's values from each repetition of its run.
func measureTwin(c *Claim, r *Row, sum *stats.Summary) {
	var values [][]float64
	var failed []string
	for _, exps := range repetitions(sum.Experiments) {
		v, err := c.twin(exps)
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		r.Verdict, r.Note = NotReproduced, "nothing to read in the run: "+strings.Join(failed, "; ")
		return
	}
	judge(c, r, values)
	for _, p := range r.Points {
		if math.IsNaN(p.Median) {
			r.Verdict = NotReproduced
		}
	}
	if c.floor && r.Verdict != Reproduced {
		r.Verdict = MachineFloor
	}
}

func newRow(c *Claim, opt Options) Row {
	r := Row{ID: c.ID, Claim: c.Text, Published: c.Published, Source: c.Source, Mode: c.Mode, Scenario: c.Scenario, Tolerance: c.Tolerance}
	r.Command = "homatb reproduce " + c.ID
	if opt.Quick {
		r.Command += " --quick"
	}
	if c.queue != nil && opt.QueueSeeds > 0 {
		r.Command += fmt.Sprintf(" --queue-seeds %d", opt.QueueSeeds)
	}
	if c.Pending != "" {
		r.Verdict, r.Note = NotYetMeasured, c.Pending
	}
	return r
}

// scenariosPresent checks, before anything runs, that the scenario file
// of every selected claim with a run is there: run from elsewhere than
// the repository, each would otherwise fail only when its turn came.
func (o Options) scenariosPresent(sel []Claim) error {
	var missing []string
	for _, c := range sel {
		if c.twin == nil || c.Pending != "" || c.Scenario == "" {
			continue
		}
		file := filepath.Join(o.Root, c.Scenario)
		if f, ok := o.Scenarios[c.Scenario]; ok {
			file = f
		}
		if _, err := os.Stat(file); err != nil && !slices.Contains(missing, file) {
			missing = append(missing, file)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("no claim scenario at %s: expected the repository's scenarios/claims/ under --root %q (run homatb reproduce from the repository's root, or give --root)",
		strings.Join(missing, ", "), o.Root)
}

// prepare returns the scenario file to run for registry path sc (its
// quick variant written into the output directory when quick) and the
// run directory.
func prepare(sc string, opt Options) (file, runDir string, err error) {
	file = filepath.Join(opt.Root, sc)
	if f, ok := opt.Scenarios[sc]; ok {
		file = f
	}
	base := strings.TrimSuffix(filepath.Base(sc), filepath.Ext(sc))
	runDir = filepath.Join(opt.Out, "runs", base)
	if !opt.Quick {
		return file, runDir, nil
	}
	over, ok := opt.Quicks[sc]
	if !ok {
		over, ok = quickOverrides[sc]
	}
	if !ok {
		return file, runDir, nil
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return "", "", fmt.Errorf("read scenario: %w", err)
	}
	merged, err := overrideTop(text, []byte(over))
	if err != nil {
		return "", "", fmt.Errorf("%s: quick variant: %w", file, err)
	}
	dir := filepath.Join(opt.Out, "scenarios")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	qf := filepath.Join(dir, base+"-quick.yaml")
	head := fmt.Sprintf("# %s with its quick overrides (homatb reproduce --quick)\n", sc)
	if err := os.WriteFile(qf, append([]byte(head), merged...), 0o644); err != nil {
		return "", "", err
	}
	return qf, runDir, nil
}

// overrideTop replaces (or adds) the top-level keys of the YAML document
// doc by those of over.
func overrideTop(doc, over []byte) ([]byte, error) {
	var d, o yaml.Node
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(over, &o); err != nil {
		return nil, fmt.Errorf("overrides: %w", err)
	}
	if len(d.Content) != 1 || d.Content[0].Kind != yaml.MappingNode || len(o.Content) != 1 || o.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("expected a mapping at the top of both the scenario and its overrides")
	}
	dm, om := d.Content[0], o.Content[0]
	for i := 0; i+1 < len(om.Content); i += 2 {
		k, v := om.Content[i], om.Content[i+1]
		found := false
		for j := 0; j+1 < len(dm.Content); j += 2 {
			if dm.Content[j].Value == k.Value {
				dm.Content[j+1] = v
				found = true
			}
		}
		if !found {
			dm.Content = append(dm.Content, k, v)
		}
	}
	return yaml.Marshal(&d)
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ". " + b
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
