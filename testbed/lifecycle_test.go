package testbed

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fabdesc "github.com/homatb/homatb/internal/fabric"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/mn"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// The fakes below stand for the Mininet runner, the agents, the switches'
// statistics and the controller. They note every call in one journal, in
// order, as "verb host-or-switch experiment", and a test may make any call
// fail or cancel the run when it is made.

type journal struct {
	mu    sync.Mutex
	calls []string
	// fault, when set, is asked about every call; its error is the call's.
	fault func(call string) error
	// issued is what each agent's Stop reported, rows what its fetches
	// delivered, by run experiment (calibration sizes folded into
	// calibrate-<transport>, as rpcs.csv has them).
	issued, completed, failed, inFlight map[string]uint64
	rows                                map[string]int
}

func newJournal() *journal {
	return &journal{issued: map[string]uint64{}, completed: map[string]uint64{}, failed: map[string]uint64{},
		inFlight: map[string]uint64{}, rows: map[string]int{}}
}

func (j *journal) add(format string, args ...any) error {
	call := fmt.Sprintf(format, args...)
	j.mu.Lock()
	j.calls = append(j.calls, call)
	fault := j.fault
	j.mu.Unlock()
	if fault != nil {
		return fault(call)
	}
	return nil
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.calls...)
}

// runExperiment is the experiment name rows carry in rpcs.csv.
func runExperiment(exp string) string {
	if strings.HasPrefix(exp, "calibrate-") {
		return exp[:strings.LastIndex(exp, "-")]
	}
	return exp
}

type fakeNetwork struct {
	j      *journal
	events chan mn.Event
	exited chan struct{}
	once   sync.Once

	mu      sync.Mutex
	running map[string]bool // started and not yet signalled, as the runner refuses a second start
}

func (n *fakeNetwork) Build(_ context.Context, s mn.Spec) (*mn.Built, error) {
	if err := n.j.add("build %d hosts %d switches", len(s.Hosts), len(s.Switches)); err != nil {
		return nil, err
	}
	return &mn.Built{}, nil
}

func (n *fakeNetwork) Popen(_ context.Context, name, _, _ string, _ map[string]string, _ ...string) (int, error) {
	if err := n.j.add("popen %s", name); err != nil {
		return 0, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running[name] {
		return 0, fmt.Errorf("process %q is already running", name)
	}
	if n.running == nil {
		n.running = map[string]bool{}
	}
	n.running[name] = true
	return 1, nil
}

// Signal notes the signal and reports the process's exit, as the runner
// does, unless the run is stopping.
func (n *fakeNetwork) Signal(_ context.Context, name string, sig syscall.Signal) error {
	if err := n.j.add("signal %s %d", name, sig); err != nil {
		return err
	}
	n.mu.Lock()
	delete(n.running, name)
	n.mu.Unlock()
	go func() {
		select {
		case n.events <- mn.Event{Event: "exit", Name: name, RC: -int(sig)}:
		case <-n.exited:
		}
	}()
	return nil
}

func (n *fakeNetwork) Events() <-chan mn.Event { return n.events }
func (n *fakeNetwork) Exited() <-chan struct{} { return n.exited }

func (n *fakeNetwork) Stop(context.Context) error {
	n.once.Do(func() { close(n.exited) })
	return n.j.add("network stop")
}

type fakeAgent struct {
	j    *journal
	host string

	mu  sync.Mutex
	exp string
	w   *agentpb.Workload
}

// books are what this agent's client did in its current experiment: a
// calibration's every RPC completes; a measurement's ten RPCs end 7
// completed, 2 failed, 1 still in flight.
func (a *fakeAgent) books() *agentpb.Counters {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.w == nil {
		return &agentpb.Counters{Served: 5}
	}
	if strings.HasPrefix(a.exp, "calibrate-") {
		n := a.w.GetMaxRpcs()
		return &agentpb.Counters{Issued: n, Completed: n}
	}
	return &agentpb.Counters{Issued: 10, Completed: 7, Failed: 2, InFlight: 1, CpuUserUs: 3000}
}

func (a *fakeAgent) Status(context.Context) (*agentpb.StatusReply, error) {
	a.mu.Lock()
	exp := a.exp
	a.mu.Unlock()
	if err := a.j.add("status %s %s", a.host, exp); err != nil {
		return nil, err
	}
	return &agentpb.StatusReply{Counters: a.books()}, nil
}

func (a *fakeAgent) Configure(_ context.Context, req *agentpb.ConfigureRequest) error {
	if err := a.j.add("configure %s %s", a.host, req.GetExperiment()); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.exp, a.w = req.GetExperiment(), req.GetClient()
	return nil
}

func (a *fakeAgent) Start(context.Context) error {
	return a.j.add("start %s %s", a.host, a.exp)
}

func (a *fakeAgent) Stop(_ context.Context, drain time.Duration) (*agentpb.Counters, error) {
	if err := a.j.add("stop %s %s drain %v", a.host, a.exp, drain); err != nil {
		return nil, err
	}
	c := a.books()
	a.j.mu.Lock()
	defer a.j.mu.Unlock()
	e := runExperiment(a.exp)
	a.j.issued[e] += c.GetIssued()
	a.j.completed[e] += c.GetCompleted()
	a.j.failed[e] += c.GetFailed()
	a.j.inFlight[e] += c.GetInFlight()
	return c, nil
}

// fetch hands over one record per RPC the client issued.
func (a *fakeAgent) Fetch(_ context.Context, exp, file string, w io.Writer) error {
	if file == agentpb.FileTCPSamples {
		return fakeTCPSamples(w, exp, a.host)
	}
	if err := a.j.add("fetch %s %s", a.host, exp); err != nil {
		return err
	}
	c := a.books()
	cw := csv.NewWriter(w)
	_ = cw.Write(strings.Split("experiment,transport,phase,client,server,req_bytes,resp_bytes,intended_ns,sent_ns,done_ns,rtt_ns,status,error,retries", ","))
	row := func(status, rtt string) {
		_ = cw.Write([]string{exp, "homa", "measure", a.host, "10.0.0.1:4000", "100", "100", "1", "2", "3", rtt, status, "", "0"})
	}
	for range c.GetCompleted() {
		row("completed", "40000")
	}
	for range c.GetFailed() {
		row("failed", "0")
	}
	for range c.GetInFlight() {
		row("in_flight", "0")
	}
	cw.Flush()
	a.j.mu.Lock()
	a.j.rows[runExperiment(exp)] += int(c.GetIssued())
	a.j.mu.Unlock()
	return cw.Error()
}

func (a *fakeAgent) FollowGauges(ctx context.Context, _ string, _ time.Duration, _ func(rundir.HostSample) error) error {
	<-ctx.Done()
	return nil
}

func (a *fakeAgent) Shutdown(context.Context) { _ = a.j.add("shutdown %s", a.host) }

type fakeSwitch struct {
	j    *journal
	name string

	mu sync.Mutex
	rx uint64
}

func (s *fakeSwitch) ResetWindow(context.Context) error {
	return s.j.add("reset-window %s", s.name)
}

// fetch returns statistics whose one counter grows by 100 a read, with
// empty queues.
func (s *fakeSwitch) Fetch(context.Context) (rundir.SwitchStats, error) {
	if err := s.j.add("switch-stats %s", s.name); err != nil {
		return rundir.SwitchStats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rx += 100
	return rundir.SwitchStats{Ports: []switchstats.Port{{Port: 1, RxPkts: s.rx, Queues: []switchstats.Queue{{Queue: 0}}}}}, nil
}

func (s *fakeSwitch) StartPostcards(context.Context, string) error { return nil }

func (s *fakeSwitch) StopPostcards(context.Context) (switchstats.PostcardSummary, error) {
	return switchstats.PostcardSummary{}, nil
}

// setFault notes the setting as "fault SWITCH PORT key=value ...".
func (s *fakeSwitch) SetFault(_ context.Context, fs switchstats.FaultSetting) error {
	call := fmt.Sprintf("fault %s %d", s.name, fs.Port)
	if fs.DropProb != nil {
		call += fmt.Sprintf(" drop_prob=%g", *fs.DropProb)
	}
	if fs.Direction != nil {
		call += " direction=" + *fs.Direction
	}
	if fs.DownFor != nil {
		call += " down_for=" + *fs.DownFor
	}
	return s.j.add("%s", call)
}

type fakeFabric struct{ j *journal }

func (f *fakeFabric) ResetQueuePeaks(context.Context) error { return f.j.add("reset-peaks") }

func (f *fakeFabric) Telemetry(ctx context.Context, exp string, _ time.Duration, _ io.Writer) error {
	_ = f.j.add("telemetry %s", exp)
	<-ctx.Done()
	return f.j.add("telemetry-end %s", exp)
}

func (f *fakeFabric) Close() error { return f.j.add("controller close") }

func (f *fakeFabric) Defences(_ context.Context, on bool) error {
	return f.j.add("defences %v", on)
}

func (f *fakeFabric) PortModes(_ context.Context, modes []controller.PortMode) error {
	if len(modes) == 0 {
		return nil
	}
	return f.j.add("port modes %v", modes)
}

func fakeParts(j *journal) parts {
	return parts{
		startNetwork: func(context.Context, mn.Options) (network, error) {
			if err := j.add("network start"); err != nil {
				return nil, err
			}
			return &fakeNetwork{j: j, events: make(chan mn.Event), exited: make(chan struct{})}, nil
		},
		program: func(_ context.Context, n *topo.Network, _ *fabdesc.Fabric, _ *scenario.Scenario, _ string, _ *slog.Logger) (fabric, error) {
			for _, sw := range n.Switches {
				if sw.GRPCPort == 0 {
					return nil, fmt.Errorf("switch %s has no P4Runtime port", sw.Name)
				}
			}
			if err := j.add("program"); err != nil {
				return nil, err
			}
			return &fakeFabric{j: j}, nil
		},
		dialAgent: func(_ context.Context, host, _ string, _ <-chan struct{}) (agentAPI, error) {
			if err := j.add("dial %s", host); err != nil {
				return nil, err
			}
			return &fakeAgent{j: j, host: host}, nil
		},
		switchStats: func(name, _ string) switchStats { return &fakeSwitch{j: j, name: name} },
	}
}

// lifecycleScenario: h2 and h3 send to h1, both transports, short enough
// that a run takes about a second and a half.
const lifecycleScenario = `
name: lc
topology: {kind: star, hosts: 3}
link: {rate: 100Mbit}
switch: {target: embedded, queue_depth_pkts: 64}
transports: [{name: homa}, {name: tcp}]
phases:
  - {name: bulk, clients: [h2], servers: [h1], sizes: "fixed:1000", arrivals: closed, max_outstanding: 1}
  - {name: probes, clients: [h3], servers: [h1], sizes: "fixed:100", arrivals: poisson, rate_rps: 100}
warmup: 10ms
duration: 40ms
drain: 20ms
calibration: {sizes: [100, 1000], samples: 3}
`

// TestLifecycle drives whole runs through the fakes and checks the order
// of the steps, teardown however the run ends, and the books: what the
// agents reported is in manifest.json and what they handed over in
// rpcs.csv, also for an experiment cut short.
func TestLifecycle(t *testing.T) {
	src, err := scenario.Parse("lc.yaml", []byte(lifecycleScenario))
	if err != nil {
		t.Fatal(err)
	}
	const exp1, exp2 = "lc-homa", "lc-tcp"
	// Every run's order, for the steps it reached: the network is built,
	// programmed, its agents dialled, calibrated, measured, and torn down
	// last.
	always := [][2]string{
		{"network start", "build *"},
		{"build *", "program"},
		{"program", "dial *"},
		{"dial *", "configure * calibrate-*"},
		{"configure * calibrate-*", "configure * lc-*"},
		{"start *", "shutdown *"},
		{"stop *", "shutdown *"},
		{"fetch *", "shutdown *"},
		{"telemetry-end *", "shutdown *"},
		{"shutdown *", "network stop"},
		{"controller close", "network stop"},
	}
	// One experiment's order, within its part of the journal: servers
	// configured before clients, every host configured before a client
	// starts, switch windows opened and telemetry running before the
	// start, the clients stopped before the servers' counters are read and
	// telemetry ends, and all that before the records are fetched.
	experiment := [][2]string{
		{"configure h1 EXP", "configure h2 EXP"},
		{"configure h1 EXP", "configure h3 EXP"},
		{"configure * EXP", "reset-window s1"},
		{"reset-window s1", "reset-peaks"},
		{"reset-peaks", "start * EXP"},
		{"start * EXP", "stop * EXP *"},
		{"stop * EXP *", "status h1 EXP"},
		{"stop * EXP *", "telemetry-end EXP"},
		{"status h1 EXP", "telemetry-end EXP"},
		{"telemetry-end EXP", "fetch * EXP"},
	}
	tests := []struct {
		name string
		// fault makes a call fail (or cancels the run, through cancel).
		fault    func(call string, cancel context.CancelFunc) error
		wantErr  string
		wantExps []bool // recorded experiments: incomplete or not
		// exps are the experiments that ran their steps in order.
		exps   []string
		order  [][2]string
		absent []string
	}{
		{
			name:     "complete",
			wantExps: []bool{false, false},
			exps:     []string{exp1, exp2},
			order:    [][2]string{{"fetch * " + exp1, "configure * " + exp2}, {"stop * " + exp1 + " drain 20ms", "fetch * " + exp1}},
		},
		{
			name: "build fails",
			fault: func(call string, _ context.CancelFunc) error {
				if strings.HasPrefix(call, "build") {
					return errors.New("no veth")
				}
				return nil
			},
			wantErr: "build network (see logs/mininet.log): no veth",
			order:   [][2]string{{"build *", "network stop"}},
			absent:  []string{"program", "dial *", "configure *"},
		},
		{
			name: "configure fails",
			fault: func(call string, _ context.CancelFunc) error {
				if call == "configure h2 "+exp1 {
					return errors.New("bad params")
				}
				return nil
			},
			wantErr: "experiment " + exp1 + ": bad params",
			order:   [][2]string{{"configure h2 " + exp1, "network stop"}},
			absent:  []string{"start * " + exp1, "configure * " + exp2},
		},
		{
			name: "client start fails",
			fault: func(call string, _ context.CancelFunc) error {
				if call == "start h3 "+exp1 {
					return errors.New("no route")
				}
				return nil
			},
			wantErr: "experiment " + exp1 + ": start clients: no route",
			order:   [][2]string{{"start h3 " + exp1, "telemetry-end " + exp1}, {"telemetry-end " + exp1, "network stop"}},
			absent:  []string{"fetch * " + exp1},
		},
		{
			name: "a fetch fails",
			fault: func(call string, _ context.CancelFunc) error {
				if call == "fetch h3 "+exp1 {
					return errors.New("stream reset")
				}
				return nil
			},
			wantErr:  "experiment " + exp1 + ": stream reset",
			wantExps: []bool{true},
			exps:     []string{exp1},
			absent:   []string{"configure * " + exp2},
		},
		{
			name: "a stop fails",
			fault: func(call string, _ context.CancelFunc) error {
				if strings.HasPrefix(call, "stop h2 "+exp2) {
					return errors.New("agent gone")
				}
				return nil
			},
			wantErr:  "experiment " + exp2 + ": agent gone",
			wantExps: []bool{false, true},
			exps:     []string{exp1},
			order:    [][2]string{{"stop h2 " + exp2 + " *", "fetch h3 " + exp2}},
		},
		{
			name: "cancelled while measuring",
			fault: func(call string, cancel context.CancelFunc) error {
				if call == "start h2 "+exp2 {
					cancel()
				}
				return nil
			},
			wantErr:  "context canceled",
			wantExps: []bool{false, true},
			exps:     []string{exp1},
			// Interrupted: stopped at once, without a drain, and collected
			// all the same (telemetry ends with the run's context).
			order: [][2]string{
				{"configure * " + exp2, "start * " + exp2},
				{"start * " + exp2, "stop * " + exp2 + " drain 0s"},
				{"stop * " + exp2 + " drain 0s", "status h1 " + exp2},
				{"status h1 " + exp2, "fetch * " + exp2},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			j := newJournal()
			if tc.fault != nil {
				j.fault = func(call string) error { return tc.fault(call, cancel) }
			}
			plan, err := src.Plan(scenario.Options{})
			if err != nil {
				t.Fatal(err)
			}
			base := t.TempDir()
			dir := filepath.Join(base, "run")
			res, err := runWith(ctx, plan, Options{RunDir: dir, Registry: filepath.Join(base, "reg"), NoReport: true, Binary: "/bin/false"}, fakeParts(j))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("run: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("run error %v, want one containing %q", err, tc.wantErr)
			}
			calls := j.list()
			for _, o := range always {
				if find(calls, o[0]) >= 0 && find(calls, o[1]) >= 0 {
					assertBefore(t, calls, o[0], o[1])
				}
			}
			for _, o := range tc.order {
				assertBefore(t, calls, o[0], o[1])
			}
			for _, e := range tc.exps {
				part := segment(calls, e)
				for _, o := range experiment {
					assertBefore(t, part, strings.ReplaceAll(o[0], "EXP", e), strings.ReplaceAll(o[1], "EXP", e))
				}
			}
			for _, a := range tc.absent {
				if i := find(calls, a); i >= 0 {
					t.Errorf("call %q made (%s)", calls[i], a)
				}
			}
			if last := calls[len(calls)-1]; last != "network stop" {
				t.Errorf("last call %q, want the network stopped last", last)
			}
			m := readManifest(t, dir)
			if m.Incomplete != (tc.wantErr != "") || res.Incomplete != m.Incomplete {
				t.Errorf("run incomplete %v (result %v), want %v", m.Incomplete, res.Incomplete, tc.wantErr != "")
			}
			if tc.wantErr != "" && !strings.Contains(m.Error, tc.wantErr) {
				t.Errorf("manifest error %q, want %q", m.Error, tc.wantErr)
			}
			if len(m.Experiments) != len(tc.wantExps) {
				t.Fatalf("%d experiments recorded, want %d", len(m.Experiments), len(tc.wantExps))
			}
			for i, e := range m.Experiments {
				checkBooks(t, j, e, tc.wantExps[i])
			}
			checkRecords(t, j, filepath.Join(dir, "rpcs.csv"))
			if tc.name == "complete" {
				checkTCPSamples(t, filepath.Join(dir, "tcp.csv"), exp2)
			}
		})
	}
}

// checkBooks compares an experiment's manifest entry with what the fake
// agents reported: an incomplete experiment keeps what was measured.
func checkBooks(t *testing.T, j *journal, e rundir.Experiment, incomplete bool) {
	t.Helper()
	b := e.RPCs
	if e.Incomplete != incomplete {
		t.Errorf("%s: incomplete %v, want %v", e.Name, e.Incomplete, incomplete)
	}
	if b.Issued != b.Completed+b.Failed+b.InFlight {
		t.Errorf("%s: books do not balance: %+v", e.Name, b)
	}
	if b.Issued != j.issued[e.Name] || b.Completed != j.completed[e.Name] || b.Failed != j.failed[e.Name] || b.InFlight != j.inFlight[e.Name] {
		t.Errorf("%s: books %+v, agents reported issued %d completed %d failed %d in flight %d", e.Name, b,
			j.issued[e.Name], j.completed[e.Name], j.failed[e.Name], j.inFlight[e.Name])
	}
	if b.Issued == 0 {
		t.Errorf("%s: nothing measured was kept", e.Name)
	}
	if (!incomplete && len(e.Hosts) != 3) || e.AgentCPUMs == 0 {
		t.Errorf("%s: hosts %+v, agent CPU %d ms: want the hosts' counters", e.Name, e.Hosts, e.AgentCPUMs)
	}
}

// checkRecords counts rpcs.csv's rows by experiment against the rows the
// agents handed over.
func checkRecords(t *testing.T, j *journal, path string) {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && len(j.rows) == 0 {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range rows[min(1, len(rows)):] {
		got[r[0]]++
	}
	for e, n := range j.rows {
		if got[e] != n {
			t.Errorf("rpcs.csv has %d rows of %s, the agents handed over %d", got[e], e, n)
		}
	}
	if len(got) != len(j.rows) {
		t.Errorf("rpcs.csv experiments %v, handed over %v", got, j.rows)
	}
}

// segment is experiment e's part of the journal: from its first Configure
// to the next experiment's.
func segment(calls []string, e string) []string {
	from := find(calls, "configure * "+e)
	if from < 0 {
		return nil
	}
	for i := from; i < len(calls); i++ {
		if ok, _ := path.Match("configure * *", calls[i]); ok && !strings.HasSuffix(calls[i], " "+e) {
			return calls[from:i]
		}
	}
	return calls[from:]
}

// find is the index of the first call matching pattern (path.Match), or -1.
func find(calls []string, pattern string) int {
	for i, c := range calls {
		if ok, _ := path.Match(pattern, c); ok {
			return i
		}
	}
	return -1
}

// assertBefore checks that both kinds of call were made and that every
// call matching a came before every call matching b.
func assertBefore(t *testing.T, calls []string, a, b string) {
	t.Helper()
	lastA, firstB := -1, find(calls, b)
	for i, c := range calls {
		if ok, _ := path.Match(a, c); ok {
			lastA = i
		}
	}
	switch {
	case lastA < 0 || firstB < 0:
		t.Errorf("want %q before %q, but one was not called:\n%s", a, b, strings.Join(calls, "\n"))
	case lastA > firstB:
		t.Errorf("%q (call %d) came after %q (call %d):\n%s", calls[lastA], lastA, calls[firstB], firstB, strings.Join(calls, "\n"))
	}
}

// fakeTCPRows is how many TCP samples each fake client hands over: enough
// that clients fetched in parallel would interleave their appends if
// nothing serialised them.
const fakeTCPRows = 2000

// fakeTCPSamples writes a client's tcp.csv rows.
func fakeTCPSamples(w io.Writer, exp, host string) error {
	tw, err := rundir.TCPConns().NewWriter(w, true)
	if err != nil {
		return err
	}
	for i := range fakeTCPRows {
		row := rundir.TCPSample{Experiment: exp, Host: host, Peer: "10.0.0.1:4000", UnixNs: int64(i + 1), CwndSegs: 10, SRTTus: 100}
		if err := tw.Write(&row); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// checkTCPSamples: tcp.csv holds every client's rows of the TCP
// experiment, whole, and none of the Homa one's.
func checkTCPSamples(t *testing.T, path, tcpExp string) {
	t.Helper()
	hosts := map[string]int{}
	for _, row := range readTCPRows(t, path) {
		if row.Experiment != tcpExp {
			t.Fatalf("tcp.csv row of %s: only TCP experiments sample connections", row.Experiment)
		}
		hosts[row.Host]++
	}
	if hosts["h2"] != fakeTCPRows || hosts["h3"] != fakeTCPRows {
		t.Errorf("tcp.csv rows by client %v, want %d each", hosts, fakeTCPRows)
	}
}

// readTCPRows reads every row of a tcp.csv.
func readTCPRows(t *testing.T, path string) []rundir.TCPSample {
	t.Helper()
	return readRows(t, path, rundir.TCPConns())
}
