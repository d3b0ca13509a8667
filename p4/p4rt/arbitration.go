package p4rt

import (
	"errors"
	"io"
	"strconv"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// streamQueue is how many messages may wait for one slow client before
// further notifications to it are dropped (and logged).
const streamQueue = 64

// stream is one live StreamChannel.
type stream struct {
	out chan *p4v1.StreamMessageResponse
	// arbitrated is set by the first accepted MasterArbitrationUpdate.
	arbitrated bool
	deviceID   uint64
	electionID *p4v1.Uint128 // nil: unset, can never be primary
}

// arbitration is the spec's client arbitration state for the single
// (device, default role) pair this target serves. Guarded by Server.mu.
type arbitration struct {
	streams map[*stream]struct{}
	primary *stream
	// past is the highest election id ever seen (election_id_past), nil if
	// none has been.
	past *p4v1.Uint128
}

func cmp128(a, b *p4v1.Uint128) int {
	switch {
	case a.GetHigh() != b.GetHigh():
		if a.GetHigh() < b.GetHigh() {
			return -1
		}
		return 1
	case a.GetLow() != b.GetLow():
		if a.GetLow() < b.GetLow() {
			return -1
		}
		return 1
	}
	return 0
}

// checkPrimary admits a Write or SetForwardingPipelineConfig: the request's
// election id must be the current primary's.
func (a *arbitration) checkPrimary(id *p4v1.Uint128) error {
	if a.primary == nil {
		return errorf(codes.PermissionDenied, "not primary: no client is primary for this device")
	}
	if id == nil || cmp128(id, a.primary.electionID) != 0 {
		return errorf(codes.PermissionDenied, "not primary: election_id %v is not the primary's", fmtID(id))
	}
	return nil
}

func fmtID(id *p4v1.Uint128) string {
	if id == nil {
		return "unset"
	}
	return "{high:" + strconv.FormatUint(id.GetHigh(), 10) + " low:" + strconv.FormatUint(id.GetLow(), 10) + "}"
}

// notification is the MasterArbitrationUpdate for st.
func (s *Server) notification(st *stream) *p4v1.StreamMessageResponse {
	u := &p4v1.MasterArbitrationUpdate{DeviceId: s.deviceID}
	if s.arb.past != nil {
		u.ElectionId = proto.Clone(s.arb.past).(*p4v1.Uint128)
	}
	switch {
	case s.arb.primary == st:
		u.Status = &spb.Status{Code: int32(code.Code_OK), Message: "is primary"}
	case s.arb.primary != nil:
		u.Status = &spb.Status{Code: int32(code.Code_ALREADY_EXISTS), Message: "is backup"}
	default:
		u.Status = &spb.Status{Code: int32(code.Code_NOT_FOUND), Message: "no primary"}
	}
	return &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: u}}
}

func (s *Server) send(st *stream, m *p4v1.StreamMessageResponse) {
	select {
	case st.out <- m:
	default:
		s.log.Warn("stream channel client not reading; dropped a message")
	}
}

func (s *Server) notifyAll() {
	for st := range s.arb.streams {
		if st.arbitrated {
			s.send(st, s.notification(st))
		}
	}
}

// arbitrate applies one MasterArbitrationUpdate from st (spec §"Rules for
// Handling MasterArbitrationUpdate Messages"). An error terminates the stream.
func (s *Server) arbitrate(st *stream, u *p4v1.MasterArbitrationUpdate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !st.arbitrated {
		if u.GetDeviceId() != s.deviceID {
			return errorf(codes.NotFound, "unknown device_id %d (this switch is %d)", u.GetDeviceId(), s.deviceID)
		}
	} else if u.GetDeviceId() != st.deviceID {
		return errorf(codes.FailedPrecondition, "device_id %d differs from this stream's %d", u.GetDeviceId(), st.deviceID)
	}
	if u.GetRole() != nil && (u.GetRole().GetName() != "" || u.GetRole().GetConfig() != nil) {
		if st.arbitrated {
			return errorf(codes.FailedPrecondition, "role differs from this stream's default role")
		}
		return errorf(codes.InvalidArgument, "role %q: this target has only the default role", u.GetRole().GetName())
	}
	id := u.GetElectionId()
	if id != nil {
		for other := range s.arb.streams {
			if other != st && other.arbitrated && other.electionID != nil && cmp128(other.electionID, id) == 0 {
				return errorf(codes.InvalidArgument, "election_id %s already used by another live controller", fmtID(id))
			}
		}
	}
	if !st.arbitrated {
		n := 0
		for other := range s.arb.streams {
			if other.arbitrated {
				n++
			}
		}
		if n >= s.maxStreams {
			return errorf(codes.ResourceExhausted, "too many streams (%d)", s.maxStreams)
		}
	}
	st.arbitrated, st.deviceID = true, u.GetDeviceId()
	if id != nil {
		st.electionID = proto.Clone(id).(*p4v1.Uint128)
	} else {
		st.electionID = nil
	}

	wasPrimary := s.arb.primary == st
	if id != nil && (s.arb.past == nil || cmp128(id, s.arb.past) >= 0) {
		changed := s.arb.primary != st
		s.arb.primary = st
		s.arb.past = proto.Clone(id).(*p4v1.Uint128)
		if changed {
			s.log.Info("new primary", "election_id", fmtID(id))
			s.notifyAll()
		} else {
			s.send(st, s.notification(st))
		}
		return nil
	}
	if wasPrimary {
		s.arb.primary = nil // downgraded itself
		s.notifyAll()
		return nil
	}
	s.send(st, s.notification(st))
	return nil
}

// StreamChannel runs arbitration for one client. This target has no packet
// I/O (tor.p4 declares no controller headers), so PacketOut is answered with
// a StreamError and digest acks are ignored.
func (s *Server) StreamChannel(srv p4v1.P4Runtime_StreamChannelServer) error {
	st := &stream{out: make(chan *p4v1.StreamMessageResponse, streamQueue)}
	s.mu.Lock()
	s.arb.streams[st] = struct{}{}
	s.mu.Unlock()
	defer s.dropStream(st)

	sendErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case m := <-st.out:
				if err := srv.Send(m); err != nil {
					sendErr <- err
					return
				}
			case <-done:
				return
			}
		}
	}()

	recv := make(chan *p4v1.StreamMessageRequest)
	recvErr := make(chan error, 1)
	go func() {
		for {
			m, err := srv.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case recv <- m:
			case <-done:
				return
			}
		}
	}()

	for {
		select {
		case err := <-recvErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case err := <-sendErr:
			return err
		case m := <-recv:
			switch r := m.GetUpdate().(type) {
			case *p4v1.StreamMessageRequest_Arbitration:
				if err := s.arbitrate(st, r.Arbitration); err != nil {
					s.log.Info("stream terminated", "err", err)
					return err
				}
			case *p4v1.StreamMessageRequest_Packet:
				s.send(st, &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: &p4v1.StreamError{
					CanonicalCode: int32(code.Code_INVALID_ARGUMENT),
					Message:       "tor.p4 has no packet_out controller header: packet I/O is not supported",
					Details:       &p4v1.StreamError_PacketOut{PacketOut: &p4v1.PacketOutError{PacketOut: r.Packet}},
				}}})
			default:
				// Digest acks and other messages: nothing to do for tor.p4.
			}
		}
	}
}

// dropStream forgets a closed stream; losing the primary leaves the device
// without one until a client wins arbitration again (no auto-promotion).
func (s *Server) dropStream(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.arb.streams, st)
	if s.arb.primary == st {
		s.arb.primary = nil
		s.log.Info("primary disconnected")
		s.notifyAll()
	}
}
