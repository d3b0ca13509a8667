package stats

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/homatb/homatb/anatomy"
	"github.com/homatb/homatb/internal/memlimit"
	"github.com/homatb/homatb/rundir"
)

// PercentileDefinition is stated in summary.json and the report.
const PercentileDefinition = "nearest rank on raw samples: the q-quantile of n sorted samples x(1)..x(n) is x(ceil(q*n)); " +
	"intervals are distribution-free order-statistic intervals [x(j), x(k)] with j, k from Binomial(n, q), " +
	"coverage at least the stated confidence; an open end (null) means too few samples to bound it"

// hdrMaxNs bounds the values HdrHistogram tracks: one hour in nanoseconds.
const hdrMaxNs = 3_600_000_000_000

// Unfinished is the failure reason (RPCCounts.Failures) of RPCs still in
// flight when their experiment ended.
const Unfinished = "unfinished: still in flight when the experiment ended"

// Analysis is a run directory's summary plus what the exporters need.
type Analysis struct {
	Sum *Summary
}

// Analyse reads a run directory and computes its statistics; it writes
// nothing.
func Analyse(ctx context.Context, dir string, c config) (*Analysis, error) {
	return AnalyseInto(ctx, dir, c, "")
}

// AnalyseInto reads a run directory and computes its statistics, one
// experiment at a time. When out is not "", each experiment's exports of
// its raw records (its clients' RTT files under cperf/, its .hgrm, its
// rows of anatomy.csv) are written there as soon as it is analysed, and
// the raw records dropped: the memory is one experiment's, not the run's.
// Records not written the way runs write them (rundir.ErrNotGrouped) are
// read again, every experiment's kept until the end.
func AnalyseInto(ctx context.Context, dir string, c config, out string) (*Analysis, error) {
	a, err := analyseRun(ctx, dir, c, out, false)
	if errors.Is(err, rundir.ErrNotGrouped) {
		c.Logger.Info("records not grouped by experiment: reading every experiment's at once", "dir", dir, "why", err)
		a, err = analyseRun(ctx, dir, c, out, true)
	}
	return a, err
}

// runAnalysis is what the analysis of each experiment shares.
type runAnalysis struct {
	ctx    context.Context
	dir    string
	out    string
	c      config
	man    *Manifest
	hasMan bool
	sum    *Summary
	metas  map[string]rundir.Experiment // the manifest's experiments by name
	// exps are the manifest's experiments, each shared one as its parts
	// (shared.go); partOf names a part's experiment.
	exps    []rundir.Experiment
	partOf  map[string]string
	tel     telemetry
	hostTel hostTelemetry
	tcp     map[string][]TCPConn
	target  string
	// ideal and baselines come from the calibration rows, which precede
	// every experiment's; prepared by the first experiment.
	prepared  bool
	ideal     *idealRTT
	baselines map[string]*ownBaseline
	// anatExps are the experiments with switch records; served gives
	// their servers' rows (from groups, one experiment at a time), anat
	// writes their rows of anatomy.csv.
	anatExps []string
	served   func(exp string) ([]rundir.Served, error)
	groups   *anatomy.ServedGroups
	anat     *anatomy.Writer
	// whole keeps every experiment's records until the file ends; else
	// last is the manifest position of the experiment analysed last.
	whole bool
	last  int
	// done holds each analysed experiment.
	done map[string]Experiment
	// jobs analyses experiments, c.jobs at once, in the manifest's order.
	jobs *inOrder
}

// analyseRun is one reading of the run directory: with whole, every
// experiment's records are kept until the file ends.
func analyseRun(ctx context.Context, dir string, c config, out string, whole bool) (a *Analysis, err error) {
	man, hasMan, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	// One experiment at a time follows the manifest's order.
	whole = whole || !hasMan
	r := &runAnalysis{ctx: ctx, dir: dir, out: out, c: c, man: man, hasMan: hasMan, whole: whole, last: -1,
		metas: map[string]rundir.Experiment{}, target: switchTarget(man.Scenario), done: map[string]Experiment{}}
	r.partOf = map[string]string{}
	r.exps = sharedParts(man.Experiments, r.partOf)
	for _, me := range r.exps {
		r.metas[me.Name] = me
	}
	if r.tel, err = readTelemetry(ctx, dir); err != nil {
		return nil, err
	}
	if r.hostTel, err = readHostTelemetry(ctx, dir); err != nil {
		return nil, err
	}
	if r.tcp, err = readTCPConns(ctx, dir); err != nil {
		return nil, err
	}
	if man.Fabric != nil {
		if r.anatExps, err = anatomy.Experiments(dir); err != nil {
			return nil, err
		}
	}
	if len(r.anatExps) > 0 {
		defer func() {
			if cerr := r.closeAnatomy(); err == nil && cerr != nil {
				a, err = nil, cerr
			}
		}()
		if err := r.openAnatomy(); err != nil {
			return nil, err
		}
	}
	budget := jobsMemory()
	r.jobs = newInOrder(c.jobs, budget)
	if c.jobs > 1 {
		c.Logger.Info("experiments analysed at once share a memory budget", "jobs", c.jobs, "budget_MB", budget>>20)
	}
	// Every job has ended before the anatomy's file closes (the deferred
	// calls run last first).
	defer func() {
		if werr := r.jobs.wait(); err == nil && werr != nil {
			a, err = nil, werr
		}
	}()
	r.sum = &Summary{
		Run:                  man.Run,
		PercentileDefinition: PercentileDefinition,
		Confidence:           c.confidence,
		Manifest:             man,
	}
	sum := r.sum
	// Empty lists stay [] in JSON so scripts can iterate without checks.
	sum.Experiments, sum.Fidelity = []Experiment{}, []string{}
	sum.Fidelity = append(sum.Fidelity, man.Fidelity...)
	if man.Error != "" {
		sum.Fidelity = append(sum.Fidelity, "the run ended with an error: "+man.Error)
	}
	if !hasMan {
		sum.Fidelity = append(sum.Fidelity, "no manifest.json: experiments, parameters and fidelity checks of the run are unknown")
	}

	c.Logger.Info("reading records", "dir", dir)
	inAnatomy := func(exp string) bool { return slices.Contains(r.anatExps, exp) }
	var each func(*RecordSet, *ExpRecords) error
	if !whole {
		each = r.experiment
	}
	rs, err := ReadRecordsSplit(ctx, dir, man.Fabric, inAnatomy, splitOf(man.Experiments), each)
	if err != nil {
		return nil, err
	}
	// The file as a run names it, read compressed or not: a split run's
	// records are merged compressed, a run in one process's compressed
	// after its report, and their summaries are the same.
	sum.Records = strings.TrimSuffix(strings.TrimSuffix(rs.file, rundir.ZstdExt), rundir.GzipExt)
	if rs.empty {
		sum.Fidelity = append(sum.Fidelity, sum.Records+" is empty: the run recorded no RPC")
	}
	if man.Incomplete {
		sum.Fidelity = append(sum.Fidelity, "the run is marked incomplete: it stopped before every experiment finished")
	}
	for _, name := range rs.order {
		if er := rs.Exps[name]; er != nil { // kept whole
			delete(rs.Exps, name)
			if err := r.experiment(rs, er); err != nil {
				return nil, err
			}
		}
	}
	r.prepare(rs)
	if err := r.jobs.wait(); err != nil {
		return nil, err
	}
	// The manifest's experiments without records.
	for _, me := range r.exps {
		if _, ok := r.done[me.Name]; !ok {
			if err := r.submit(me, &ExpRecords{Name: me.Name, transport: me.Transport}); err != nil {
				return nil, err
			}
		}
	}
	if err := r.jobs.wait(); err != nil {
		return nil, err
	}
	// Experiments in manifest order, then any found only in the records.
	for _, me := range r.exps {
		sum.Experiments = append(sum.Experiments, r.done[me.Name])
	}
	for _, name := range rs.order {
		if _, ok := r.metas[name]; !ok {
			sum.Experiments = append(sum.Experiments, r.done[name])
		}
	}
	sum.Baseline = ChooseBaseline(sum.Experiments, man.Baseline)
	sum.Headline, sum.Ratios = Headlines(sum.Experiments, sum.Baseline)
	sum.SweptParams = sweptParams(sum.Experiments)
	if sum.SweptParams == nil {
		sum.SweptParams = []string{}
	}
	return &Analysis{Sum: sum}, nil
}

// openAnatomy starts anatomy.csv in the output directory (when there is
// one) and the source of the servers' rows: one experiment at a time in
// the manifest's order, or the whole file at once.
func (r *runAnalysis) openAnatomy() error {
	if r.whole {
		all, err := anatomy.ReadServed(r.dir, r.anatExps)
		if err != nil {
			return err
		}
		r.served = func(exp string) ([]rundir.Served, error) { return all[exp], nil }
	} else {
		order := make([]string, len(r.man.Experiments))
		for i, me := range r.man.Experiments {
			order[i] = me.Name
		}
		g, err := anatomy.OpenServedGroups(r.dir, order)
		if err != nil {
			return err
		}
		r.groups, r.served = g, lastServed(g.For)
	}
	if r.out == "" {
		return nil
	}
	w, err := anatomy.Create(filepath.Join(r.out, rundir.Anatomies().File))
	if err != nil {
		return err
	}
	r.anat = w
	return nil
}

// closeAnatomy closes what openAnatomy opened.
func (r *runAnalysis) closeAnatomy() error {
	var errs []error
	if r.groups != nil {
		errs = append(errs, r.groups.Close())
	}
	if r.anat != nil {
		errs = append(errs, r.anat.Close())
	}
	return errors.Join(errs...)
}

// prepare derives, once, the slowdown ideal and each transport's own
// baseline from the calibration rows (or the manifest's digest of them).
func (r *runAnalysis) prepare(rs *RecordSet) {
	if r.prepared {
		return
	}
	r.prepared = true
	ideal, note := newIdeal(rs.Calib, r.man)
	if note != "" {
		r.sum.Fidelity = append(r.sum.Fidelity, note)
	}
	r.ideal = ideal
	r.baselines = map[string]*ownBaseline{}
	for tr, byLen := range rs.Calib {
		if b := NewOwnBaseline(byLen); b != nil {
			b.source = rundir.CalibrationExperiment(tr)
			r.baselines[tr] = b
		}
	}
	// Without calibration rows, the manifest's digest of them will do.
	for tr, cal := range r.man.Calibration {
		if r.baselines[tr] != nil {
			continue
		}
		if b := manifestBaseline(cal.RTTus, cal.ResponseBytes); b != nil {
			r.baselines[tr] = b
		}
	}
}

// experiment analyses one experiment of the records, once its rows are
// all read, and writes its exports.
func (r *runAnalysis) experiment(rs *RecordSet, er *ExpRecords) error {
	me, ok := r.metas[er.Name]
	if !r.whole {
		at := slices.IndexFunc(r.exps, func(m rundir.Experiment) bool { return m.Name == er.Name })
		if !ok || at < r.last {
			return fmt.Errorf("%s: experiment %s is not in the manifest's order: %w", rs.file, er.Name, rundir.ErrNotGrouped)
		}
		r.last = at
	}
	if !ok {
		me = rundir.Experiment{Name: er.Name, Transport: er.transport}
	}
	r.prepare(rs)
	return r.submit(me, er)
}

// submit has one experiment analysed among r.jobs: its servers' rows are
// read in turn, its statistics computed beside other experiments', and
// its rows of anatomy.csv written in turn.
func (r *runAnalysis) submit(me rundir.Experiment, er *ExpRecords) error {
	name := cmp.Or(r.partOf[me.Name], me.Name) // a part's network is its experiment's
	anat := slices.Contains(r.anatExps, name) && len(er.anat) > 0
	var (
		served []rundir.Served
		buf    *anatomy.Buffer
		e      Experiment
	)
	before := func() (err error) {
		if anat {
			served, err = r.served(name)
		}
		return err
	}
	work := func() error {
		write := func(*rundir.Anatomy) error { return nil }
		switch {
		case !anat || r.anat == nil:
		case r.c.jobs == 1:
			write = r.anat.Write // in turn already
		default:
			buf = anatomy.NewBuffer()
			write = buf.Write
		}
		var err error
		e, err = r.build(me, er, served, write)
		return err
	}
	after := func() error {
		if buf != nil {
			if err := r.anat.Append(buf); err != nil {
				return err
			}
		}
		r.done[er.Name] = e
		return nil
	}
	cost := er.cost()
	if r.c.jobs > 1 {
		r.c.Logger.Info("analysing experiment", "experiment", me.Name, "rpcs", er.Issued, "estimated_heap_MB", cost>>20)
	}
	return r.jobs.submit(cost, before, work, after)
}

// Estimates of the live heap an experiment's analysis holds at its peak,
// per measured RPC, and more per completed one the latency anatomy joins
// (its row, its servers' row, its packets' switch records, its
// decomposition and, with jobs, its rows of anatomy.csv buffered): W1's
// report at 144 hosts, 4.7 M RPCs an experiment, peaked at 4.45 GB live
// analysing one at a time (GODEBUG=gctrace=1; docs/reports.md), 950 B an
// RPC, and at about 5 GB an experiment with --jobs 2.
const (
	rowHeap     = 256
	anatomyHeap = 1024
)

// cost is the estimate of the live heap e's analysis holds at its peak.
func (e *ExpRecords) cost() int64 {
	return e.Issued*rowHeap + int64(len(e.anat))*anatomyHeap
}

// jobsMemory is the live heap the experiments analysed at once may hold
// together: a third of the memory the machine has available, so that with
// the collector's room over the live heap (up to as much again, less near
// the soft limit, memlimit.Machine) and an estimate that is only one, the
// rest of the machine keeps a third; 0 (no bound) where that is unknown.
// At 40% two of W1's 10 ms experiments fitted by 2% and took 22 GB.
func jobsMemory() int64 {
	a, ok := memlimit.Available()
	if !ok {
		return 0
	}
	return a / 3
}

// build computes one experiment's statistics from its records er, its
// entry in the manifest me and its servers' rows, hands its rows of the
// anatomy to write, and writes the exports of its raw records.
func (r *runAnalysis) build(me rundir.Experiment, er *ExpRecords, served []rundir.Served, write func(*rundir.Anatomy) error) (Experiment, error) {
	if err := r.ctx.Err(); err != nil {
		return Experiment{}, err
	}
	c, man := r.c, r.man
	if me.Transport == "" {
		me.Transport = er.transport
	}
	ec := c
	ec.headlinePhase = headlinePhase(man, me)
	ec.phaseOrder, _ = scenarioPhases(man)
	ec.collOrder, ec.collPhases = collectivePhases(man)
	ec.spread = newFabricSpread(man.Fabric)
	ec.matrices = matrixPhases(man)
	exp, hist := computeExperiment(er, me, r.ideal, r.baselines[me.Transport], ec)
	if _, inMan := r.metas[me.Name]; !inMan && r.hasMan {
		exp.Fidelity = append(exp.Fidelity, "experiment is in the records but not in manifest.json")
	}
	if er.Issued == 0 {
		exp.Fidelity = append(exp.Fidelity, "no measure-phase records for this experiment")
	}
	name := cmp.Or(r.partOf[me.Name], me.Name) // a part's network is its experiment's
	st, rates, err := ReadSwitchStats(r.dir, name)
	if err != nil {
		return Experiment{}, err
	}
	st.markUnavailable(r.target)
	exp.Switch = st
	if w := lostLinkWarning(st, float64(me.Ended-me.Started)/1e9); w != "" {
		exp.Fidelity = append(exp.Fidelity, w)
	}
	exp.Fidelity = append(exp.Fidelity, losslessDropWarnings(st, man.Scenario)...)
	if r.target == targetBMv2 {
		exp.Fidelity = append(exp.Fidelity, bmv2Note)
	}
	defRate := float64(man.RateBps())
	if defRate <= 0 {
		defRate = float64(me.LinkBps) // a run written before the fabric description
	}
	if accs := r.tel[name]; len(accs) > 0 {
		exp.Series, exp.Links = analyseTelemetry(accs, rates, defRate, me.Started)
		exp.MeanLinkUtil = meanUtil(exp.Links)
		exp.BusiestLinkUtil = busiestUtil(exp.Links)
	}
	exp.HostGauges, exp.Active = analyseHosts(r.hostTel[name], me.Started)
	exp.Bands = phasesOf(me)
	if slices.Contains(r.anatExps, name) {
		if exp.Anatomy, err = r.anatomy(name, anatRows{exp: er.Name, transport: er.transport, rows: er.anat}, served, write); err != nil {
			return Experiment{}, err
		}
		er.anat = nil
		if w := anatomyWarning(exp.Anatomy); w != "" {
			exp.Fidelity = append(exp.Fidelity, w)
		}
	}
	exp.TCPConns = r.tcp[name]
	if exp.TCPConns == nil {
		exp.TCPConns = []TCPConn{}
	}
	if exp.HostGauges == nil {
		exp.HostGauges = []HostGauges{}
	}
	byRole, hostsByRole := countersByRole(me.Hosts)
	counters := me.TransportCounters
	if len(counters) == 0 && len(me.Hosts) > 0 {
		counters = map[string]uint64{}
		for _, h := range me.Hosts {
			rundir.MergeCounters(counters, h.Transport)
		}
	}
	exp.Homa = &TransportStats{Retries: er.retries, Counters: counters, ByPriority: byPriority(counters),
		ByRole: byRole, Hosts: hostsByRole}
	if r.out != "" {
		if err := writeRawExports(r.out, &exp, hist); err != nil {
			return Experiment{}, err
		}
	}
	// The raw samples are in the files now; the summary keeps aggregates.
	exp.samples, exp.clients = nil, nil
	return exp, nil
}

// anatomy decomposes one experiment's completed measured RPCs (rows) with
// its servers' rows, handing each to write, and returns the summary of its
// short ones.
func (r *runAnalysis) anatomy(exp string, rows anatRows, served []rundir.Served, write func(*rundir.Anatomy) error) (*anatomy.Summary, error) {
	if rows.Len() == 0 {
		return nil, nil
	}
	return anatomy.Experiment(r.ctx, r.dir, exp, r.man.Fabric, rows, served, write)
}

// computeExperiment derives every statistic of one experiment's records.
func computeExperiment(er *ExpRecords, me rundir.Experiment, ideal *idealRTT, base *ownBaseline, c config) (Experiment, *hdrhistogram.Histogram) {
	e := newExperiment(er, me, base, ideal, c)

	e.rates(er, me, c)
	e.backlog(er, me)
	e.Collectives = collectiveStats(&er.steps, c.collOrder, c.collPhases, ideal, base, c.spread, c.confidence)
	e.Flows = matrixStats(er.flows, er.flowLinks, c.matrices, ideal, c.confidence)
	for _, ms := range e.Flows {
		if ms.OrderError != "" {
			e.Fidelity = append(e.Fidelity, fmt.Sprintf("connection matrix %s: %s", ms.Phase, ms.OrderError))
		}
	}
	for _, cs := range e.Collectives {
		if cs.OrderError != "" {
			e.Fidelity = append(e.Fidelity, fmt.Sprintf("collective %s: a step started before its input arrived: %s", cs.Phase, cs.OrderError))
		}
	}

	s := er.Samples
	if len(s) == 0 {
		return e, nil
	}
	slices.SortFunc(s, func(a, b sample) int {
		if a.length != b.length {
			return cmp.Compare(a.length, b.length)
		}
		return cmp.Compare(a.rtt, b.rtt)
	})
	n := len(s)
	rtts := make([]int64, n)
	hist := hdrhistogram.New(1, hdrMaxNs, 3)
	for i, x := range s {
		rtts[i] = x.rtt
		_ = hist.RecordValue(min(max(x.rtt, 1), hdrMaxNs))
	}
	var slows, own []float64
	if ideal != nil {
		slows = make([]float64, n)
		for i, x := range s {
			slows[i] = float64(x.rtt) / ideal.at(x.length, int64(x.resp), int(x.links))
		}
	}
	if base != nil {
		// Outside the calibrated lengths the baseline is extrapolated;
		// say so.
		lo, hi := base.lengths[0], base.lengths[len(base.lengths)-1]
		if s[n-1].length > 2*hi || 2*s[0].length < lo {
			e.Fidelity = append(e.Fidelity, fmt.Sprintf("requests span %d–%d bytes but calibration only %d–%d: the transport's own unloaded RTT is extrapolated outside that range", s[0].length, s[n-1].length, lo, hi))
		}
		own = make([]float64, n)
		for i, x := range s {
			own[i] = float64(x.rtt) / base.At(x.length)
		}
	}

	e.digest = cperfDigest(s, slows)
	e.samples, e.clients = s, er.clients

	e.bySize(s, rtts, slows, own, c)

	// Per phase, by the phase each client ran (runs that record it).
	phaseOf := func(x sample) string {
		if int(x.client) < len(er.clients) {
			return me.ClientPhases[er.clients[x.client]]
		}
		return ""
	}
	if ps := phaseStats(s, phaseOf, c.phaseOrder, ideal, c.confidence); ps != nil {
		e.Phases = ps
	}

	e.short(s, ideal, phaseOf, c)

	if ideal != nil {
		e.ShortestHalf = shortestHalf(s, ideal, c.confidence)
	}

	e.Fidelity = append(e.Fidelity, e.sampleWarnings(e.DurationS)...)

	// Whole experiment.
	slices.Sort(rtts)
	e.RTT = percentiles(rtts, c.confidence, 1e-3)
	if slows != nil {
		slices.Sort(slows)
		p := percentiles(slows, c.confidence, 1)
		e.Slowdown = &p
	}
	return e, hist
}

// newExperiment starts an experiment's statistics with what the manifest
// and the counts say: names, params, calibration and the RPCs' fate.
func newExperiment(er *ExpRecords, me rundir.Experiment, base *ownBaseline, ideal *idealRTT, c config) Experiment {
	e := Experiment{
		Name:      me.Name,
		Transport: me.Transport,
		Label:     me.Label,
		Config:    me.Config,
		Params:    make(map[string]any, len(me.Params)),
		RPCs: RPCCounts{
			Issued: er.Issued, Completed: er.completed, Failed: er.failed + er.inFlight,
			InFlight: er.inFlight, Warmup: er.warmup,
		},
		Short:    Short{MaxLength: c.ShortMax},
		Phases:   []PhaseStats{},
		BySize:   []SizeRow{},
		Fidelity: []string{},
		Links:    []LinkStats{},
	}
	if len(er.Failures) > 0 || er.inFlight > 0 {
		e.RPCs.Failures = maps.Clone(er.Failures)
		if e.RPCs.Failures == nil {
			e.RPCs.Failures = map[string]int64{}
		}
		if er.inFlight > 0 {
			e.RPCs.Failures[Unfinished] = er.inFlight
		}
	}
	for k, v := range me.Params {
		e.Params[k] = v
	}
	e.Config = ConfigID(&e) // transport-label in runs written before configs had labels
	e.Fidelity = append(e.Fidelity, me.Fidelity...)
	if me.Incomplete {
		e.Fidelity = append(e.Fidelity, "experiment marked incomplete")
	}
	if er.inFlight > 0 {
		e.Fidelity = append(e.Fidelity, fmt.Sprintf("%d RPCs were still in flight at the end; they enter no percentile, so tails are underestimated", er.inFlight))
	}
	if er.failed > 0 {
		e.Fidelity = append(e.Fidelity, fmt.Sprintf("%d of %d RPCs failed (%.2f%%)", er.failed, er.Issued, 100*float64(er.failed)/float64(er.Issued)))
	}
	if base != nil {
		e.Calibration = &Calibration{
			Experiment: base.source,
			Lengths:    len(base.lengths), Samples: base.samples,
			MinLength: base.lengths[0], MaxLength: base.lengths[len(base.lengths)-1],
		}
	}
	if ideal != nil {
		hop := ideal.hopNs
		e.Ideal = &Ideal{BaseRTTus: ideal.baseNs / 1e3, BaseRequest: ideal.baseReq, BaseResponse: ideal.baseResp,
			BaseLinks: ideal.baseLinks, Source: ideal.source, LinkBps: ideal.rateBps, UplinkBps: ideal.uplinkBps, MTU: ideal.mtu,
			FrameOverhead: ideal.overhead, HeaderBytes: headerBytes, HopNs: &hop, OneWay: ideal.oneWay}
	} else if er.completed > 0 {
		e.Fidelity = append(e.Fidelity, "no calibration and link rate: slowdown not computed")
	}
	return e
}

// rates fills the experiment's duration, goodput and offered load, and
// says when the clients could not keep to the configured rate.
func (e *Experiment) rates(er *ExpRecords, me rundir.Experiment, c config) {
	dur := float64(me.DurationMs) / 1e3
	if dur <= 0 && er.last > er.first {
		dur = float64(er.last-er.first) / 1e9
	}
	e.DurationS = dur
	if dur > 0 {
		e.GoodputGbps = float64(er.bytes) * 8 / dur / 1e9
		e.OfferedGbps = float64(er.offered) * 8 / dur / 1e9
		e.OfferedRequestGbps = float64(er.reqBytes) * 8 / dur / 1e9
	}
	if me.ConfiguredBps > 0 {
		e.ConfiguredOpenGbps = Ptr(me.ConfiguredBps / 1e9)
	}
	if me.ConfiguredBps > 0 && me.UnratedClients == 0 {
		e.ConfiguredGbps = Ptr(me.ConfiguredBps / 1e9)
	}
	// Counts, not bytes, are compared: heavy-tailed sizes make the bytes of
	// a short run vary far more than the number of RPCs. A Poisson count
	// varies by about its square root.
	if want := me.ConfiguredRPS * dur; want >= 20 {
		got := float64(er.Issued)
		if got < want-max(4*math.Sqrt(want), 0.05*want) {
			e.Fidelity = append(e.Fidelity, fmt.Sprintf("the clients issued %d measured RPCs where the configured rate (%.0f/s over %.1f s) asks for about %.0f (%.0f%%): the machine could not keep up with the configured load",
				er.Issued, me.ConfiguredRPS, dur, want, 100*got/want))
		}
	}
	slices.Sort(er.lags)
	e.SendLag = percentiles(er.lags, c.confidence, 1e-3)

}

// backlog fills the receivers' load and, when the backlog grew through the
// measurement, the overload and its fidelity warning.
func (e *Experiment) backlog(er *ExpRecords, me rundir.Experiment) {
	m0 := me.Started + me.WarmupMs*1e6
	m1 := m0 + me.DurationMs*1e6
	end := me.Ended
	if me.Started == 0 || me.DurationMs <= 0 { // no manifest: the records' own span
		m0, m1, end = er.first, er.last, er.last
	}
	e.Receivers = receiverLoads(er.spans, er.servers, float64(m1-m0)/1e9)
	e.Overload, e.Backlog = detectOverload(er.spans, m0, m1, end)
	if s := OverloadSentence(e); s != "" {
		e.Fidelity = append(e.Fidelity, s)
	}
}

// bySize fills the by-size table from s sorted by length, with rtts, slows
// and own in s's order (each bucket is sorted in place, keeping one copy).
func (e *Experiment) bySize(s []sample, rtts []int64, slows, own []float64, c config) {
	n := len(s)
	bounds, binning := bucketBounds(s, c)
	e.Binning = binning
	var scratch []int64
	for _, b := range bounds {
		lo, hi := b[0], b[1]
		slices.Sort(rtts[lo:hi])
		row := SizeRow{
			Length: s[hi-1].length, MinLength: s[lo].length,
			CumFrac: float64(hi) / float64(n), Samples: hi - lo,
		}
		p50, p99, p999 := estimate(rtts[lo:hi], 0.5, c.confidence, 1e-3), estimate(rtts[lo:hi], 0.99, c.confidence, 1e-3), estimate(rtts[lo:hi], 0.999, c.confidence, 1e-3)
		row.P50us, row.P50CI = p50.Value, p50.interval()
		row.P99us, row.P99CI = p99.Value, p99.interval()
		row.P999us, row.P999CI = p999.Value, p999.interval()
		if slows != nil {
			slices.Sort(slows[lo:hi])
			s50, s99, s999 := estimate(slows[lo:hi], 0.5, c.confidence, 1), estimate(slows[lo:hi], 0.99, c.confidence, 1), estimate(slows[lo:hi], 0.999, c.confidence, 1)
			row.S50, row.S50CI = Ptr(s50.Value), s50.interval()
			row.S99, row.S99CI = Ptr(s99.Value), s99.interval()
			row.S999, row.S999CI = Ptr(s999.Value), s999.interval()
		}
		if own != nil {
			slices.Sort(own[lo:hi])
			row.OwnS50 = Ptr(estimate(own[lo:hi], 0.5, c.confidence, 1).Value)
			row.OwnS99 = Ptr(estimate(own[lo:hi], 0.99, c.confidence, 1).Value)
		}
		scratch = phase(scratch, s[lo:hi], func(x sample) int64 { return x.reqOut })
		row.ReqOutP50us, row.ReqOutP99us = medianAndP99(scratch, c.confidence)
		scratch = phase(scratch, s[lo:hi], func(x sample) int64 { return x.firstResp })
		row.FirstRespP50us, row.FirstRespP99us = medianAndP99(scratch, c.confidence)
		e.BySize = append(e.BySize, row)
	}
}

// short fills the headline: short messages, both directions within the
// bound (rundir.IsShort), or with a headline phase, that phase's RPCs.
func (e *Experiment) short(s []sample, ideal *idealRTT, phaseOf func(sample) string, c config) {
	var short []int64
	var shortSlows []float64
	for _, x := range s {
		in := rundir.IsShort(x.length, int64(x.resp), c.ShortMax)
		if c.headlinePhase != "" {
			in = phaseOf(x) == c.headlinePhase
		}
		if !in {
			continue
		}
		short = append(short, x.rtt)
		if ideal != nil {
			shortSlows = append(shortSlows, float64(x.rtt)/ideal.at(x.length, int64(x.resp), int(x.links)))
		}
	}
	if c.headlinePhase != "" {
		e.Short.Phase = c.headlinePhase
	}
	nShort := len(short)
	e.Short.Count = int64(nShort)
	if nShort > 0 {
		slices.Sort(short)
		p50, p99, p999 := estimate(short, 0.5, c.confidence, 1e-3), estimate(short, 0.99, c.confidence, 1e-3), estimate(short, 0.999, c.confidence, 1e-3)
		e.Short.P50us, e.Short.P50CI = Ptr(p50.Value), p50.interval()
		e.Short.P99us, e.Short.P99CI = Ptr(p99.Value), p99.interval()
		e.Short.P999us, e.Short.P999CI = Ptr(p999.Value), p999.interval()
		e.CCDF = CcdfPoints(short, 1e-3)
		if shortSlows != nil {
			ss := shortSlows
			slices.Sort(ss)
			e.Short.S50 = Ptr(estimate(ss, 0.5, c.confidence, 1).Value)
			e.Short.S99 = Ptr(estimate(ss, 0.99, c.confidence, 1).Value)
		}
		// A sender that falls behind by more than a short RPC takes shows
		// the machine, not the network.
		if p99lag := e.SendLag.P99; p99lag != nil && e.Short.P50us != nil && *p99lag > *e.Short.P50us {
			e.Fidelity = append(e.Fidelity, fmt.Sprintf("send lag P99 %.0f µs exceeds the short-message median RTT %.0f µs: the sender could not keep to its schedule", *p99lag, *e.Short.P50us))
		}
	}
}

// shortestHalf is the slowdown of the shortest half of the messages, by
// request length (the Homa papers' "shortest 50%"): every RPC no longer
// than the median length; s is sorted by length.
func shortestHalf(s []sample, ideal *idealRTT, conf float64) *ShortestHalf {
	medLen := s[(len(s)-1)/2].length
	var half []float64
	for _, x := range s {
		if x.length > medLen {
			break // s is sorted by length
		}
		half = append(half, float64(x.rtt)/ideal.at(x.length, int64(x.resp), int(x.links)))
	}
	slices.Sort(half)
	s99 := estimate(half, 0.99, conf, 1)
	return &ShortestHalf{MaxLength: medLen, Count: int64(len(half)),
		S50: Ptr(estimate(half, 0.5, conf, 1).Value), S99: Ptr(s99.Value), S99CI: s99.interval()}
}

// phase collects, sorted into buf, the nonzero (reported) values of one
// transport time of s.
func phase(buf []int64, s []sample, of func(sample) int64) []int64 {
	buf = buf[:0]
	for _, x := range s {
		if v := of(x); v > 0 {
			buf = append(buf, v)
		}
	}
	slices.Sort(buf)
	return buf
}

// medianAndP99 of sorted ns values, in µs; nil for none.
func medianAndP99(sorted []int64, conf float64) (p50, p99 *float64) {
	if len(sorted) == 0 {
		return nil, nil
	}
	return Ptr(estimate(sorted, 0.5, conf, 1e-3).Value), Ptr(estimate(sorted, 0.99, conf, 1e-3).Value)
}

// bucketBounds splits length-sorted samples into [lo, hi) index ranges:
// one per distinct length when there are at most maxExact, else log-spaced
// bins (10 per decade) merged until each holds enough samples.
func bucketBounds(s []sample, c config) ([][2]int, string) {
	var exact [][2]int
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j].length == s[i].length {
			j++
		}
		exact = append(exact, [2]int{i, j})
		i = j
	}
	if len(exact) <= c.maxExact {
		return exact, "exact"
	}
	minBin := min(c.minBinSamples, max(len(s)/20, 100))
	bin := func(l int64) int { return int(math.Floor(10 * math.Log10(float64(max(l, 1))))) }
	var out [][2]int
	lo := 0
	for i := 0; i < len(exact); i++ {
		hi := exact[i][1]
		// Close the bin at a log-bin edge once it is large enough.
		atEdge := i+1 == len(exact) || bin(s[exact[i+1][0]].length) != bin(s[exact[i][0]].length)
		if atEdge && hi-lo >= minBin {
			out = append(out, [2]int{lo, hi})
			lo = hi
		}
	}
	if lo < len(s) {
		if len(out) == 0 {
			out = append(out, [2]int{lo, len(s)})
		} else {
			out[len(out)-1][1] = len(s)
		}
	}
	return out, "log"
}

// CcdfPoints samples the complementary CDF P(X > x) of sorted values at up
// to 50 tail levels per decade, down to 1/n; x is scaled by scale.
func CcdfPoints(sorted []int64, scale float64) []Point {
	n := len(sorted)
	var pts []Point
	lastIdx := -1
	for k := 0; ; k++ {
		p := math.Pow(10, -float64(k)/50)
		if p < 1/float64(n) {
			break
		}
		// The smallest index i with at most p*n samples above x(i).
		i := min(max(n-int(math.Floor(p*float64(n))), 0), n-1)
		if i == lastIdx {
			continue
		}
		lastIdx = i
		// Move to the last equal value so P(X > x) is exact.
		for i+1 < n && sorted[i+1] == sorted[i] {
			i++
		}
		tail := float64(n-1-i) / float64(n)
		if tail <= 0 {
			break
		}
		pts = append(pts, Point{float64(sorted[i]) * scale, tail})
	}
	return pts
}

// percentiles summarises sorted samples, scaling values by scale.
func percentiles[T int64 | float64](sorted []T, conf, scale float64) Percentiles {
	p := Percentiles{Count: len(sorted)}
	if len(sorted) == 0 {
		return p
	}
	p50, p99, p999 := estimate(sorted, 0.5, conf, scale), estimate(sorted, 0.99, conf, scale), estimate(sorted, 0.999, conf, scale)
	p.P50, p.P50CI = Ptr(p50.Value), p50.interval()
	p.P99, p.P99CI = Ptr(p99.Value), p99.interval()
	p.P999, p.P999CI = Ptr(p999.Value), p999.interval()
	p.Max = Ptr(float64(sorted[len(sorted)-1]) * scale)
	return p
}

func (e Estimate) interval() Interval { return Interval{e.Lo, e.Hi} }

// Ptr returns a pointer to v, nil for NaN or infinities (JSON null).
func Ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// sweptParams lists params whose values differ between experiments.
func sweptParams(exps []Experiment) []string {
	values := map[string]map[string]bool{}
	for _, e := range exps {
		for k, v := range e.Params {
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][fmt.Sprint(v)] = true
		}
	}
	var out []string
	for k, vs := range values {
		if len(vs) > 1 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// GroupKey is an experiment's params without the transport, so the Homa and
// TCP experiments of one configuration share a key.
func GroupKey(e Experiment) string { return ParamsKey(e, "") }

// ParamsKey formats an experiment's params, sorted, without the transport
// and without the param named except.
func ParamsKey(e Experiment, except string) string {
	keys := make([]string, 0, len(e.Params))
	for k := range e.Params {
		if k != "transport" && k != except {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%v", k, e.Params[k])
	}
	return b.String()
}

// busiestUtil is the largest mean utilisation of a rated link; nil for
// none.
func busiestUtil(links []LinkStats) *float64 {
	var best *float64
	for _, l := range links {
		if l.RateBps > 0 && (best == nil || l.MeanUtil > *best) {
			best = Ptr(l.MeanUtil)
		}
	}
	return best
}

// meanUtil averages the mean utilisation of the links with a known rate.
func meanUtil(links []LinkStats) *float64 {
	var sum float64
	n := 0
	for _, l := range links {
		if l.RateBps > 0 {
			sum += l.MeanUtil
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return Ptr(sum / float64(n))
}

// countersByRole merges the hosts' transport counters role by role and
// counts the hosts of each role; nil when the manifest has no hosts.
func countersByRole(hosts []rundir.HostCounters) (map[string]map[string]uint64, map[string]int) {
	if len(hosts) == 0 {
		return nil, nil
	}
	byRole := map[string]map[string]uint64{}
	n := map[string]int{}
	for _, h := range hosts {
		role := h.Role
		if role == "" {
			role = "unknown"
		}
		if byRole[role] == nil {
			byRole[role] = map[string]uint64{}
		}
		rundir.MergeCounters(byRole[role], h.Transport)
		n[role]++
	}
	return byRole, n
}

// byPriority picks the counters named <name>_p<N> (N a priority 0..7) and
// lays them out by priority; nil when there are none.
func byPriority(counters map[string]uint64) map[string][]uint64 {
	var out map[string][]uint64
	for k, v := range counters {
		i := strings.LastIndex(k, "_p")
		if i <= 0 {
			continue
		}
		p, err := strconv.Atoi(k[i+2:])
		if err != nil || p < 0 || p > 7 {
			continue
		}
		if out == nil {
			out = map[string][]uint64{}
		}
		name := k[:i]
		if out[name] == nil {
			out[name] = make([]uint64, 8)
		}
		out[name][p] += v
	}
	return out
}

// SortedKeys returns a map's keys in ascending order.
func SortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
