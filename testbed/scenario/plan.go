package scenario

import (
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/internal/units"
	"github.com/homatb/homatb/workloads"
)

// Plan is a validated scenario expanded into the experiments to run, in the
// order they run.
type Plan struct {
	File string
	// Base is the scenario without sweep values: the network, switches and
	// calibration of the whole run come from it.
	Base        *Scenario
	Experiments []Experiment
	// ClockDefaults are the settings Base left out that a simulated run
	// takes from the modelled hardware (clock.go); nil when emulated.
	ClockDefaults []ClockDefault
	// Simulate is true for a plan checked for the simulator.
	Simulate bool
	// CPUs is Options.CPUs.
	CPUs int
}

// Experiment is one measurement: one transport, one combination of sweep
// values and one repetition.
type Experiment struct {
	Name      string
	Transport Transport
	// Transports are the transports a shared experiment runs at once,
	// each carrying the phases that name it (cotenancy.go); Transport is
	// the first of them. Nil for an experiment of one transport.
	Transports []Transport
	// Params holds the sweep values by parameter path (as written in the
	// sweep), plus "repetition" when there is more than one.
	Params     map[string]string
	ParamOrder []string
	Repetition int
	Seed       uint64
	// Scenario is the resolved scenario with this experiment's sweep
	// values applied.
	Scenario *Scenario
}

// Options tunes validation.
type Options struct {
	// SizeSpec checks a phase's size spec and returns its mean and
	// longest length; nil means workloads.ParseSizeSpec. Tests replace it.
	SizeSpec func(string) (SizeStats, error)
	// Repetitions, when positive, replaces the scenario's repetitions
	// (homatb run --repetitions).
	Repetitions int
	// Simulate checks the scenario for homatb run --simulate: the limits
	// that are Mininet's (the hosts' shaped rate) do not apply.
	Simulate bool
	// CPUs is the vCPUs of the machine that will emulate the run, for
	// Warnings' capacity check (CapacityWarning); 0: unknown, no check.
	CPUs int
}

// SizeStats is what validation needs of a size distribution.
type SizeStats struct {
	// Mean turns a load fraction into an RPC rate; Max is checked against
	// the transports' message limits.
	Mean float64
	Max  int
	// Dist is the distribution, when known: it gives the mean packet
	// count that wire bytes need (else it is worked out from Mean).
	Dist workloads.SizeDist
}

func (o Options) sizeSpec() func(string) (SizeStats, error) {
	if o.SizeSpec != nil {
		return o.SizeSpec
	}
	return SizeStatsOf
}

// SizeStatsOf parses a size spec with workloads.ParseSizeSpec and returns
// its mean and longest length.
func SizeStatsOf(spec string) (SizeStats, error) {
	d, err := workloads.ParseSizeSpec(spec)
	if err != nil {
		return SizeStats{}, err
	}
	return SizeStats{Mean: d.Mean(), Max: d.Max(), Dist: d}, nil
}

// MeanSize parses a size spec with workloads.ParseSizeSpec and returns the
// mean message length, which turns a load fraction into an RPC rate.
func MeanSize(spec string) (float64, error) {
	st, err := SizeStatsOf(spec)
	return st.Mean, err
}

// Warnings lists, once each, what is valid but will not measure what the
// author likely meant (links loaded beyond their rate), with the
// experiments it applies to.
func (p *Plan) Warnings() []string {
	var out []string
	count := map[string]int{}
	for i := range p.Experiments {
		e := &p.Experiments[i]
		ws := slices.Concat(OverloadWarnings(e.Scenario), FabricOverloadWarnings(e.Scenario), PFCWarnings(e.Scenario, p.Simulate), MarkingWarnings(e), OrderWarnings(e))
		if w := CapacityWarning(e, p.Simulate, p.CPUs); w != "" {
			ws = append(ws, w)
		}
		for _, w := range ws {
			if count[w] == 0 {
				out = append(out, w)
			}
			count[w]++
		}
	}
	for i, w := range out {
		if n := count[w]; n < len(p.Experiments) {
			out[i] = fmt.Sprintf("%s (%d of %d experiments)", w, n, len(p.Experiments))
		}
	}
	return out
}

// Load reads, validates and expands a scenario file: the whole path that
// `homatb validate`, `homatb run --dry-run` and `homatb run` share.
func Load(path string, opt Options) (*Plan, error) {
	src, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	return src.Plan(opt)
}

// sweepable lists the top-level sections a sweep may change. The network,
// switch and calibration are built once per run, so sweeping them would need
// one run per value.
var sweepable = map[string]bool{
	"transports": true, "phases": true, "duration": true, "warmup": true, "drain": true, "seed": true,
	"adversaries": true,
}

// sweepablePaths are single settings outside those sections that the
// switches change between experiments without a new network.
var sweepablePaths = map[string]bool{"switch.defences": true, "host_qdisc": true}

// resolvedParam is one parameter a sweep sets.
type resolvedParam struct {
	param string
	canon string
	line  int
	// transport is the index of the transport whose parameter this is, -1
	// when it is something all transports share.
	transport int
}

// resolvedSweep is a sweep's parameters resolved against the scenario.
type resolvedSweep struct {
	params []resolvedParam
	// transport is the index of the transport whose parameters the sweep
	// sets, -1 when it sets something all transports share (or the
	// parameters of several transports).
	transport int
	// traffic says whether the sweep's values change the traffic (a
	// parameter shared by all transports that is not a switch setting), so
	// its values get seeds of their own.
	traffic bool
}

// Plan validates the scenario and every sweep combination and returns the
// experiments (stages two and three).
func (src *Source) Plan(opt Options) (*Plan, error) {
	base := src.Raw
	zeros := explicitZeros(base, givenIn(src.idx, nil))
	applyDefaults(base)
	src.resolveFiles(base)
	if opt.Repetitions > 0 {
		base.Repetitions = opt.Repetitions
	}
	opt.Simulate = opt.Simulate || base.Simulated
	clock := clockDefaults(base, opt.Simulate, givenIn(src.idx, nil), opt.sizeSpec())
	c := &checker{file: src.File, idx: src.idx, sizeSpec: opt.sizeSpec(), simulate: opt.Simulate}
	for _, z := range zeros {
		c.errorf(z.path, "expected %s, got 0", z.want)
	}
	c.check(base)
	sweeps := src.checkSweeps(c, base)
	if len(c.errs) > 0 {
		return nil, c.errs.unique()
	}
	clock = unswept(clock, sweeps)
	nCombos := 1
	for _, sw := range base.Sweep {
		nCombos *= len(sw.Values)
	}
	total := nCombos * len(base.Transports) * base.Repetitions
	if base.Shared() {
		total = nCombos * base.Repetitions // one experiment runs them all
	}
	if total > MaxExperiments {
		return nil, Errors{{File: src.File, Line: src.idx.lineOf("sweep"), Field: "sweep",
			Msg: fmt.Sprintf("expands to %d experiments; expected at most %d", total, MaxExperiments)}}
	}
	type combination struct {
		s      *Scenario
		params map[string]string
		order  []string
		idx    []int // the value index of each sweep
	}
	var combos []combination
	var errs Errors
	for k := 0; k < nCombos; k++ {
		s, params, order, own, err := src.combination(base, sweeps, k, opt)
		if err != nil {
			errs = append(errs, err.(Errors)...)
			continue
		}
		clock = withSwept(clock, own)
		combos = append(combos, combination{s, params, order, sweepIndexes(base, k)})
	}
	if len(errs) > 0 {
		// A bad swept value fails every combination it is part of: say so once.
		return nil, errs.unique()
	}
	scenarios := make([]*Scenario, len(combos))
	for i, cb := range combos {
		scenarios[i] = cb.s
	}
	used := &checker{file: src.File, idx: src.idx}
	used.checkTransportsUsed(base, scenarios)
	if len(used.errs) > 0 {
		return nil, used.errs.unique()
	}
	plan := &Plan{File: src.File, Base: base, ClockDefaults: clock, Simulate: opt.Simulate, CPUs: opt.CPUs}
	names := map[string]bool{}
	// Repetitions outermost: each runs every configuration once (ABAB, not
	// AABB), so a change in the machine's load spreads over all of them.
	for rep := 1; rep <= base.Repetitions; rep++ {
		for _, cb := range combos {
			transports := cb.s.Transports
			if base.Shared() {
				transports = []Transport{sharedTransport(cb.s.SharedTransports())}
			}
			for ti, t := range transports {
				if !base.Shared() && !sweepsApply(sweeps, cb.idx, ti) {
					continue // another transport's value: this one ran with the first
				}
				e := Experiment{
					Transport: t, Params: map[string]string{}, Repetition: rep, Scenario: cb.s,
					// Seeds differ by traffic and repetition but not by
					// transport or its parameters, so the configurations
					// compared see the same arrivals.
					Seed: *cb.s.Seed + uint64(trafficIndex(base, sweeps, cb.idx))*1000003 + uint64(rep-1),
				}
				if base.Shared() {
					e.Transports = cb.s.SharedTransports()
					e.Transport = e.Transports[0]
				}
				for _, p := range cb.order {
					if pt := paramTransport(sweeps, p); pt < 0 || pt == ti || base.Shared() {
						e.Params[p] = cb.params[p]
						e.ParamOrder = append(e.ParamOrder, p)
					}
				}
				if base.Repetitions > 1 {
					e.Params["repetition"] = strconv.Itoa(rep)
					e.ParamOrder = append(e.ParamOrder, "repetition")
				}
				e.Name = experimentName(cb.s.Name, t, e)
				if names[e.Name] {
					errs = append(errs, &Error{File: src.File, Line: src.idx.lineOf("sweep"), Field: "sweep",
						Msg: fmt.Sprintf("two experiments would be named %q; sweep values must differ", e.Name)})
				}
				names[e.Name] = true
				plan.Experiments = append(plan.Experiments, e)
			}
		}
	}
	errs = append(errs, src.checkCaptureExperiments(plan)...)
	if len(errs) > 0 {
		return nil, errs.unique()
	}
	return plan, nil
}

// sweepIndexes is the value index of each sweep in combination k (mixed
// radix, the last sweep varying fastest).
func sweepIndexes(base *Scenario, k int) []int {
	idx := make([]int, len(base.Sweep))
	for i, rem := len(base.Sweep)-1, k; i >= 0; i-- {
		n := len(base.Sweep[i].Values)
		idx[i], rem = rem%n, rem/n
	}
	return idx
}

// sweepsApply reports whether transport ti runs in a combination: every
// sweep of another transport's parameter is at its first value (ti's
// experiment is the same at the others).
func sweepsApply(sweeps []resolvedSweep, idx []int, ti int) bool {
	for i, sw := range sweeps {
		if sw.transport >= 0 && sw.transport != ti && idx[i] != 0 {
			return false
		}
	}
	return true
}

// trafficIndex numbers a combination by the values of the sweeps that
// change the traffic (mixed radix, as sweepIndexes): one transport's
// parameters and the switch's settings (sweepablePaths) leave it as it is,
// so their values are compared on the same seeds.
func trafficIndex(base *Scenario, sweeps []resolvedSweep, idx []int) int {
	k := 0
	for i, sw := range sweeps {
		if sw.traffic {
			k = k*len(base.Sweep[i].Values) + idx[i]
		}
	}
	return k
}

// paramTransport is the index of the transport whose parameter param (as
// written in a sweep) is, -1 when all transports share it.
func paramTransport(sweeps []resolvedSweep, param string) int {
	for _, sw := range sweeps {
		for _, p := range sw.params {
			if p.param == param {
				return p.transport
			}
		}
	}
	return -1
}

// resolveFiles makes the file: paths of the phases' size specs relative
// to the scenario file's directory, not to the working directory.
func (src *Source) resolveFiles(s *Scenario) {
	dir := filepath.Dir(src.File)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // the agents do not share the working directory
	}
	for i := range s.Phases {
		s.Phases[i].Sizes = workloads.ResolveFiles(s.Phases[i].Sizes, dir)
		if m := s.Phases[i].ConnectionMatrix; m != "" && !filepath.IsAbs(m) {
			s.Phases[i].ConnectionMatrix = filepath.Join(dir, m)
		}
	}
}

// checkSweeps resolves every sweep parameter against the base scenario,
// and checks that each value of a lockstep sweep has one item per param.
func (src *Source) checkSweeps(c *checker, base *Scenario) []resolvedSweep {
	out := make([]resolvedSweep, len(base.Sweep))
	seen := map[string]int{}
	for i, sw := range base.Sweep {
		p := fmt.Sprintf("sweep[%d]", i)
		out[i] = resolvedSweep{transport: -1}
		key := ".param"
		switch {
		case sw.Param != "" && sw.Params != nil:
			c.errorf(p+".params", "expected param (one parameter) or params (several in lockstep), not both")
			continue
		case sw.Params != nil:
			key = ".params"
			if len(sw.Params) == 0 {
				c.errorf(p+".params", "expected a non-empty list of parameters to change in lockstep")
				continue
			}
		case sw.Param == "":
			c.errorf(p, "expected param: PATH (or params: [PATH, ...] with a list of values per entry of values)")
			continue
		}
		for j, param := range sw.Paths() {
			f := p + key
			if sw.Params != nil {
				f = fmt.Sprintf("%s[%d]", f, j)
			}
			rp := src.resolveParam(c, f, param, base)
			if rp.canon != "" {
				if k, dup := seen[rp.canon]; dup {
					c.errorf(f, "%q is already swept by sweep[%d]", param, k)
				}
				seen[rp.canon] = i
			}
			out[i].params = append(out[i].params, rp)
		}
		out[i].transport, out[i].traffic = sweepEffect(out[i].params)
		if len(sw.Values) == 0 {
			c.errorf(p+".values", "expected a non-empty list of values for %s", strings.Join(sw.Paths(), ", "))
		}
		for j := range sw.Values {
			if sw.tuple(j) == nil {
				v := &sw.Values[j]
				got := "one value"
				if v.Kind == yaml.SequenceNode {
					got = units.Count(len(v.Content), "value")
				}
				c.errs = append(c.errs, &Error{File: src.File, Line: v.Line, Field: fmt.Sprintf("%s.values[%d]", p, j),
					Msg: fmt.Sprintf("expected a list of %d values, one per param (%s), got %s", len(sw.Params), strings.Join(sw.Params, ", "), got)})
			}
		}
	}
	return out
}

// resolveParam resolves one swept parameter; canon is empty when it cannot
// be swept (the error is in c).
func (src *Source) resolveParam(c *checker, field, param string, base *Scenario) resolvedParam {
	rp := resolvedParam{param: param, line: src.idx.lineOf(field), transport: -1}
	top := param[:strings.IndexAny(param+".", ".[")] // phases.a.load, phases[0].load
	if !sweepable[top] && !sweepablePaths[param] {
		c.errorf(field, "cannot sweep %q: expected a parameter under %s (the network, switch and calibration are built once per run)",
			param, strings.Join(sortedKeys(sweepable), ", "))
		return rp
	}
	_, canon, _, err := resolvePath(reflect.ValueOf(base).Elem(), param)
	if err != nil {
		c.errorf(field, "%v", err)
		return rp
	}
	rp.canon = canon
	if rest, ok := strings.CutPrefix(canon, "transports["); ok {
		if n, _, ok := strings.Cut(rest, "]"); ok {
			rp.transport, _ = strconv.Atoi(n)
		}
	}
	return rp
}

// choosesTransport reports whether canon is a phase's transport
// (phases[1].transport): the transports a sweep of it compares carry the
// same traffic, so they run on the same seeds.
func choosesTransport(canon string) bool {
	rest, ok := strings.CutPrefix(canon, "phases[")
	return ok && strings.HasSuffix(rest, "].transport") && !strings.Contains(strings.TrimSuffix(rest, "].transport"), ".")
}

// sweepEffect is what a sweep's parameters change together: the one
// transport they all belong to (else -1), and whether the traffic changes.
func sweepEffect(params []resolvedParam) (transport int, traffic bool) {
	transport = -1
	for i, p := range params {
		switch {
		case i == 0:
			transport = p.transport
		case p.transport != transport:
			transport = -1
		}
		if p.transport < 0 && !sweepablePaths[p.param] && !choosesTransport(p.canon) {
			traffic = true
		}
	}
	if traffic {
		transport = -1
	}
	return transport, traffic
}

// combination builds the k-th combination of sweep values (mixed radix, the
// last sweep varying fastest) from a fresh decode of the file, and validates it.
func (src *Source) combination(base *Scenario, sweeps []resolvedSweep, k int, opt Options) (*Scenario, map[string]string, []string, []ClockDefault, error) {
	s, err := src.decode()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	c := &checker{file: src.File, idx: src.idx, overrides: map[string]int{}, sizeSpec: opt.sizeSpec(), simulate: opt.Simulate}
	params := map[string]string{}
	var order []string
	idx := sweepIndexes(base, k)
	for i, sw := range base.Sweep {
		tuple := sw.tuple(idx[i])
		for j, param := range sw.Paths() {
			vn := tuple[j]
			field := fmt.Sprintf("sweep[%d].values[%d]", i, idx[i])
			if sw.Params != nil {
				field = fmt.Sprintf("%s[%d]", field, j)
			}
			field += " (" + param + ")"
			if err := src.setSwept(c, s, sweeps[i].params[j], vn, field); err != nil {
				return nil, nil, nil, nil, err
			}
			params[param] = scalarText(vn)
			order = append(order, param)
		}
	}
	s.Sweep = base.Sweep
	applyDefaults(s)
	src.resolveFiles(s) // before the defaults, which read the files
	clock := clockDefaults(s, opt.Simulate, givenIn(src.idx, c.overrides), opt.sizeSpec())
	s.Repetitions = base.Repetitions // the command line may have changed it
	c.check(s)
	if err := c.errs.orNil(); err != nil {
		return nil, nil, nil, nil, err
	}
	return s, params, order, clock, nil
}

// withSwept adds to the run's clock defaults ds those an experiment took
// that the base scenario did not (a swept workload's longest message), its
// value "per experiment" where experiments differ.
func withSwept(ds, own []ClockDefault) []ClockDefault {
	for _, d := range own {
		i := slices.IndexFunc(ds, func(x ClockDefault) bool { return x.Key == d.Key })
		switch {
		case i < 0:
			ds = append(ds, d)
		case ds[i].Value != d.Value:
			ds[i].Value = "per experiment"
		}
	}
	return ds
}

// unswept is the clock defaults of the base scenario that no sweep sets:
// a swept setting takes the sweep's values in every experiment.
func unswept(ds []ClockDefault, sweeps []resolvedSweep) []ClockDefault {
	swept := map[string]int{}
	for _, sw := range sweeps {
		for _, p := range sw.params {
			swept[p.canon] = 0
		}
	}
	given := givenIn(nil, swept)
	return slices.DeleteFunc(ds, func(d ClockDefault) bool { return given(d.Key) })
}

// givenIn reports whether a scenario path was written in the file or set
// by a sweep (overrides, by canonical path), itself or a block holding it.
func givenIn(idx lineIndex, overrides map[string]int) func(path string) bool {
	return func(path string) bool {
		if _, ok := idx[path]; ok {
			return true
		}
		for p := range overrides {
			if path == p || strings.HasPrefix(path, p+".") {
				return true
			}
		}
		return false
	}
}

// setSwept sets one swept parameter of s to the value vn; field names the
// value in errors.
func (src *Source) setSwept(c *checker, s *Scenario, rp resolvedParam, vn *yaml.Node, field string) error {
	target, canon, key, err := resolvePath(reflect.ValueOf(s).Elem(), rp.param)
	if err != nil {
		return Errors{{File: src.File, Line: rp.line, Field: field, Msg: err.Error()}}
	}
	if key != "" {
		h := target.Addr().Interface().(*HomaParams)
		if err := setHomaKey(&h.Config, &yaml.Node{Value: key, Line: vn.Line}, vn); err != nil {
			e := fromYAMLMessage(src.File, err.Error(), src.idx)
			e.Field = field
			return Errors{e}
		}
		c.overrides[canon] = vn.Line
		return nil
	}
	var errs Errors
	checkKnown(src.File, vn, target.Type(), canon, &errs)
	if len(errs) > 0 {
		for _, e := range errs {
			if e.Field == canon { // the value itself: name it as the sweep does
				e.Field = field
			}
		}
		return errs
	}
	fresh := reflect.New(target.Type())
	if err := vn.Decode(fresh.Interface()); err != nil {
		e := src.yamlErrors(err).(Errors)
		for _, x := range e {
			x.Field = field
		}
		return e
	}
	target.Set(fresh.Elem())
	c.overrides[canon] = vn.Line
	return nil
}

// scalarText is a sweep value as it appears in experiment names and params.
func scalarText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	parts := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		parts = append(parts, scalarText(c))
	}
	return strings.Join(parts, "+")
}

// resolvePath finds the field a dotted sweep path names, returning it
// (addressable) and its canonical path with list indexes. A path into a
// homa block ends in one of homaconf's keys: the field is then the
// HomaParams and key that key.
func resolvePath(v reflect.Value, path string) (field reflect.Value, canon, key string, err error) {
	// phases[0].load, as errors name fields, is phases.0.load.
	segs := strings.Split(strings.ReplaceAll(path, "[", ".["), ".")
	for si, seg := range segs {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		switch {
		case v.Type() == reflect.TypeFor[HomaParams]():
			if si != len(segs)-1 || !slices.Contains(homaconf.Keys(), seg) {
				return reflect.Value{}, "", "", fmt.Errorf("expected a homa key at %s, one of: %s; got %q", orTop(canon), strings.Join(homaconf.Keys(), ", "), strings.Join(segs[si:], "."))
			}
			return v, joinPath(canon, seg), seg, nil
		case v.Kind() == reflect.Struct:
			fields := yamlFields(v.Type())
			fi, ok := fields[seg]
			if !ok {
				return reflect.Value{}, "", "", fmt.Errorf("no field %q at %s; expected one of: %s", seg, orTop(canon), strings.Join(sortedKeys(fields), ", "))
			}
			v = v.Field(fi)
			canon = joinPath(canon, seg)
		case v.Kind() == reflect.Slice:
			i, err := sliceIndex(v, seg)
			if err != nil {
				return reflect.Value{}, "", "", fmt.Errorf("%s: %w", orTop(canon), err)
			}
			v = v.Index(i)
			canon = fmt.Sprintf("%s[%d]", canon, i)
		default:
			return reflect.Value{}, "", "", fmt.Errorf("%s is a single value; %q cannot go below it", orTop(canon), seg)
		}
	}
	return v, canon, "", nil
}

// sliceIndex picks a list element by index or by its name (or transport ID).
func sliceIndex(v reflect.Value, seg string) (int, error) {
	seg = strings.TrimSuffix(strings.TrimPrefix(seg, "["), "]")
	if i, err := strconv.Atoi(seg); err == nil {
		if i < 0 || i >= v.Len() {
			return 0, fmt.Errorf("index %d out of range (the list has %d entries)", i, v.Len())
		}
		return i, nil
	}
	var names []string
	for i := 0; i < v.Len(); i++ {
		name := elementName(v.Index(i))
		if name == seg {
			return i, nil
		}
		names = append(names, name)
	}
	return 0, fmt.Errorf("no entry named %q; expected one of: %s", seg, strings.Join(names, ", "))
}

func elementName(v reflect.Value) string {
	switch e := v.Interface().(type) {
	case Transport:
		return e.ID()
	case Phase:
		return e.Name
	}
	return ""
}

func orTop(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}

// experimentName builds a unique, file-name-safe experiment name such as
// "overcommit-homa-overcommit4" or "load-tcp-w4-load0.5-r2".
func experimentName(scenario string, t Transport, e Experiment) string {
	parts := []string{scenario, t.ID()}
	for _, p := range e.ParamOrder {
		if p == "repetition" {
			parts = append(parts, "r"+e.Params[p])
			continue
		}
		last := p[strings.LastIndex(p, ".")+1:]
		parts = append(parts, last+sanitize(e.Params[p]))
	}
	return strings.Join(parts, "-")
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '+':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Describe writes the plan for people: the network, then one line per
// experiment with its parameters (`homatb run --dry-run`).
func (p *Plan) Describe(w io.Writer) error {
	b := p.Base
	topo := fmt.Sprintf("star, %d hosts", b.Topology.Hosts)
	switch b.Topology.Kind {
	case KindLeafSpine:
		leaves := units.Count(b.Topology.Leaves, "leaf")
		if b.Topology.Leaves != 1 {
			leaves = fmt.Sprintf("%d leaves", b.Topology.Leaves)
		}
		topo = fmt.Sprintf("leaf-spine, %s x %s, %s", leaves, units.Count(b.Topology.HostsPerLeaf, "host"), units.Count(b.Topology.Spines, "spine"))
	case KindFatTree, KindRail:
		topo = b.Topology.describeClos(p.Simulate)
	case KindExternal:
		sw := fmt.Sprintf("%d P4 switches", len(b.Topology.External.Switches))
		if len(b.Topology.External.Switches) == 1 {
			sw = "1 P4 switch"
		}
		topo = fmt.Sprintf("external, %s, %s", units.Count(len(b.Topology.HostNames()), "host"), sw)
	}
	for _, o := range b.Topology.Oversubscription(b.Link.Rate) {
		topo += fmt.Sprintf(", %s switches %s:1 oversubscribed (%d x %s down, %d x %s up)", o.Tier, o.RatioText(), o.Down, o.DownRate, o.Up, o.UpRate)
	}
	per := fmt.Sprintf("about %s of traffic each (warm-up %s + measure %s + drain %s)", b.Warmup.D()+b.Duration.D()+b.Drain.D(), b.Warmup.D(), b.Duration.D(), b.Drain.D())
	if lo, hi := p.trafficTimes(); lo != hi {
		per = fmt.Sprintf("%s to %s of traffic each (warm-up + measure + drain, swept)", lo, hi)
	}
	_, err := fmt.Fprintf(w, "scenario %s (%s): %s, links %s, MTU %d, switch %s, %d queue pkts, DSCP %s\n%s, %s\n",
		b.Name, p.File, topo, b.Link.Rate, b.Link.MTU, b.Switch.Target, b.Switch.QueueDepthPkts, b.DSCP.Policy,
		units.Count(len(p.Experiments), "experiment"), per)
	if err != nil {
		return err
	}
	for _, note := range []string{ClockNote(p.ClockDefaults), p.WorkNote()} {
		if note == "" {
			continue
		}
		if _, err := fmt.Fprintln(w, note); err != nil {
			return err
		}
	}
	for i, e := range p.Experiments {
		var kv []string
		for _, k := range e.ParamOrder {
			kv = append(kv, k+"="+e.Params[k])
		}
		if _, err := fmt.Fprintf(w, "  %3d  %-40s %s\n", i+1, e.Name, strings.Join(append([]string{e.describeTransports(), fmt.Sprintf("seed=%d", e.Seed)}, kv...), " ")); err != nil {
			return err
		}
	}
	return nil
}

// trafficTimes are the shortest and the longest warm-up, measurement and
// drain of an experiment, which sweeps of the times make differ.
func (p *Plan) trafficTimes() (lo, hi time.Duration) {
	for i, e := range p.Experiments {
		t := e.Scenario.Warmup.D() + e.Scenario.Duration.D() + e.Scenario.Drain.D()
		if i == 0 || t < lo {
			lo = t
		}
		hi = max(hi, t)
	}
	return lo, hi
}

// Order is every experiment's name in the order the run runs them.
func (p *Plan) Order() []string {
	out := make([]string, 0, len(p.Experiments))
	for _, e := range p.Experiments {
		out = append(out, e.Name)
	}
	return out
}

// Seeds are the experiments' distinct seeds, in the order they first run.
func (p *Plan) Seeds() []uint64 {
	var out []uint64
	seen := map[uint64]bool{}
	for _, e := range p.Experiments {
		if !seen[e.Seed] {
			seen[e.Seed] = true
			out = append(out, e.Seed)
		}
	}
	return out
}

// Doc is the scenario as its YAML schema names it (keys and units as a
// scenario file is written), for manifest.json.
func (s *Scenario) Doc() any {
	b, err := yaml.Marshal(s)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return map[string]any{"error": err.Error()}
	}
	return doc
}

// OneWay reports whether the scenario's client phases send one-way
// messages (validation has them all agree).
func (s *Scenario) OneWay() bool {
	for _, ph := range s.Phases {
		if ph.Collective == nil && ph.OneWay {
			return true
		}
	}
	return false
}

// CalibrationResponse is the response length calibration RPCs ask for:
// the one most of the scenario's phases use (0 echoes the request), so
// that each transport's own unloaded RTT is measured with the workload's
// responses. On a tie a fixed length wins over echoing, since an echo
// doubles a long calibration RPC, then the smaller length. A scenario of
// collectives and connection matrices alone calibrates with 1-byte
// responses, as their messages are answered.
func (s *Scenario) CalibrationResponse() uint32 {
	count := map[uint32]int{}
	for _, ph := range s.Phases {
		if ph.Collective == nil && ph.ConnectionMatrix == "" {
			count[ph.ResponseBytes]++
		}
	}
	if len(count) == 0 && len(s.Phases) > 0 {
		// Only collectives and matrices: their messages ask 1-byte answers.
		return 1
	}
	better := func(r uint32, c int, best uint32, n int) bool {
		switch {
		case c != n:
			return c > n
		case (r == 0) != (best == 0):
			return best == 0
		}
		return r < best
	}
	best, n := uint32(0), 0
	for r, c := range count {
		if better(r, c, best, n) {
			best, n = r, c
		}
	}
	return best
}
