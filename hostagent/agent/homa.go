package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// homaTransport adapts a hostagent/homa Endpoint on a raw IP-protocol-146
// socket to Transport.
type homaTransport struct {
	ep  *homa.Endpoint
	log *slog.Logger

	mu      sync.Mutex
	servers []*homa.Server
	wg      sync.WaitGroup
}

// newHomaTransport builds the Homa transport on the host's address.
func newHomaTransport(req *agentpb.ConfigureRequest, log *slog.Logger) (Transport, error) {
	cfg, err := homaConfig(req.GetHoma())
	if err != nil {
		return nil, &driver.ConfigError{Field: "homa", Value: string(req.GetHoma().GetConfigJson()), Msg: err.Error()}
	}
	addr, err := netip.ParseAddr(req.GetAddress())
	if err != nil {
		return nil, driver.Invalid("address", req.GetAddress(), "Homa needs this host's IPv4 address")
	}
	conn, err := homa.Listen(addr, &cfg)
	if err != nil {
		return nil, fmt.Errorf("homa socket on %v: %w", addr, err)
	}
	ep, err := homa.NewEndpoint(conn, cfg, log)
	if err != nil {
		conn.Close()
		return nil, &driver.ConfigError{Field: "homa", Value: string(req.GetHoma().GetConfigJson()), Msg: err.Error()}
	}
	return &homaTransport{ep: ep, log: log}, nil
}

// homaConfig decodes the control API's Homa configuration and checks it
// with homaconf's own validation, the one homatb validate runs.
func homaConfig(p *agentpb.HomaParams) (homaconf.Config, error) {
	c, err := p.Config()
	if err != nil {
		return c, err
	}
	_, err = c.WithDefaults() // validate now; NewEndpoint fills defaults itself
	return c, err
}

func (t *homaTransport) Call(ctx context.Context, target string, req []byte) (CallResult, error) {
	dest, err := netip.ParseAddrPort(target)
	if err != nil {
		return CallResult{}, fmt.Errorf("homa: target %q: %w", target, err)
	}
	resp, info, err := t.ep.Call(ctx, dest, req)
	return CallResult{RespBytes: len(resp), Retries: info.Retries(), RequestOut: info.RequestSent,
		FirstResponse: info.FirstResponse, GrantsIn: info.GrantsReceived, GrantsOut: info.GrantsSent, ID: info.ID,
		RecoveryFrom: info.RecoveryFrom,
		Local:        netip.AddrPortFrom(t.ep.LocalAddr(), t.ep.Config().ClientPort)}, err
}

// Serve answers port's requests from one goroutine: Reply hands the
// response to the Endpoint and returns without waiting for it to go out
// (the pacer sends what the link takes now, the rest on later events).
func (t *homaTransport) Serve(ctx context.Context, port uint16, h Handler, served func(*Served)) error {
	s, err := t.ep.Listen(port)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.servers = append(t.servers, s)
	t.mu.Unlock()
	t.wg.Go(func() {
		for {
			rpc, err := s.Receive(ctx)
			if err != nil {
				if !errors.Is(err, homa.ErrClosed) && ctx.Err() == nil {
					t.log.Warn("homa receive failed", "port", port, "err", err)
				}
				return
			}
			in := time.Now()
			resp := h(rpc.Request())
			if served != nil {
				served(&Served{Client: rpc.Peer(), Local: netip.AddrPortFrom(t.ep.LocalAddr(), port), ID: rpc.ID(),
					ReqBytes: len(rpc.Request()), RespBytes: len(resp), Request: in, Reply: time.Now(),
					RecoveryFrom: rpc.RecoveryFrom()})
			}
			if err := rpc.Reply(resp); err != nil {
				t.log.Debug("homa reply failed", "peer", rpc.Peer(), "err", err)
			}
		}
	})
	return nil
}

func (t *homaTransport) MaxMessage() int { return int(t.ep.Config().MaxMessageBytes) }

func (t *homaTransport) Stats() map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range t.ep.Stats().Map() {
		out["homa_"+k] = v
	}
	return out
}

func (t *homaTransport) Close() error {
	t.mu.Lock()
	servers := t.servers
	t.servers = nil
	t.mu.Unlock()
	for _, s := range servers {
		s.Close()
	}
	err := t.ep.Close()
	t.wg.Wait()
	return err
}
