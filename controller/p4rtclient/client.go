package p4rtclient

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Client is a P4Runtime client for one device. It keeps a StreamChannel open
// for arbitration; when the stream breaks (the switch restarted) it redials,
// re-arbitrates and, once primary again, re-pushes the pipeline and every
// table entry it wrote if the switch lost them.
type Client struct {
	addr   string
	device uint64
	o      options
	conn   *grpc.ClientConn
	rpc    p4v1.P4RuntimeClient

	ctx    context.Context // the client's lifetime
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// opMu serialises pipeline pushes, writes and replays, so a replay after
	// a restart never interleaves with a caller's Write.
	opMu sync.Mutex

	sendMu sync.Mutex // guards Send on stream
	stream p4v1.P4Runtime_StreamChannelClient

	mu       sync.Mutex
	election ElectionID
	primary  bool
	// seen is the election id in the switch's last arbitration answer on
	// this stream (the highest it has seen, or the primary's), if any.
	seen     *ElectionID
	syncing  bool // a re-push is pending or running
	streamOK bool
	lastErr  error
	changed  chan struct{} // closed and replaced on every state change
	schema   *Schema
	pipeline *p4v1.ForwardingPipelineConfig
	written  map[string]*p4v1.Entity // by writtenKey: members, then groups, then table entries
	stats    Stats

	dialed     chan error // gets the first arbitration outcome, once
	dialedOnce sync.Once
	dialedDone bool // set (under mu) once dialed was sent
}

// Stats counts what the client's stream went through.
type Stats struct {
	// Streams is how many StreamChannels were opened (1 + reconnects).
	Streams int
	// PrimaryLost counts transitions from primary to backup or down.
	PrimaryLost int
	// Repushes counts pipeline and entry re-pushes after the switch lost them.
	Repushes int
}

// Dial connects to the P4Runtime server at addr for device deviceID, opens
// the arbitration stream and returns once the switch has answered the
// arbitration, as primary or backup (see IsPrimary, WaitPrimary). It retries
// until the dial timeout; errors that retrying cannot fix (a duplicate
// election id, an unknown device) are returned at once.
func Dial(ctx context.Context, addr string, deviceID uint64, opts ...Option) (*Client, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
	}
	gopts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// gRPC's default reconnect backoff grows to two minutes; a switch
		// that restarts should be found again within about a second.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: o.backoffMin, Multiplier: 1.6, Jitter: 0.2, MaxDelay: o.backoffMax},
			MinConnectTimeout: 2 * time.Second,
		}),
	}, o.grpcOpts...)
	conn, err := grpc.NewClient(addr, gopts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	c := &Client{
		addr: addr, device: deviceID, o: o, conn: conn,
		rpc:      p4v1.NewP4RuntimeClient(conn),
		election: o.election,
		changed:  make(chan struct{}),
		written:  map[string]*p4v1.Entity{},
		dialed:   make(chan error, 1),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1)
	go c.run()

	t := time.NewTimer(o.dialTimeout)
	defer t.Stop()
	select {
	case err = <-c.dialed:
	case <-t.C:
		err = fmt.Errorf("no arbitration answer within %v (connection %v, last error: %v)", o.dialTimeout, c.conn.GetState(), c.LastError())
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("dial %s device %d: %w", addr, deviceID, err)
	}
	return c, nil
}

// Close ends the stream (giving up primacy) and the connection.
func (c *Client) Close() error {
	c.cancel()
	err := c.conn.Close()
	c.wg.Wait()
	if err != nil && status.Code(err) != codes.Canceled {
		return fmt.Errorf("close %s: %w", c.addr, err)
	}
	return nil
}

// Addr is the server address the client dialled.
func (c *Client) Addr() string { return c.addr }

// DeviceID is the P4Runtime device id.
func (c *Client) DeviceID() uint64 { return c.device }

// IsPrimary reports whether the switch last said this client is primary.
func (c *Client) IsPrimary() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.primary
}

// ElectionID returns the id the client arbitrates with.
func (c *Client) ElectionID() ElectionID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.election
}

// Stats returns the stream counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// LastError is the last stream or re-push error, if any.
func (c *Client) LastError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// Schema returns the name resolver of the pipeline set by SetPipeline or
// FetchPipeline, or nil before either.
func (c *Client) Schema() *Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.schema
}

// WaitPrimary blocks until the client is primary and any re-push after a
// switch restart has finished, or ctx ends. It fails at once when the
// switch's arbitration answer carries an election id above the client's:
// a switch that follows the spec makes primary only an id at least the
// highest it has seen, so waiting could not help (see SetElectionID).
func (c *Client) WaitPrimary(ctx context.Context) error {
	for {
		c.mu.Lock()
		ok, ch := c.primary && !c.syncing, c.changed
		var above *ElectionID
		if !c.primary && c.seen != nil && c.election.less(*c.seen) {
			above = c.seen
		}
		mine := c.election
		c.mu.Unlock()
		if ok {
			return nil
		}
		if above != nil {
			return fmt.Errorf("%s: not primary with election id %v: switch has seen election id %v; use an id of at least %v", c.addr, mine, *above, *above)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting to be primary: %w (last error: %v)", c.addr, ctx.Err(), c.LastError())
		case <-c.ctx.Done():
			return fmt.Errorf("%s: client closed", c.addr)
		}
	}
}

// SetElectionID changes the election id and re-arbitrates on the open
// stream; a backup becomes primary by sending an id higher than the
// current primary's (or, on a switch that follows the spec, than any id
// it has seen). Use WaitPrimary to wait for the outcome.
func (c *Client) SetElectionID(id ElectionID) error {
	c.mu.Lock()
	c.election = id
	c.mu.Unlock()
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if c.stream == nil {
		return nil // the next stream arbitrates with the new id
	}
	if err := c.stream.Send(c.arbitration(id)); err != nil {
		return fmt.Errorf("%s: arbitrate with election id %v: %w", c.addr, id, err)
	}
	return nil
}

func (c *Client) arbitration(id ElectionID) *p4v1.StreamMessageRequest {
	return &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{
		Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: c.device, ElectionId: id.proto()},
	}}
}

// notifyLocked wakes WaitPrimary callers; c.mu must be held.
func (c *Client) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// reportDial hands Dial the outcome of the first arbitration, once.
func (c *Client) reportDial(err error) {
	c.dialedOnce.Do(func() {
		c.mu.Lock()
		c.dialedDone = true
		c.mu.Unlock()
		c.dialed <- err
	})
}

// run keeps a stream open for the client's lifetime.
func (c *Client) run() {
	defer c.wg.Done()
	backoff := c.o.backoffMin
	for c.ctx.Err() == nil {
		start := time.Now()
		err := c.session()
		c.streamDown(err)
		if c.ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		dialed := c.dialedDone
		c.mu.Unlock()
		if !dialed && permanent(err) {
			c.reportDial(err) // retrying cannot fix it: fail Dial now
			return
		}
		if dialed && !c.o.reconnect {
			return
		}
		if time.Since(start) > c.o.backoffMax {
			backoff = c.o.backoffMin // the stream was up for a while: start over
		}
		select {
		case <-time.After(backoff):
		case <-c.ctx.Done():
			return
		}
		backoff = min(2*backoff, c.o.backoffMax)
	}
}

// permanent reports stream errors that reconnecting cannot fix.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.PermissionDenied, codes.Unimplemented, codes.ResourceExhausted:
		return true
	}
	return false
}

// session opens one stream, arbitrates and handles messages until it breaks.
func (c *Client) session() error {
	sctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	stream, err := c.rpc.StreamChannel(sctx, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("open stream: %w", err)
	}
	c.mu.Lock()
	id := c.election
	c.stats.Streams++
	reconnect := c.stats.Streams > 1
	c.mu.Unlock()
	c.sendMu.Lock()
	c.stream = stream
	err = stream.Send(c.arbitration(id))
	c.sendMu.Unlock()
	if err != nil {
		return fmt.Errorf("send arbitration: %w", err)
	}
	if reconnect {
		c.o.log.Info("p4runtime stream reopened", "addr", c.addr, "device", c.device)
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			return err
		}
		switch u := msg.GetUpdate().(type) {
		case *p4v1.StreamMessageResponse_Arbitration:
			c.onArbitration(u.Arbitration)
			c.reportDial(nil)
		case *p4v1.StreamMessageResponse_Error:
			c.o.log.Warn("p4runtime stream error", "addr", c.addr, "code", codes.Code(u.Error.GetCanonicalCode()), "msg", u.Error.GetMessage())
		}
	}
}

func (c *Client) streamDown(err error) {
	c.sendMu.Lock()
	c.stream = nil
	c.sendMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	if c.primary {
		c.stats.PrimaryLost++
	}
	c.primary, c.streamOK = false, false
	c.seen = nil // a restarted switch has forgotten the ids it saw
	c.lastErr = err
	c.notifyLocked()
	c.o.log.Warn("p4runtime stream lost", "addr", c.addr, "device", c.device, "err", err)
}

func (c *Client) onArbitration(u *p4v1.MasterArbitrationUpdate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.primary
	c.primary = codes.Code(u.GetStatus().GetCode()) == codes.OK
	c.streamOK = true
	c.seen = nil
	if id := u.GetElectionId(); id != nil {
		c.seen = &ElectionID{High: id.GetHigh(), Low: id.GetLow()}
	}
	switch {
	case c.primary && !was:
		c.o.log.Info("p4runtime primary", "addr", c.addr, "device", c.device, "election_id", c.election)
		if c.pipeline != nil && !c.syncing {
			c.syncing = true
			c.wg.Add(1)
			go c.resync()
		}
	case !c.primary && was:
		c.stats.PrimaryLost++
		c.o.log.Warn("p4runtime primacy lost", "addr", c.addr, "device", c.device, "primary_election_id", u.GetElectionId())
	}
	c.notifyLocked()
}

// resync runs when the client becomes primary again while holding a
// pipeline: if the switch no longer has that pipeline (it restarted, or
// another controller replaced it), push it and every entry written since.
func (c *Client) resync() {
	defer c.wg.Done()
	backoff := c.o.backoffMin
	for {
		err := c.resyncOnce()
		c.mu.Lock()
		if err != nil && !c.o.repush {
			c.lastErr = err // retrying cannot restore what was not kept
		}
		if err == nil || c.ctx.Err() != nil || !c.primary || !c.o.repush {
			// Done, closed, or no longer primary: the next primacy gain
			// starts a new resync.
			c.syncing = false
			c.notifyLocked()
			c.mu.Unlock()
			return
		}
		c.lastErr = err
		c.mu.Unlock()
		c.o.log.Error("p4runtime re-push failed, retrying", "addr", c.addr, "device", c.device, "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-c.ctx.Done():
		}
		backoff = min(2*backoff, c.o.backoffMax)
	}
}

func (c *Client) resyncOnce() error {
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	c.opMu.Lock()
	defer c.opMu.Unlock()
	c.mu.Lock()
	pipe := c.pipeline
	c.mu.Unlock()
	got, err := c.rpc.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{
		DeviceId: c.device, ResponseType: p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY,
	})
	if err == nil && got.GetConfig().GetCookie() != nil && got.GetConfig().GetCookie().GetCookie() == pipe.GetCookie().GetCookie() {
		return nil // same pipeline, state kept: the stream broke but not the switch
	}
	if !c.o.repush {
		return fmt.Errorf("%s: the switch lost its pipeline and the client keeps no copy to re-push (WithoutRepush)", c.addr)
	}
	if err := c.pushPipelineLocked(ctx, pipe); err != nil {
		return fmt.Errorf("re-push pipeline: %w", err)
	}
	c.mu.Lock()
	// Members before the groups that list them, groups before the
	// entries that name them (writtenKey sorts so).
	updates := make([]*p4v1.Update, 0, len(c.written))
	for _, k := range sortedKeys(c.written) {
		typ := p4v1.Update_INSERT
		if c.written[k].GetTableEntry().GetIsDefaultAction() || c.written[k].GetMeterEntry() != nil {
			typ = p4v1.Update_MODIFY
		}
		updates = append(updates, &p4v1.Update{Type: typ, Entity: c.written[k]})
	}
	c.mu.Unlock()
	if err := c.writeLocked(ctx, updates); err != nil {
		return fmt.Errorf("re-push %d entries: %w", len(updates), err)
	}
	c.mu.Lock()
	c.stats.Repushes++
	c.mu.Unlock()
	c.o.log.Info("p4runtime state re-pushed", "addr", c.addr, "device", c.device, "entries", len(updates))
	return nil
}

// SetPipeline pushes a P4Info and the target's device config (the BMv2 JSON
// for simple_switch_grpc; nil for the embedded target) with the configured
// action (VERIFY_AND_COMMIT by default, which clears the switch's tables).
// The client keeps both to re-push them after a switch restart.
func (c *Client) SetPipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte) error {
	schema, err := NewSchema(info)
	if err != nil {
		return fmt.Errorf("%s: set pipeline: p4info: %w", c.addr, err)
	}
	var cookie [8]byte
	_, _ = rand.Read(cookie[:]) // crypto/rand never fails on Linux
	pipe := &p4v1.ForwardingPipelineConfig{
		P4Info:         info,
		P4DeviceConfig: deviceConfig,
		Cookie:         &p4v1.ForwardingPipelineConfig_Cookie{Cookie: binary.BigEndian.Uint64(cookie[:])},
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if err := c.pushPipelineLocked(ctx, pipe); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.schema = schema
	switch c.o.pipelineAction {
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT:
		c.pipeline = pipe
		c.written = map[string]*p4v1.Entity{}
	case p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT:
		c.pipeline = pipe
	}
	return nil
}

func (c *Client) pushPipelineLocked(ctx context.Context, pipe *p4v1.ForwardingPipelineConfig) error {
	_, err := c.rpc.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId:   c.device,
		ElectionId: c.ElectionID().proto(),
		Action:     c.o.pipelineAction,
		Config:     pipe,
	})
	if err != nil {
		return fmt.Errorf("%s: set pipeline (%v): %w", c.addr, c.o.pipelineAction, err)
	}
	return nil
}

// FetchPipeline reads the switch's current P4Info so that a client that did
// not push the pipeline (a backup, a telemetry reader) can address entities
// by name. It does not adopt the pipeline for re-pushing.
func (c *Client) FetchPipeline(ctx context.Context) error {
	resp, err := c.rpc.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{
		DeviceId: c.device, ResponseType: p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE,
	})
	if err != nil {
		return fmt.Errorf("%s: get pipeline: %w", c.addr, err)
	}
	schema, err := NewSchema(resp.GetConfig().GetP4Info())
	if err != nil {
		return fmt.Errorf("%s: switch's p4info: %w", c.addr, err)
	}
	c.mu.Lock()
	c.schema = schema
	c.mu.Unlock()
	return nil
}

// Logger is the logger the client was given (WithLogger), so code that
// drives several clients logs to the same place.
func (c *Client) Logger() *slog.Logger { return c.o.log }

// DialTimeout is the configured dial timeout (WithDialTimeout), which also
// bounds how long callers wait for primacy after Dial.
func (c *Client) DialTimeout() time.Duration { return c.o.dialTimeout }

// NeedSchema is Schema, or an error when no pipeline has been set or fetched.
func (c *Client) NeedSchema() (*Schema, error) {
	if s := c.Schema(); s != nil {
		return s, nil
	}
	return nil, errors.New(c.addr + ": no pipeline: call SetPipeline or FetchPipeline first")
}

// APIVersion asks the switch which P4Runtime version it implements (BMv2
// says "1.3.0" whatever it runs; do not branch on it).
func (c *Client) APIVersion(ctx context.Context) (string, error) {
	resp, err := c.rpc.Capabilities(ctx, &p4v1.CapabilitiesRequest{})
	if err != nil {
		return "", fmt.Errorf("%s: capabilities: %w", c.addr, err)
	}
	return resp.GetP4RuntimeApiVersion(), nil
}
