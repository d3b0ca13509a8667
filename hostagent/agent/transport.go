package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/linkpause"
	"github.com/homatb/homatb/hostagent/tcprpc"
)

// Transport is what the agent needs of an RPC transport; Homa and kernel
// TCP both fit it.
type Transport interface {
	// Call sends req to target ("ip:port") and waits for the response.
	// req is shared and read-only.
	Call(ctx context.Context, target string, req []byte) (CallResult, error)
	// Serve answers requests on port with h until Close, and tells served,
	// when not nil, of each request answered.
	Serve(ctx context.Context, port uint16, h Handler, served func(*Served)) error
	// Stats returns transport counters by name.
	Stats() map[string]uint64
	// MaxMessage is the longest request or response the transport carries.
	MaxMessage() int
	// Close stops clients and servers; outstanding calls fail.
	Close() error
}

// CallResult is what a transport reports about one completed RPC.
type CallResult struct {
	RespBytes int
	// Retries counts transport-level resends seen by this RPC: Homa's
	// resend requests and restarts; for TCP the segments the client
	// retransmitted on the RPC's connection while it was outstanding.
	Retries int
	// RequestOut is when the request's last byte was first handed to the
	// network (Homa; zero where the transport cannot tell, as TCP, whose
	// writes are buffered and shared), FirstResponse when the first byte
	// of the response arrived; both zero when unknown.
	RequestOut, FirstResponse time.Time
	// GrantsIn counts the GRANTs received for the request, GrantsOut
	// those sent for the response (Homa).
	GrantsIn, GrantsOut int
	// ID is the transport's id of the RPC (Homa's), 0 when it has none.
	ID uint64
	// Local is the client's own address of the RPC; ReqOffset and
	// RespOffset its place in a TCP connection's streams (Served).
	Local                 netip.AddrPort
	ReqOffset, RespOffset int64
	// RecoveryFrom is when the RPC began waiting for a lost packet (Homa),
	// zero if it never did or the transport cannot tell.
	RecoveryFrom time.Time
}

// Served is what a server's transport tells of one request it answered:
// the keys that match it to the client's record and to the switch's
// per-packet records, and the server's times.
type Served struct {
	// Client is the client's address of the RPC (CallResult.Local), Local
	// the server's own.
	Client, Local netip.AddrPort
	// ID is the RPC's id as the client chose it (Homa), 0 for TCP.
	ID uint64
	// ReqOffset and RespOffset are the TCP stream offsets (CallResult).
	ReqOffset, RespOffset int64
	ReqBytes, RespBytes   int
	// Request is when the whole request reached the application, Reply
	// when the application handed the response back; RecoveryFrom when
	// the server began waiting for a lost packet of the request (Homa),
	// zero if it never did.
	Request, Reply, RecoveryFrom time.Time
}

// Handler turns a request into a response. It must not retain req and may
// return a shared read-only slice.
type Handler func(req []byte) []byte

// ErrUnsupported is returned for a transport this build cannot run.
var ErrUnsupported = errors.New("transport not supported by this agent")

// responder answers requests (driver.Responder), telling the experiment's
// collectives and matrices of their messages first.
type responder struct {
	driver.Responder
	// transport is the records' name of the responder's transport.
	transport string
	// exp is the experiment with collectives or matrices; nil without any.
	exp atomic.Pointer[experiment]
}

func (r *responder) handle(req []byte) []byte {
	if e := r.exp.Load(); e != nil {
		e.arrived(r.transport, req)
	}
	return r.Answer(req)
}

// newTransport builds the transport a Configure request asks for.
func newTransport(req *agentpb.ConfigureRequest, log *slog.Logger) (Transport, error) {
	switch req.GetTransport() {
	case agentpb.Transport_TRANSPORT_TCP:
		tp := req.GetTcp()
		pc, withPIAS, err := driver.PIASOf(tp)
		if err != nil {
			return nil, err
		}
		t, err := newTCPTransport(tcprpc.Config{
			Congestion:   tp.GetCongestion(),
			ConnsPerPeer: int(tp.GetConnectionsPerPeer()),
		}, req.GetAddress(), log)
		if err != nil {
			return nil, err
		}
		if withPIAS {
			if t.tagger, err = attachPIAS(req.GetAddress(), pc); err != nil {
				t.Close()
				return nil, err
			}
		}
		if v := tp.GetPausePriorities(); v != 0 {
			if t.hold, err = holdLink(req.GetAddress(), v, tp.GetLinkBps(), log); err != nil {
				t.Close()
				return nil, err
			}
		}
		return t, nil
	case agentpb.Transport_TRANSPORT_HOMA:
		return newHomaTransport(req, log)
	}
	return nil, fmt.Errorf("transport %v: expected TRANSPORT_TCP or TRANSPORT_HOMA", req.GetTransport())
}

// EngineVariant returns the variant of the Homa engine that runs the
// transport named name in scenarios and records: Homa itself and the
// comparison transports of issue #20 built on it as policies (pFabric and
// NDP hosts, pHost). A Configure request selects one with TRANSPORT_HOMA
// and homaconf.Config.Variant set to the name.
func EngineVariant(name string) (homaconf.Variant, bool) {
	v := homaconf.Variant(name)
	return v, slices.Contains(homaconf.Variants, v)
}

// transportLabel is the records' name of the transport req configures:
// transportName, with the engine variant in place of "homa" and "pias"
// for TCP with PIAS's tagging.
func transportLabel(req *agentpb.ConfigureRequest) string {
	if req.GetTransport() == agentpb.Transport_TRANSPORT_TCP && req.GetTcp().GetPias() {
		return "pias"
	}
	if req.GetTransport() == agentpb.Transport_TRANSPORT_HOMA {
		if c, err := req.GetHoma().Config(); err == nil && c.Variant != "" {
			if _, ok := EngineVariant(string(c.Variant)); ok {
				return string(c.Variant)
			}
		}
	}
	return transportName(req.GetTransport())
}

// transportName is the records' name of a transport.
func transportName(t agentpb.Transport) string {
	switch t {
	case agentpb.Transport_TRANSPORT_TCP:
		return "tcp"
	case agentpb.Transport_TRANSPORT_HOMA:
		return "homa"
	}
	return "unknown"
}

// tcpTransport adapts tcprpc to Transport.
type tcpTransport struct {
	cfg     tcprpc.Config
	address string
	log     *slog.Logger
	client  *tcprpc.Client

	// tagger is PIAS's packet tagging on the host's interface, nil
	// without PIAS.
	tagger io.Closer
	// hold obeys the switch's PAUSE frames on the host's link, nil when
	// no priority TCP uses is lossless.
	hold *linkpause.Hold

	mu      sync.Mutex
	servers []*tcprpc.Server
}

func newTCPTransport(cfg tcprpc.Config, address string, log *slog.Logger) (*tcpTransport, error) {
	c, err := tcprpc.NewClient(cfg, log)
	if err != nil {
		return nil, err
	}
	return &tcpTransport{cfg: cfg, address: address, log: log, client: c}, nil
}

func (t *tcpTransport) Call(ctx context.Context, target string, req []byte) (CallResult, error) {
	res, err := t.client.Call(ctx, target, req)
	return CallResult{RespBytes: res.Bytes, Retries: res.Retrans, FirstResponse: res.FirstByte,
		Local: res.Local, ReqOffset: res.ReqOffset, RespOffset: res.RespOffset}, err
}

func (t *tcpTransport) Serve(ctx context.Context, port uint16, h Handler, served func(*Served)) error {
	var tell func(*tcprpc.Served)
	if served != nil {
		tell = func(s *tcprpc.Served) {
			served(&Served{Client: s.Client, Local: s.Local, ReqOffset: s.ReqOffset, RespOffset: s.RespOffset,
				ReqBytes: s.ReqBytes, RespBytes: s.RespBytes, Request: s.Request, Reply: s.Reply})
		}
	}
	s, err := tcprpc.ListenServed(ctx, net.JoinHostPort(t.address, strconv.Itoa(int(port))), t.cfg, tcprpc.Handler(h), tell, t.log)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.servers = append(t.servers, s)
	t.mu.Unlock()
	return nil
}

func (t *tcpTransport) MaxMessage() int { return tcprpc.MaxMessage }

func (t *tcpTransport) Stats() map[string]uint64 {
	out := t.client.Stats()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.servers {
		for k, v := range s.Stats() {
			out[k] += v
		}
	}
	if t.hold != nil {
		maps.Copy(out, t.hold.Stats())
	}
	return out
}

func (t *tcpTransport) Close() error {
	err := t.client.Close()
	t.mu.Lock()
	servers := t.servers
	t.servers = nil
	t.mu.Unlock()
	for _, s := range servers {
		err = errors.Join(err, s.Close())
	}
	if t.tagger != nil {
		err = errors.Join(err, t.tagger.Close())
		t.tagger = nil
	}
	if t.hold != nil {
		err = errors.Join(err, t.hold.Close())
		t.hold = nil
	}
	return err
}
