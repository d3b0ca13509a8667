package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
)

// Agent states reported by Status.
const (
	StateIdle       = "idle"
	StateConfigured = "configured"
	StateRunning    = "running"
	StateStopped    = "stopped"
)

// maxDrain bounds Stop's drain_ms, so a typo cannot hang the orchestrator.
const maxDrain = 5 * time.Minute

// Service implements the agentpb.Agent control API for one host.
type Service struct {
	agentpb.UnimplementedAgentServer

	name       string
	recordsDir string
	log        *slog.Logger
	shutdown   func()
	// ctx ends every experiment when the agent exits.
	ctx context.Context

	mu      sync.Mutex
	state   string
	expName string
	// legs are the configured experiment's transports: one, or in a
	// shared experiment the Homa engine and kernel TCP.
	legs    []leg
	exp     *experiment
	records map[string]string // experiment -> records file
	// tcpSamples maps an experiment to its TCP connection samples file.
	tcpSamples map[string]string
	// served maps an experiment to its served.csv rows, written by
	// servedW while the experiment's servers run.
	served  map[string]string
	servedW *rundir.CSVStream[rundir.Served]
	cpu0    syscall.Rusage
}

// NewService returns the control service of agent name, writing records
// under recordsDir. shutdown is called (once, asynchronously) when a
// Shutdown RPC arrives; ctx ends every experiment.
func NewService(ctx context.Context, name, recordsDir string, log *slog.Logger, shutdown func()) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{
		name: name, recordsDir: recordsDir, log: log, shutdown: shutdown, ctx: ctx,
		state: StateIdle, records: map[string]string{}, tcpSamples: map[string]string{},
		served: map[string]string{},
	}
}

// apiError maps an agent error to a gRPC status once, at the API edge.
func apiError(err error) error {
	var ce *driver.ConfigError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrUnsupported):
		return status.Error(codes.Unimplemented, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// Configure sets up the transport, servers and next experiment. A
// request for the experiment already configured (not yet started) on
// another transport adds that transport to it: a shared experiment runs
// the Homa engine and kernel TCP on the host at once, one set of books and
// records for both.
func (s *Service) Configure(_ context.Context, req *agentpb.ConfigureRequest) (*agentpb.ConfigureReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateRunning {
		return nil, status.Errorf(codes.FailedPrecondition, "experiment %q is running: Stop it before configuring another", s.expName)
	}
	if req.GetExperiment() == "" {
		return nil, apiError(driver.Invalid("experiment", "", "expected a name"))
	}
	if len(req.GetCollectives()) > 0 && len(req.GetServerPorts()) == 0 {
		return nil, apiError(driver.Invalid("server_ports", "", "a collective's members must serve: its steps arrive as requests"))
	}
	for _, p := range req.GetServerPorts() {
		if p == 0 || p > 65535 {
			return nil, apiError(driver.Invalid("server_ports", p, "expected 1..65535"))
		}
	}
	label := transportLabel(req)
	extend := s.state == StateConfigured && s.exp != nil && req.GetExperiment() == s.expName
	if extend {
		for _, l := range s.legs {
			if l.label == label {
				return nil, apiError(driver.Invalid("transport", label, "experiment %q already runs it on this host: one endpoint per transport", s.expName))
			}
			if l.kernel == (req.GetTransport() == agentpb.Transport_TRANSPORT_TCP) {
				return nil, apiError(driver.Invalid("transport", label, "experiment %q already runs %s on this host, of the same kind (one Homa engine and one kernel TCP per host)", s.expName, l.label))
			}
		}
	} else {
		// The previous experiment ends here even if this request fails:
		// the agent is then idle, never half-configured.
		s.closeTransport()
		s.exp, s.expName, s.state = nil, "", StateIdle
	}
	tr, err := newTransport(req, s.log)
	if err != nil {
		s.abandon(extend)
		if !errors.Is(err, ErrUnsupported) {
			err = &driver.ConfigError{Field: "transport", Value: req.GetTransport().String(), Msg: err.Error()}
		}
		return nil, apiError(err)
	}
	// What this request opened is closed again if it fails: the transport,
	// the records, the samples, and the served rows after the servers; an
	// experiment it was to extend ends too.
	var rec *rundir.CSVStream[rundir.RPC]
	var conns *connSampler
	configured := false
	defer func() {
		if configured {
			return
		}
		tr.Close()
		if rec != nil {
			rec.Close()
		}
		if conns != nil {
			conns.Close()
		}
		s.abandon(true)
	}()
	cfg, err := driver.ConfigOf(req, label, tr.MaxMessage(), nil)
	if err != nil {
		return nil, apiError(err)
	}
	if cfg.Host == "" {
		cfg.Host = s.name
	}
	cfg.Log = s.log
	spec, colls, host := cfg.Client, cfg.Collectives, cfg.Host
	resp := &responder{transport: label}
	var tell func(*Served)
	if len(req.GetServerPorts()) > 0 {
		if s.servedW == nil {
			path := filepath.Join(s.recordsDir, rundir.AgentFile(req.GetExperiment(), host, rundir.ServedRPCs()))
			sw, err := rundir.NewCSVStream(path, rundir.ServedRPCs())
			if err != nil {
				return nil, apiError(err)
			}
			s.servedW, s.served[req.GetExperiment()] = sw, path
		}
		tell = servedRows(s.servedW, req.GetExperiment(), label, host)
	}
	for _, p := range req.GetServerPorts() {
		if err := tr.Serve(s.ctx, uint16(p), resp.handle, tell); err != nil {
			return nil, status.Errorf(codes.Unavailable, "serving port %d: %v", p, err)
		}
	}
	if (spec != nil || len(colls) > 0) && (s.exp == nil || s.exp.rec == nil) {
		path := filepath.Join(s.recordsDir, rundir.AgentFile(req.GetExperiment(), host, rundir.RPCs()))
		if rec, err = rundir.NewCSVStream(path, rundir.RPCs()); err != nil {
			return nil, apiError(err)
		}
		s.records[req.GetExperiment()] = path
	}
	if cl, ok := tr.(connLister); ok && spec != nil {
		path := filepath.Join(s.recordsDir, rundir.AgentFile(req.GetExperiment(), host, rundir.TCPConns()))
		if conns, err = startConnSampler(path, req.GetExperiment(), host, cl); err != nil {
			return nil, apiError(err)
		}
		s.tcpSamples[req.GetExperiment()] = path
	}
	exp := s.exp
	if exp == nil {
		if exp, err = newExperiment(s.ctx, req.GetExperiment(), host, rec); err != nil {
			return nil, apiError(err)
		}
	} else if rec != nil {
		exp.rec = rec // before Start: no row is written yet
	}
	exp.add(cfg, tr)
	configured = true
	if conns != nil {
		exp.conns = conns
	}
	s.legs = append(s.legs, leg{tr: tr, resp: resp, label: label, kernel: req.GetTransport() == agentpb.Transport_TRANSPORT_TCP})
	s.expName, s.exp = req.GetExperiment(), exp
	if len(colls) > 0 {
		resp.exp.Store(exp)
	}
	s.state = StateConfigured
	if !extend {
		syscall.Getrusage(syscall.RUSAGE_SELF, &s.cpu0)
	}
	s.log.Info("configured", "experiment", s.expName, "transport", label, "beside", len(s.legs)-1,
		"server_ports", req.GetServerPorts(), "client", spec != nil, "collectives", len(colls))
	return &agentpb.ConfigureReply{}, nil
}

// abandon ends the configured experiment after a failed Configure that
// was to extend it (all): the agent is idle, never half-configured; s.mu
// held.
func (s *Service) abandon(all bool) {
	if !all {
		return
	}
	s.closeTransport()
	s.exp, s.expName, s.state = nil, "", StateIdle
}

// leg is one transport of the configured experiment on this host with the
// responder of its servers.
type leg struct {
	tr    Transport
	resp  *responder
	label string
	// kernel is true for kernel TCP, false for the Homa engine.
	kernel bool
}

// closeTransport stops the previous experiment and its transports; s.mu
// held.
func (s *Service) closeTransport() {
	if s.exp != nil {
		if err := s.exp.stop(0); err != nil {
			s.log.Error("closing records", "experiment", s.expName, "err", err)
		}
	}
	for _, l := range s.legs {
		if err := l.tr.Close(); err != nil {
			s.log.Warn("closing transport", "transport", l.label, "err", err)
		}
	}
	s.legs = nil
	// After the transports: their servers write rows until they close.
	if s.servedW != nil {
		if err := s.servedW.Close(); err != nil {
			s.log.Error("closing served records", "experiment", s.expName, "err", err)
		}
		s.servedW = nil
	}
}

// servedRows turns a transport's answered requests into served.csv rows.
func servedRows(w *rundir.CSVStream[rundir.Served], experiment, transport, host string) func(*Served) {
	return func(sv *Served) {
		w.Write(rundir.Served{Experiment: experiment, Transport: transport, ServerHost: host,
			Server: sv.Local.String(), Client: sv.Client.String(), RPCID: sv.ID,
			ReqOffset: sv.ReqOffset, RespOffset: sv.RespOffset,
			ReqBytes: int64(sv.ReqBytes), RespBytes: int64(sv.RespBytes),
			ReqNs: sv.Request.UnixNano(), ReplyNs: sv.Reply.UnixNano(), RecoveryFromNs: driver.UnixNs(sv.RecoveryFrom)})
	}
}

// Start begins the configured client workload.
func (s *Service) Start(context.Context, *agentpb.StartRequest) (*agentpb.StartReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateConfigured {
		return nil, status.Errorf(codes.FailedPrecondition, "agent is %s: Configure before Start", s.state)
	}
	s.exp.start()
	s.state = StateRunning
	s.log.Info("started", "experiment", s.expName)
	return &agentpb.StartReply{}, nil
}

// Stop ends the client workload and closes its books.
func (s *Service) Stop(_ context.Context, req *agentpb.StopRequest) (*agentpb.StopReply, error) {
	s.mu.Lock()
	exp, state := s.exp, s.state
	s.mu.Unlock()
	if state == StateIdle {
		return nil, status.Error(codes.FailedPrecondition, "agent is idle: nothing to stop")
	}
	drain := min(time.Duration(req.GetDrainMs())*time.Millisecond, maxDrain)
	// Not under s.mu: draining takes time and Status must keep answering.
	if err := exp.stop(drain); err != nil {
		return nil, apiError(err)
	}
	s.mu.Lock()
	if s.exp == exp {
		s.state = StateStopped
	}
	c := s.countersLocked()
	s.mu.Unlock()
	s.log.Info("stopped", "experiment", exp.name, "issued", c.GetIssued(), "completed", c.GetCompleted(),
		"failed", c.GetFailed(), "in_flight", c.GetInFlight())
	return &agentpb.StopReply{Counters: c}, nil
}

// countersLocked builds the Counters message; s.mu held.
func (s *Service) countersLocked() *agentpb.Counters {
	if s.exp == nil {
		return &agentpb.Counters{Transport: map[string]uint64{}, Failures: map[string]uint64{}}
	}
	c := s.exp.snapshot()
	c.Transport = map[string]uint64{}
	for _, l := range s.legs {
		c.Served += l.resp.Served()
		maps.Copy(c.Transport, l.tr.Stats()) // homa_… and tcp_…: no name in common
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.CpuUserUs = uint64(max(tvUs(ru.Utime)-tvUs(s.cpu0.Utime), 0))
		c.CpuSysUs = uint64(max(tvUs(ru.Stime)-tvUs(s.cpu0.Stime), 0))
	}
	return c
}

func tvUs(tv syscall.Timeval) int64 { return tv.Sec*1_000_000 + tv.Usec }

// Status streams counters every interval_ms (once when 0).
func (s *Service) Status(req *agentpb.StatusRequest, stream agentpb.Agent_StatusServer) error {
	var machine *agentpb.Machine
	if req.GetMachineFor() != "" {
		machine = describeMachine(req.GetMachineFor())
	}
	send := func() error {
		s.mu.Lock()
		r := &agentpb.StatusReply{Experiment: s.expName, State: s.state, Counters: s.countersLocked(), Machine: machine}
		s.mu.Unlock()
		// The clock is read last, as close to the send as it can be: the
		// orchestrator takes it for the middle of the round trip.
		r.UnixNs = time.Now().UnixNano()
		machine = nil
		return stream.Send(r)
	}
	if err := send(); err != nil || req.GetIntervalMs() == 0 {
		return err
	}
	t := time.NewTicker(time.Duration(req.GetIntervalMs()) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case <-s.ctx.Done():
			return nil
		case <-t.C:
			if err := send(); err != nil {
				return err
			}
		}
	}
}

// recordChunk is the size of FetchRecords messages.
const recordChunk = 256 << 10

// FetchRecords streams an experiment's records file once it is stopped.
func (s *Service) FetchRecords(req *agentpb.FetchRecordsRequest, stream agentpb.Agent_FetchRecordsServer) error {
	s.mu.Lock()
	name := req.GetExperiment()
	if name == "" {
		name = s.expName
	}
	files := s.records
	switch req.GetFile() {
	case agentpb.FileTCPSamples:
		files = s.tcpSamples
	case agentpb.FileServed:
		files = s.served
	}
	path, ok := files[name]
	busy := name == s.expName && (s.state == StateRunning || s.state == StateConfigured)
	var flush *rundir.CSVStream[rundir.Served]
	if req.GetFile() == agentpb.FileServed && name == s.expName {
		// The servers stay up between experiments: hand out what they
		// wrote so far.
		flush, busy = s.servedW, s.state == StateRunning
	}
	s.mu.Unlock()
	if flush != nil {
		if err := flush.Flush(); err != nil {
			return status.Errorf(codes.Internal, "served records: %v", err)
		}
	}
	if !ok {
		return status.Errorf(codes.NotFound, "no records for experiment %q on %s", name, s.name)
	}
	if busy {
		return status.Errorf(codes.FailedPrecondition, "experiment %q is not stopped yet", name)
	}
	f, err := os.Open(path)
	if err != nil {
		return status.Errorf(codes.Internal, "opening records: %v", err)
	}
	defer f.Close()
	buf := make([]byte, recordChunk)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if serr := stream.Send(&agentpb.RecordChunk{Data: buf[:n]}); serr != nil {
				return serr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Internal, "reading records: %v", err)
		}
	}
}

// Shutdown stops everything and makes the agent exit after replying.
func (s *Service) Shutdown(context.Context, *agentpb.ShutdownRequest) (*agentpb.ShutdownReply, error) {
	s.Close()
	s.log.Info("shutdown requested")
	if s.shutdown != nil {
		go s.shutdown()
	}
	return &agentpb.ShutdownReply{}, nil
}

// Close stops the experiment and the transport.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeTransport()
	if s.state == StateRunning || s.state == StateConfigured {
		s.state = StateStopped
	}
}

// String names the agent in logs.
func (s *Service) String() string { return fmt.Sprintf("agent %s", s.name) }
