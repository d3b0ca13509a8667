package simulate

import (
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/simnet"
	"github.com/homatb/homatb/simnet/tcpmodel"
)

// job is one simulated experiment: who runs what on a fresh network, for
// how long in virtual time. Each host's workload runs on the shared
// drivers (package driver), as its agent would run it, on the network's
// clock.
type job struct {
	name, transport string
	net             *simnet.Network
	cfg             homaconf.Config
	// tcp, when set, runs the TCP model on the hosts instead of Homa
	// (kernel-TCP transports: tcp, pias).
	tcp *tcpmodel.Config
	// nicPrio: the TCP model's hosts queue by DSCP class in their NICs
	// (tcp.nic_priorities).
	nicPrio bool
	// hosts are the workloads of the hosts taking part, in layout order.
	hosts   []driver.Config
	servers map[string]bool
	length  time.Duration
	drain   time.Duration
	epoch   time.Time // wall time of virtual time 0
	log     *slog.Logger

	// run holds the hosts' drivers and books, which hand each record to
	// out in the order issued, once final.
	run    *driver.Run
	out    Records
	outErr error
	// counters are each host's books and transport counters at the end
	// (nil until then).
	counters map[string]*agentpb.Counters
	mu       sync.Mutex // the agents call at once: Configure, Stop
	// bookServed sends the servers' answers to out; servedBy counts each
	// TCP model server's.
	bookServed bool
	servedBy   map[string]uint64
	zeros      driver.Responder // the Homa servers' answers
	end        int64            // Unix time the duration ends
	closed     bool             // books closed: later callbacks are the shutdown's
	// oneWay sends the clients' requests as one-way messages: a server
	// answers none, and each ends as its receiver has it whole (the
	// receiver tells the sender's endpoint, free on the wire).
	oneWay bool
	byIP   map[netip.Addr]*simnet.Node
	// stacks: the host qdisc, and in a shared experiment the engine and
	// the TCP model on every host at once (shared.go).
	stacks hostStacks
	// shared holds the collectives' targets and matrices, parsed once for
	// all their members (nil: each member parses its own).
	shared *driver.Shared
	// configured are the hosts' drivers as their agents' Configure set
	// them up, by host and transport; order is the order they start in.
	configured map[string]driver.Config
	order      []string
	// stats are the switches' statistics, read at statsAt; cards their
	// postcards files.
	stats   map[string]switchstats.Stats
	statsAt int64
	cards   map[string]*postcards

	// lent is the buffer of every step message (simTransport.LendBuffer):
	// the endpoints copy only a message's first bytes (headBytes).
	lent []byte
	// served is the row answer books each answer in (Records.Served does
	// not keep it): one allocation less a request.
	served rundir.Served
}

// start starts every host's drivers and runs the network through the
// warm-up and duration, or until every client has issued its last RPC
// and none is open (a bounded count, as calibration's).
func (j *job) start() error {
	sched := driver.OnQueue(j.net.Clock(), j.epoch.UnixNano())
	j.run = driver.NewRun(sched, false, func(row *rundir.RPC) {
		if j.outErr == nil {
			j.outErr = j.out.RPC(row)
		}
	})
	for _, key := range j.order {
		if hc, ok := j.configured[key]; ok {
			j.hosts = append(j.hosts, hc)
		}
	}
	started := map[string]bool{} // a shared job's hosts have a driver per transport
	for _, hc := range j.hosts {
		h := j.net.Node(hc.Host)
		if !started[hc.Host] {
			started[hc.Host] = true
			if err := j.startHost(h, len(started)); err != nil {
				return err
			}
			if j.servers[hc.Host] {
				if err := j.serve(h); err != nil {
					return err
				}
			}
		}
		j.run.Add(hc, j.newSimTransport(h, j.onTCP(hc.Transport)))
	}
	j.run.Start()
	j.end = sched.Now() + j.length.Nanoseconds()
	j.run.Pass(j.end)
	return nil
}

// finish runs the network through drain while RPCs are open, closes the
// books and counts each host's transport; once, whoever asks first (the
// agents' Stop calls come at once).
func (j *job) finish(drain time.Duration) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.counters != nil {
		return j.outErr
	}
	if j.run == nil { // a calibration's, run whole at its client's Status
		if err := j.start(); err != nil {
			return err
		}
	}
	j.run.Stop(j.end + drain.Nanoseconds())
	j.closed = true
	if j.outErr == nil {
		j.outErr = j.out.Close()
	}
	j.counters = map[string]*agentpb.Counters{}
	for _, hc := range j.hosts {
		name := hc.Host
		if j.counters[name] != nil {
			continue // a shared job's host, counted at its first driver
		}
		c := j.run.Counters(name)
		if t := j.net.Node(name).TCP(); t != nil {
			c.Served = j.servedBy[name]
			for k, v := range t.Stats().Map() {
				c.Transport["tcpmodel_"+k] = v // a model's, not the kernel's tcp_ counters
			}
		}
		if ep := j.net.Node(name).Endpoint(); ep != nil {
			st := ep.Stats()
			c.Served += st.Served
			for k, v := range st.Map() {
				c.Transport["homa_"+k] = v // as the agent names them
			}
		}
		j.qdiscCounters(name, c.Transport)
		j.counters[name] = c
		j.net.Node(name).Stop()
	}
	return j.outErr
}

// serve answers every request to ServerPort with the response length it
// asks for, at once: the simulated server takes no time.
func (j *job) serve(h *simnet.Node) error {
	if t := h.TCP(); t != nil {
		if j.servedBy == nil {
			j.servedBy = map[string]uint64{}
		}
		srv := j.newServer(h, j.transportOf(true))
		err := t.Serve(ServerPort, func(sr *tcpmodel.ServerRPC) {
			j.servedBy[h.Name]++
			j.answer(srv, sr.Req, len(sr.Req), func(n int) rundir.Served {
				if j.oneWay {
					_ = t.Delivered(j.net.Clock().Now(), sr) // fails only when replied twice
				} else {
					_ = t.Reply(j.net.Clock().Now(), sr, n)
				}
				return rundir.Served{Client: srv.peerName(sr.Peer), ReqOffset: sr.ReqOffset, RespOffset: sr.RespOffset}
			})
		})
		if err != nil || h.Endpoint() == nil {
			return err
		}
	}
	srv := j.newServer(h, j.transportOf(false))
	return h.Serve(ServerPort, func(sr *homa.ServerRPC) {
		j.answer(srv, sr.Request(), sr.Length(), func(n int) rundir.Served {
			if !j.oneWay {
				_ = h.Reply(sr, j.zeros.Zeros(n)) // fails only for an RPC its client gave up
			} else {
				_ = h.Drop(sr) // fails only when replied twice
				if c := j.byIP[sr.Peer().Addr()]; c != nil {
					c.Delivered(sr.ID())
				}
			}
			return rundir.Served{Client: srv.peerName(sr.Peer()), RPCID: sr.ID(), RecoveryFromNs: driver.UnixNs(sr.RecoveryFrom())}
		})
	})
}

// server is one host's server on one transport: what answer needs of it
// for every request, found once (a collective's server answers a request
// a step message).
type server struct {
	h  *simnet.Node
	tr string
	// addr is the server's ip:port as served.csv writes it.
	addr string
	// drivers are the host's drivers on tr (nil: none), found at the first
	// request: the servers start before the drivers are added.
	drivers *driver.Host
	found   bool
	// peer and peerStr are the last client's address and its ip:port as
	// served.csv writes it: a collective's server hears from one or two
	// clients, and formatting the address took an allocation a request.
	peer    netip.AddrPort
	peerStr string
}

// peerName is ap as served.csv writes it.
func (s *server) peerName(ap netip.AddrPort) string {
	if ap != s.peer || s.peerStr == "" {
		s.peer, s.peerStr = ap, ap.String()
	}
	return s.peerStr
}

func (j *job) newServer(h *simnet.Node, tr string) *server {
	return &server{h: h, tr: tr, addr: netip.AddrPortFrom(h.IP, ServerPort).String()}
}

// answer is what server s does with a request it has whole, now: it
// tells the host's drivers, has reply send the answer of the length the
// request asks for (none for a one-way message) and, with bookServed set,
// books it as a served.csv row with the keys reply returns.
func (j *job) answer(s *server, req []byte, length int, reply func(n int) rundir.Served) {
	now := j.epoch.UnixNano() + j.net.Clock().Now()
	if !s.found {
		s.drivers, s.found = j.run.Host(s.h.Name, s.tr), true
	}
	if s.drivers != nil {
		s.drivers.Arrived(req, now)
	}
	n := driver.ResponseLengthOf(req, length)
	if j.oneWay {
		n = 0
	}
	row := &j.served
	*row = reply(n)
	if j.bookServed && !j.closed && j.outErr == nil {
		row.Experiment, row.Transport, row.ServerHost, row.Server = j.name, s.tr, s.h.Name, s.addr
		row.ReqBytes, row.RespBytes, row.ReqNs, row.ReplyNs = int64(length), int64(n), now, now
		j.outErr = j.out.Served(row)
	}
}

// simTransport sends a simulated host's RPCs: on its Homa endpoint or,
// with tcp, its TCP model (driver.Transport).
type simTransport struct {
	j   *job
	h   *simnet.Node
	tcp bool
	// local is the Homa endpoint's client address (ip:port) as records
	// write it, "" with tcp or no endpoint: made once, not per RPC.
	local string
}

// newSimTransport is host h's transport, h started.
func (j *job) newSimTransport(h *simnet.Node, tcp bool) simTransport {
	st := simTransport{j: j, h: h, tcp: tcp}
	if ep := h.Endpoint(); ep != nil && !tcp {
		st.local = netip.AddrPortFrom(h.IP, ep.Config().ClientPort).String()
	}
	return st
}

func (st simTransport) Call(row *rundir.RPC, target driver.Target, req []byte, end func(driver.Result)) {
	j, h := st.j, st.h
	if st.local != "" {
		row.Local = st.local
	}
	if t := h.TCP(); t != nil && st.tcp {
		t.Call(j.net.Clock().Now(), target.Addr, req, func(res tcpmodel.Result, err error) {
			r := driver.Result{Err: err, Retries: int64(res.Retrans), ReqOffset: res.ReqOffset, RespOffset: res.RespOffset}
			if res.Local.IsValid() {
				r.Local = res.Local.String()
			}
			at := func(ns int64) int64 {
				if ns == 0 {
					return 0
				}
				return j.epoch.Add(time.Duration(ns)).UnixNano()
			}
			if err != nil {
				r.Reason = "refused"
			} else {
				r.ReqOutNs, r.FirstRespNs = at(res.ReqOut), at(res.FirstResp)
				r.RespBytes, r.DoneNs = int64(res.RespBytes), at(res.Done)
			}
			end(r)
		})
		return
	}
	ended := func(resp []byte, info homa.CallInfo, err error) {
		r := driver.Result{Err: err, ID: info.ID, Retries: int64(info.Retries()),
			ReqOutNs: driver.UnixNs(info.RequestSent), FirstRespNs: driver.UnixNs(info.FirstResponse), RecoveryFromNs: driver.UnixNs(info.RecoveryFrom),
			GrantsIn: int64(info.GrantsReceived), GrantsOut: int64(info.GrantsSent)}
		if err != nil {
			r.Reason = homa.Reason(err)
		} else {
			r.RespBytes, r.DoneNs = int64(info.RespLength), driver.UnixNs(info.Done)
		}
		end(r)
	}
	if j.oneWay {
		h.Send(target.Addr, req, func(info homa.CallInfo, err error) { ended(nil, info, err) })
		return
	}
	h.Call(target.Addr, req, ended)
}

// LendBuffer lends every host's step messages one zeroed buffer
// (driver.BufferLender): the endpoints copy the header, what they keep of
// a message (headBytes), when they take it. The TCP model holds a
// request until it is delivered: it is lent none.
func (st simTransport) LendBuffer(n int) []byte {
	if st.tcp {
		return nil
	}
	j := st.j
	if len(j.lent) < n {
		j.lent = make([]byte, n)
	}
	return j.lent[:n]
}
