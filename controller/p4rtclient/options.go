package p4rtclient

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
)

// ElectionID is a P4Runtime election id (a 128-bit number). The primary
// controller of a device is the one with the highest id.
type ElectionID struct{ High, Low uint64 }

func (e ElectionID) proto() *p4v1.Uint128 { return &p4v1.Uint128{High: e.High, Low: e.Low} }

// less orders ids as the 128-bit numbers they are.
func (e ElectionID) less(o ElectionID) bool {
	return e.High < o.High || (e.High == o.High && e.Low < o.Low)
}

func (e ElectionID) String() string {
	if e.High == 0 {
		return fmt.Sprint(e.Low)
	}
	return fmt.Sprintf("%d:%d", e.High, e.Low)
}

// Option configures a Client.
type Option func(*options) error

type options struct {
	election       ElectionID
	dialTimeout    time.Duration
	backoffMin     time.Duration
	backoffMax     time.Duration
	batchSize      int
	log            *slog.Logger
	pipelineAction p4v1.SetForwardingPipelineConfigRequest_Action
	reconnect      bool
	repush         bool
	grpcOpts       []grpc.DialOption
}

func defaultOptions() options {
	return options{
		election:       ElectionID{Low: 1},
		dialTimeout:    10 * time.Second,
		backoffMin:     50 * time.Millisecond,
		backoffMax:     time.Second,
		batchSize:      1000,
		log:            slog.New(slog.DiscardHandler),
		pipelineAction: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		reconnect:      true,
		repush:         true,
	}
}

// WithElectionID sets the election id sent at arbitration (default 1). Zero
// is allowed: the spec treats {0,0} as a real id, distinct from unset.
func WithElectionID(id ElectionID) Option {
	return func(o *options) error { o.election = id; return nil }
}

// WithDialTimeout bounds how long Dial keeps retrying to reach the switch and
// get an arbitration answer (default 10s).
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("dial timeout %v: must be positive", d)
		}
		o.dialTimeout = d
		return nil
	}
}

// WithBatchSize sets how many updates go in one Write request (default 1000).
func WithBatchSize(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("batch size %d: must be positive", n)
		}
		o.batchSize = n
		return nil
	}
}

// WithLogger sends the client's log lines (arbitration changes, reconnects,
// re-pushes) to l.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("nil logger")
		}
		o.log = l
		return nil
	}
}

// WithPipelineAction sets the SetForwardingPipelineConfig action (default
// VERIFY_AND_COMMIT).
func WithPipelineAction(a p4v1.SetForwardingPipelineConfigRequest_Action) Option {
	return func(o *options) error {
		if a == p4v1.SetForwardingPipelineConfigRequest_UNSPECIFIED {
			return errors.New("pipeline action must be set")
		}
		o.pipelineAction = a
		return nil
	}
}

// WithoutReconnect makes the client give up when its stream breaks instead
// of redialling and re-pushing its state.
func WithoutReconnect() Option {
	return func(o *options) error { o.reconnect = false; return nil }
}

// WithoutRepush makes the client keep no copy of the entries it writes, so
// it cannot re-push them: it gives up when its stream breaks
// (WithoutReconnect), and if it regains primacy over a switch that lost
// its pipeline it reports that (LastError) instead of restoring it. For a
// switch whose state outlives the client's streams (one in the same
// process, as the simulator's): the copy is every entry and group again,
// gigabytes on a fabric of a thousand switches.
func WithoutRepush() Option {
	return func(o *options) error { o.reconnect, o.repush = false, false; return nil }
}

// WithGRPCOptions adds dial options (TLS credentials, interceptors).
// Without credentials the connection is plaintext, as BMv2's default.
func WithGRPCOptions(opts ...grpc.DialOption) Option {
	return func(o *options) error { o.grpcOpts = append(o.grpcOpts, opts...); return nil }
}
