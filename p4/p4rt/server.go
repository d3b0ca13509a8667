// Package p4rt is the P4Runtime (v1.4.1) server of the embedded tor.p4
// target: pipeline config push, table, action profile, counter and meter writes, reads with
// wildcards, and client arbitration on the stream channel, all as the spec
// defines them. docs/p4runtime.md lists where it departs from BMv2's
// simple_switch_grpc and why.
package p4rt

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"

	"github.com/homatb/homatb/p4/pipeline"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// APIVersion is the P4Runtime specification version this server implements.
const APIVersion = "1.4.1"

// DefaultMaxStreams bounds the stream channels open at once.
const DefaultMaxStreams = 16

// Config configures a Server.
type Config struct {
	// DeviceID is the P4Runtime device_id every request must carry.
	DeviceID uint64
	// Pipeline is the target the server programs; nil makes a private one
	// (useful for control-plane tests without a dataplane).
	Pipeline *pipeline.Pipeline
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// MaxStreams bounds open stream channels (0: DefaultMaxStreams).
	MaxStreams int
}

// Server serves P4Runtime for one device. Create it with NewServer.
type Server struct {
	p4v1.UnimplementedP4RuntimeServer

	deviceID   uint64
	pl         *pipeline.Pipeline
	log        *slog.Logger
	maxStreams int
	grpc       *grpc.Server

	// mu serialises every request that reads or changes control state, so
	// Reads and Writes are trivially serializable (spec §"Batching and
	// Ordering of Updates") and arbitration changes wait for in-flight
	// Writes.
	mu        sync.Mutex
	committed *fwdConfig
	saved     *fwdConfig  // VERIFY_AND_SAVE awaiting COMMIT
	live      *tableState // entries installed in the pipeline
	staged    *tableState // entries written since VERIFY_AND_SAVE
	arb       arbitration
}

// fwdConfig is one accepted ForwardingPipelineConfig.
type fwdConfig struct {
	msg    *p4v1.ForwardingPipelineConfig
	schema *schema
}

// NewServer returns a server with no pipeline config: until a client pushes
// one with SetForwardingPipelineConfig, Read and Write fail with
// FAILED_PRECONDITION and the pipeline drops every packet.
func NewServer(cfg Config) *Server {
	s := &Server{
		deviceID:   cfg.DeviceID,
		pl:         cfg.Pipeline,
		log:        cfg.Logger,
		maxStreams: cfg.MaxStreams,
		live:       newTableState(),
	}
	if s.pl == nil {
		s.pl = pipeline.New()
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.maxStreams <= 0 {
		s.maxStreams = DefaultMaxStreams
	}
	s.arb.streams = map[*stream]struct{}{}
	s.grpc = grpc.NewServer()
	p4v1.RegisterP4RuntimeServer(s.grpc, s)
	return s
}

// Pipeline returns the pipeline the server programs.
func (s *Server) Pipeline() *pipeline.Pipeline { return s.pl }

// Serve accepts P4Runtime connections on lis until Stop. It returns nil after
// Stop.
func (s *Server) Serve(lis net.Listener) error {
	s.log.Info("p4runtime server listening", "addr", lis.Addr().String(), "device_id", s.deviceID)
	if err := s.grpc.Serve(lis); err != nil && err != grpc.ErrServerStopped {
		return fmt.Errorf("p4runtime serve: %w", err)
	}
	return nil
}

// Stop closes every connection and stream and makes Serve return.
func (s *Server) Stop() { s.grpc.Stop() }

// Capabilities returns the implemented spec version.
func (s *Server) Capabilities(context.Context, *p4v1.CapabilitiesRequest) (*p4v1.CapabilitiesResponse, error) {
	return &p4v1.CapabilitiesResponse{P4RuntimeApiVersion: APIVersion}, nil
}

func (s *Server) checkDevice(deviceID uint64, role string) error {
	if deviceID != s.deviceID {
		return errorf(codes.NotFound, "unknown device_id %d (this switch is %d)", deviceID, s.deviceID)
	}
	if role != "" {
		return errorf(codes.NotFound, "unknown role %q: this target has only the default role", role)
	}
	return nil
}

// current is the config Reads and Writes refer to: the saved one when a
// VERIFY_AND_SAVE awaits COMMIT, else the committed one. Needs s.mu.
func (s *Server) current() (*fwdConfig, *tableState, error) {
	if s.saved != nil {
		return s.saved, s.staged, nil
	}
	if s.committed != nil {
		return s.committed, s.live, nil
	}
	return nil, nil, errorf(codes.FailedPrecondition, "no forwarding pipeline config set for device %d", s.deviceID)
}

// lockAsPrimary admits a request that changes state (spec order: device and
// role, then primary). On success it returns with s.mu held.
func (s *Server) lockAsPrimary(deviceID uint64, role string, id *p4v1.Uint128) error {
	if err := s.checkDevice(deviceID, role); err != nil {
		return err
	}
	s.mu.Lock()
	if err := s.arb.checkPrimary(id); err != nil {
		s.mu.Unlock()
		return err
	}
	return nil
}

// SetForwardingPipelineConfig verifies, saves and commits pipeline configs.
func (s *Server) SetForwardingPipelineConfig(_ context.Context, req *p4v1.SetForwardingPipelineConfigRequest) (*p4v1.SetForwardingPipelineConfigResponse, error) {
	if err := s.lockAsPrimary(req.GetDeviceId(), req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	action := req.GetAction()
	switch action {
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY,
		p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE,
		p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT:
		fc, err := verifyConfig(req.GetConfig())
		if err != nil {
			return nil, err
		}
		switch action {
		case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE:
			s.saved, s.staged = fc, newTableState()
		case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT:
			if err := s.commit(fc, newTableState()); err != nil {
				return nil, err
			}
		}
		s.log.Info("pipeline config", "action", action.String(), "cookie", req.GetConfig().GetCookie().GetCookie())
	case p4v1.SetForwardingPipelineConfigRequest_COMMIT:
		if req.GetConfig() != nil {
			return nil, errorf(codes.InvalidArgument, "COMMIT takes no config: it realizes the saved one")
		}
		if s.saved == nil {
			return nil, errorf(codes.NotFound, "COMMIT without a preceding VERIFY_AND_SAVE")
		}
		if err := s.commit(s.saved, s.staged); err != nil {
			return nil, err
		}
		s.log.Info("pipeline config", "action", action.String())
	case p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT:
		return nil, errorf(codes.Unimplemented, "RECONCILE_AND_COMMIT is not supported by this target")
	default:
		return nil, errorf(codes.InvalidArgument, "unsupported action %v", action)
	}
	return &p4v1.SetForwardingPipelineConfigResponse{}, nil
}

// commit realizes fc with the entries of ts: counters and registers restart
// from zero. Needs s.mu.
func (s *Server) commit(fc *fwdConfig, ts *tableState) error {
	if err := s.pl.Install(ts.contents()); err != nil {
		return errorf(codes.Internal, "install tables: %v", err)
	}
	s.pl.ResetState()
	s.committed, s.live = fc, ts
	s.saved, s.staged = nil, nil
	return nil
}

// verifyConfig checks that this target can run cfg.
func verifyConfig(cfg *p4v1.ForwardingPipelineConfig) (*fwdConfig, error) {
	if cfg == nil || cfg.GetP4Info() == nil {
		return nil, errorf(codes.InvalidArgument, "config with a P4Info required")
	}
	if err := pipeline.CheckP4Info(cfg.GetP4Info()); err != nil {
		return nil, errorf(codes.InvalidArgument, "%v", err)
	}
	if err := checkDeviceConfig(cfg.GetP4DeviceConfig()); err != nil {
		return nil, errorf(codes.InvalidArgument, "%v", err)
	}
	sc, err := newSchema(cfg.GetP4Info())
	if err != nil {
		return nil, errorf(codes.InvalidArgument, "%v", err)
	}
	return &fwdConfig{msg: proto.Clone(cfg).(*p4v1.ForwardingPipelineConfig), schema: sc}, nil
}

// GetForwardingPipelineConfig returns the config Reads and Writes refer to,
// restricted to the requested fields.
func (s *Server) GetForwardingPipelineConfig(_ context.Context, req *p4v1.GetForwardingPipelineConfigRequest) (*p4v1.GetForwardingPipelineConfigResponse, error) {
	if err := s.checkDevice(req.GetDeviceId(), ""); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fc, _, err := s.current()
	if err != nil {
		// Spec: the config is left unset when the target has none.
		return &p4v1.GetForwardingPipelineConfigResponse{}, nil
	}
	out := &p4v1.ForwardingPipelineConfig{Cookie: fc.msg.GetCookie()}
	switch req.GetResponseType() {
	case p4v1.GetForwardingPipelineConfigRequest_ALL:
		out.P4Info, out.P4DeviceConfig = fc.msg.GetP4Info(), fc.msg.GetP4DeviceConfig()
	case p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY:
	case p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE:
		out.P4Info = fc.msg.GetP4Info()
	case p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE:
		out.P4DeviceConfig = fc.msg.GetP4DeviceConfig()
	default:
		return nil, errorf(codes.InvalidArgument, "unknown response_type %v", req.GetResponseType())
	}
	return &p4v1.GetForwardingPipelineConfigResponse{Config: proto.Clone(out).(*p4v1.ForwardingPipelineConfig)}, nil
}

// tableState is the control-plane view of every table: what Read returns
// and what the pipeline snapshot is built from.
type tableState struct {
	tables map[uint32]*tableData
	// profiles holds the members and groups of each action profile.
	profiles map[uint32]*profileState
}

type tableData struct {
	entries map[string]*checkedEntry
	// def is the written default entry; nil means the P4 default action.
	def *checkedEntry
}

func newTableState() *tableState {
	return &tableState{tables: map[uint32]*tableData{}, profiles: map[uint32]*profileState{}}
}

func (ts *tableState) table(id uint32) *tableData {
	t, ok := ts.tables[id]
	if !ok {
		t = &tableData{entries: map[string]*checkedEntry{}}
		ts.tables[id] = t
	}
	return t
}

// contents converts the state into the pipeline's form. An entry of an
// indirect table runs its member's action, or selects among its group's
// members (pipeline.ActionSelect with the group's index in Groups).
func (ts *tableState) contents() map[uint32]pipeline.TableContents {
	out := map[uint32]pipeline.TableContents{}
	for id, t := range ts.tables {
		c := pipeline.TableContents{Entries: make([]pipeline.Entry, 0, len(t.entries))}
		groupIndex := map[uint32]uint64{}
		for _, k := range slices.Sorted(maps.Keys(t.entries)) {
			e := t.entries[k]
			pe := e.pe
			if st := ts.profiles[e.profile]; e.profile != 0 && st != nil {
				if r := e.ref; !r.group {
					pe.Action = st.members[r.id].call
				} else {
					idx, ok := groupIndex[r.id]
					if !ok {
						idx = uint64(len(c.Groups))
						groupIndex[r.id] = idx
						c.Groups = append(c.Groups, st.calls(r.id))
					}
					pe.Action = pipeline.ActionCall{ID: pipeline.ActionSelect, Params: [pipeline.MaxParams]uint64{idx}}
				}
			}
			c.Entries = append(c.Entries, pe)
		}
		if t.def != nil {
			a := t.def.pe.Action
			c.Default = &a
		}
		out[id] = c
	}
	return out
}

// p4Default is the P4 default action of table t as a canonical TableAction:
// the P4Info's initial (or const) default action when it names one, and
// otherwise the program's own default, which P4Infos from p4c before
// 2024-08 leave out.
func (sc *schema) p4Default(t *p4configv1.Table) *p4v1.TableAction {
	init := t.GetInitialDefaultAction()
	id := init.GetActionId()
	if id == 0 {
		id = t.GetConstDefaultActionId()
	}
	if id == 0 {
		return sc.programDefault(t.GetPreamble().GetId())
	}
	a := &p4v1.Action{ActionId: id}
	for _, arg := range init.GetArguments() {
		v := arg.GetValue()
		for len(v) > 1 && v[0] == 0 {
			v = v[1:]
		}
		a.Params = append(a.Params, &p4v1.Action_Param{ParamId: arg.GetParamId(), Value: append([]byte(nil), v...)})
	}
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
}

// programDefault is the pipeline's default action of a table, with its
// parameters named by the pushed P4Info's ids.
func (sc *schema) programDefault(table uint32) *p4v1.TableAction {
	call, _ := pipeline.DefaultAction(table) // CheckP4Info admitted only tor.p4's tables
	a := &p4v1.Action{ActionId: call.ID}
	if as := sc.actions[call.ID]; as != nil {
		for i, p := range as.params[:min(len(as.params), len(call.Params))] {
			a.Params = append(a.Params, &p4v1.Action_Param{ParamId: p.GetId(), Value: fromUint64(call.Params[i])})
		}
	}
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
}
