package simulate

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/homatb/homatb/hostagent/agent"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/simnet"
	"github.com/homatb/homatb/simnet/tcpmodel"
	"github.com/homatb/homatb/workloads"
)

// job is one simulated experiment: who runs what on a fresh network, for
// how long in virtual time.
type job struct {
	name, transport string
	net             *simnet.Network
	cfg             homaconf.Config
	// tcp, when set, runs the TCP model on the hosts instead of Homa
	// (kernel-TCP transports: tcp, pias).
	tcp *tcpmodel.Config
	// nicPrio: the TCP model's hosts queue by DSCP class in their NICs
	// (tcp.nic_priorities).
	nicPrio        bool
	clients        []client
	servers        map[string]bool
	used           []string // hosts taking part, in layout order
	warmup, length time.Duration
	drain          time.Duration
	epoch          time.Time // wall time of virtual time 0
	log            *slog.Logger

	rows  []rundir.RPC
	books rundir.Books
	// counters are the hosts' transport counters at the end, merged, and
	// hosts each one's.
	counters map[string]uint64
	hosts    []rundir.HostCounters
	// served are the servers' answers when bookServed; servedBy counts
	// each TCP model server's.
	served     []rundir.Served
	bookServed bool
	servedBy   map[string]uint64
	// open are the issued RPCs not yet ended, by their row's index;
	// issuing counts the clients (closed-loop workers) still issuing.
	open    map[int]bool
	issuing int
	// colls are the hosts' parts in collectives; arrived tells them of
	// each request a server receives.
	colls   []*simColl
	mats    []*simMatrix
	arrived func(host string, req []byte)
	closed  bool // books closed: later callbacks are the shutdown's
	// oneWay sends the clients' requests as one-way messages: a server
	// answers none, and each ends as its receiver has it whole (the
	// receiver tells the sender's endpoint, free on the wire).
	oneWay bool
	byIP   map[netip.Addr]*simnet.Node
}

// run simulates the job and returns its records: every issued RPC
// completed, failed, or in flight at the end.
func (j *job) run() error {
	j.open = map[int]bool{}
	j.byIP = map[netip.Addr]*simnet.Node{}
	for _, h := range j.net.Nodes() {
		j.byIP[h.IP] = h
	}
	clock := j.net.Clock()
	for i, name := range j.used {
		h := j.net.Node(name)
		var err error
		if j.tcp != nil {
			if err = h.StartTCP(*j.tcp); err == nil && j.nicPrio {
				err = h.PrioritizeNIC()
			}
		} else {
			err = h.Start(j.cfg, uint64(i+1)<<40, j.epoch, j.log)
		}
		if err != nil {
			return err
		}
		if j.servers[name] {
			if err := j.serve(h); err != nil {
				return err
			}
		}
	}
	end := clock.Now() + j.length.Nanoseconds()
	start := clock.Now()
	for k := range j.clients {
		j.startClient(&j.clients[k], start)
	}
	j.startCollectives(start)
	// Ticks keep the clock's queue from ever emptying, so it runs in steps
	// of a millisecond: to the end, or until every client has issued its
	// last RPC and none is open (a bounded count, as calibration's), then
	// through the drain while RPCs are open.
	const step = int64(time.Millisecond)
	for clock.Now() < end && (j.issuing > 0 || len(j.open) > 0) {
		clock.Run(min(end, clock.Now()+step))
	}
	for deadline := end + j.drain.Nanoseconds(); len(j.open) > 0 && clock.Now() < deadline; {
		clock.Run(min(deadline, clock.Now()+step))
	}
	j.closed = true
	for i := range j.open {
		j.rows[i].Status = rundir.StatusInflight
		j.books.InFlight++
	}
	j.counters = map[string]uint64{}
	isClient := map[string]bool{}
	for _, c := range j.clients {
		isClient[c.host] = true
	}
	for _, name := range j.used {
		h := rundir.HostCounters{Host: name, Role: rundir.HostRole(isClient[name], j.servers[name]), Transport: map[string]uint64{}}
		if t := j.net.Node(name).TCP(); t != nil {
			h.Served = j.servedBy[name]
			for k, v := range t.Stats().Map() {
				h.Transport["tcpmodel_"+k] = v // a model's, not the kernel's tcp_ counters
			}
		} else {
			st := j.net.Node(name).Endpoint().Stats()
			h.Served = st.Served
			for k, v := range st.Map() {
				h.Transport["homa_"+k] = v // as the agent names them
			}
		}
		rundir.MergeCounters(j.counters, h.Transport)
		j.hosts = append(j.hosts, h)
		j.net.Node(name).Stop()
	}
	return nil
}

// serve answers every request to ServerPort with the response length it
// asks for, at once: the simulated server takes no time. With served set,
// each answer is booked as a served.csv row.
func (j *job) serve(h *simnet.Node) error {
	var zeros []byte
	local := netip.AddrPortFrom(h.IP, ServerPort).String()
	if t := h.TCP(); t != nil {
		if j.servedBy == nil {
			j.servedBy = map[string]uint64{}
		}
		return t.Serve(ServerPort, func(sr *tcpmodel.ServerRPC) {
			if j.arrived != nil {
				j.arrived(h.Name, sr.Req)
			}
			n := agent.ResponseLength(sr.Req)
			j.servedBy[h.Name]++
			now := j.net.Clock().Now()
			if j.oneWay {
				n = 0
				_ = t.Delivered(now, sr) // fails only when replied twice
			} else {
				_ = t.Reply(now, sr, n)
			}
			if j.bookServed && !j.closed {
				at := j.epoch.Add(time.Duration(now)).UnixNano()
				j.served = append(j.served, rundir.Served{Experiment: j.name, Transport: j.transport, ServerHost: h.Name,
					Server: local, Client: sr.Peer.String(), ReqBytes: int64(len(sr.Req)), RespBytes: int64(n),
					ReqNs: at, ReplyNs: at, ReqOffset: sr.ReqOffset, RespOffset: sr.RespOffset})
			}
		})
	}
	return h.Serve(ServerPort, func(sr *homa.ServerRPC) {
		if j.arrived != nil {
			j.arrived(h.Name, sr.Request())
		}
		n := agent.ResponseLength(sr.Request())
		if j.oneWay {
			n = 0
		}
		if len(zeros) < n {
			zeros = make([]byte, n)
		}
		if j.bookServed && !j.closed {
			now := j.epoch.Add(time.Duration(j.net.Clock().Now())).UnixNano()
			j.served = append(j.served, rundir.Served{Experiment: j.name, Transport: j.transport, ServerHost: h.Name,
				Server: local, Client: sr.Peer().String(), RPCID: sr.ID(), ReqBytes: int64(len(sr.Request())),
				RespBytes: int64(n), ReqNs: now, ReplyNs: now, RecoveryFromNs: unixNs(sr.RecoveryFrom())})
		}
		if j.oneWay {
			_ = h.Drop(sr) // fails only when replied twice
			if c := j.byIP[sr.Peer().Addr()]; c != nil {
				c.Delivered(sr.ID())
			}
			return
		}
		_ = h.Reply(sr, zeros[:n]) // fails only for an RPC its client gave up
	})
}

// startClient schedules client c's RPCs from start: open loops at their
// drawn times (held back while max_outstanding are out), closed loops one
// per worker, each issuing the next when its last ends.
func (j *job) startClient(c *client, start int64) {
	clock := j.net.Clock()
	h := j.net.Node(c.host)
	req := agent.RequestBuffer(c.sizes.Max(), c.respBytes)
	limit := j.length
	var issued uint64
	if c.schedule == nil {
		for w := range c.outstanding {
			draws := workloads.NewClosedLoop(c.seed, w, c.sizes, len(c.targets))
			j.issuing++
			var next func()
			next = func() {
				off := time.Duration(clock.Now() - start)
				if off >= limit || j.closed || (c.maxRPCs > 0 && issued >= c.maxRPCs) {
					j.issuing--
					return
				}
				issued++
				size, ti := draws.Next()
				j.call(h, c, ti, req[:size], clock.Now(), j.phaseAt(c, off), next)
			}
			clock.At(start, next)
		}
		return
	}
	draws := workloads.NewOpenLoop(c.seed, c.schedule, c.sizes, len(c.targets))
	var waiting []func() // RPCs due while max_outstanding were out
	out := 0
	done := func() {
		out--
		if len(waiting) > 0 {
			w := waiting[0]
			waiting = waiting[1:]
			w()
		}
	}
	j.issuing++
	var next func()
	next = func() {
		off, size, ti := draws.Next()
		if off >= limit || (c.maxRPCs > 0 && issued >= c.maxRPCs) {
			j.issuing--
			return
		}
		issued++
		at := start + off.Nanoseconds()
		clock.At(at, func() {
			issue := func() {
				out++
				j.call(h, c, ti, req[:size], at, j.phaseAt(c, off), done)
			}
			if c.outstanding > 0 && out >= c.outstanding {
				waiting = append(waiting, issue)
			} else {
				issue()
			}
			next()
		})
	}
	next()
}

func (j *job) phaseAt(c *client, off time.Duration) string {
	if off < j.warmup {
		return rundir.PhaseWarmup
	}
	return c.phase
}

// call issues one RPC of c's to target ti and books it; then runs after
// it ends.
func (j *job) call(h *simnet.Node, c *client, ti int, req []byte, intended int64, phase string, then func()) {
	target := c.targets[ti]
	j.send(h, rundir.RPC{Experiment: j.name, Transport: j.transport, Phase: phase, Client: c.host,
		Server: target.String(), ServerHost: c.targetHosts[ti], ReqBytes: int64(len(req)),
		IntendedNs: j.epoch.Add(time.Duration(intended)).UnixNano()}, target, req, func(bool) {
		if then != nil {
			then()
		}
	})
}

// send issues req from h to target as the RPC row describes, sent now,
// books it and fills its row; then runs after it ends, told whether it
// completed.
func (j *job) send(h *simnet.Node, row rundir.RPC, target netip.AddrPort, req []byte, then func(ok bool)) {
	clock := j.net.Clock()
	row.SentNs = j.epoch.Add(time.Duration(clock.Now())).UnixNano()
	if h.Endpoint() != nil {
		row.Local = netip.AddrPortFrom(h.IP, h.Endpoint().Config().ClientPort).String()
	}
	idx := len(j.rows)
	if t := h.TCP(); t != nil {
		j.rows = append(j.rows, row)
		j.books.Issued++
		j.open[idx] = true
		t.Call(clock.Now(), target, req, func(res tcpmodel.Result, err error) {
			if j.closed {
				return
			}
			delete(j.open, idx)
			r := &j.rows[idx]
			r.Retries = int64(res.Retrans)
			if res.Local.IsValid() {
				r.Local = res.Local.String()
			}
			r.ReqOffset, r.RespOffset = res.ReqOffset, res.RespOffset
			if err != nil {
				r.Status, r.Error, r.Reason = rundir.StatusFailed, err.Error(), "refused"
				j.books.Failed++
			} else {
				at := func(ns int64) int64 {
					if ns == 0 {
						return 0
					}
					return j.epoch.Add(time.Duration(ns)).UnixNano()
				}
				r.ReqOutNs, r.FirstRespNs = at(res.ReqOut), at(res.FirstResp)
				r.Status, r.RespBytes, r.DoneNs = rundir.StatusCompleted, int64(res.RespBytes), at(res.Done)
				j.books.Completed++
			}
			then(err == nil)
		})
		return
	}
	j.rows = append(j.rows, row)
	j.books.Issued++
	j.open[idx] = true
	ended := func(resp []byte, info homa.CallInfo, err error) {
		if j.closed {
			return
		}
		delete(j.open, idx)
		r := &j.rows[idx]
		r.RPCID, r.Retries = info.ID, int64(info.Retries())
		r.ReqOutNs, r.FirstRespNs, r.RecoveryFromNs = unixNs(info.RequestSent), unixNs(info.FirstResponse), unixNs(info.RecoveryFrom)
		r.GrantsIn, r.GrantsOut = int64(info.GrantsReceived), int64(info.GrantsSent)
		if err != nil {
			r.Status, r.Error, r.Reason = rundir.StatusFailed, err.Error(), homa.Reason(err)
			j.books.Failed++
		} else {
			r.Status, r.RespBytes, r.DoneNs = rundir.StatusCompleted, int64(len(resp)), unixNs(info.Done)
			j.books.Completed++
		}
		then(err == nil)
	}
	if j.oneWay {
		h.Send(target, req, func(info homa.CallInfo, err error) { ended(nil, info, err) })
		return
	}
	h.Call(target, req, ended)
}

func unixNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
