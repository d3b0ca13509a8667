package simulate

import (
	"log/slog"
	"net/netip"
	"slices"
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

	// books hand each record to out in the order issued, once final.
	books  *driver.Books
	out    Records
	outErr error
	// counters are each host's books and transport counters at the end
	// (nil until then), perHost its books as they go.
	counters map[string]*agentpb.Counters
	perHost  map[string]*hostBooks
	mu       sync.Mutex // the agents call at once: Configure, Stop
	// bookServed sends the servers' answers to out; servedBy counts each
	// TCP model server's.
	bookServed bool
	servedBy   map[string]uint64
	drivers    map[string]*driver.Host
	ds         []*driver.Host
	started    map[string]bool
	end        int64 // virtual time the duration ends
	closed     bool  // books closed: later callbacks are the shutdown's
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

	// zeros are every simulated server's responses, shared: the
	// endpoints copy only a message's first bytes (headBytes); lent is
	// the buffer of every step message (simTransport.LendBuffer).
	zeros, lent []byte
}

// start starts every host's drivers and runs the network through the
// warm-up and duration, or until every client has issued its last RPC
// and none is open (a bounded count, as calibration's).
func (j *job) start() error {
	clock := j.net.Clock()
	sched := driver.OnQueue(clock, j.epoch.UnixNano())
	j.books = driver.NewBooks(func(row *rundir.RPC) {
		if j.outErr == nil {
			j.outErr = j.out.RPC(row)
		}
	})
	for _, key := range j.order {
		if hc, ok := j.configured[key]; ok {
			j.hosts = append(j.hosts, hc)
		}
	}
	j.drivers = map[string]*driver.Host{}
	j.started = map[string]bool{} // a shared job's hosts have a driver per transport
	j.perHost = map[string]*hostBooks{}
	for _, hc := range j.hosts {
		h := j.net.Node(hc.Host)
		if !j.started[hc.Host] {
			j.started[hc.Host] = true
			if err := j.startHost(h, len(j.started)); err != nil {
				return err
			}
			if j.servers[hc.Host] {
				if err := j.serve(h, sched); err != nil {
					return err
				}
			}
			j.perHost[hc.Host] = &hostBooks{all: j.books}
		}
		d := driver.NewHost(hc, sched, simTransport{j: j, h: h, tcp: j.onTCP(hc.Transport)}, j.perHost[hc.Host])
		j.ds = append(j.ds, d)
		j.drivers[hc.Host+" "+hc.Transport] = d
	}
	// Every client, then every matrix, then every collective, so that
	// events due at one instant run in that order.
	for _, d := range j.ds {
		d.StartClient()
	}
	for _, d := range j.ds {
		d.StartMatrices()
	}
	for _, d := range j.ds {
		d.StartCollectives()
	}
	// Ticks keep the clock's queue from ever emptying, so it runs in steps
	// of a millisecond.
	j.end = clock.Now() + j.length.Nanoseconds()
	for clock.Now() < j.end && slices.ContainsFunc(j.ds, (*driver.Host).Busy) {
		clock.Run(min(j.end, clock.Now()+stepNs))
	}
	return nil
}

const stepNs = int64(time.Millisecond)

// finish runs the network through drain while RPCs are open, closes the
// books and counts each host's transport; once, whoever asks first (the
// agents' Stop calls come at once).
func (j *job) finish(drain time.Duration) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.counters != nil {
		return j.outErr
	}
	if j.books == nil { // a calibration's, run whole at its client's Status
		if err := j.start(); err != nil {
			return err
		}
	}
	clock := j.net.Clock()
	open := func(d *driver.Host) bool { return d.Open() > 0 }
	for deadline := j.end + drain.Nanoseconds(); slices.ContainsFunc(j.ds, open) && clock.Now() < deadline; {
		clock.Run(min(deadline, clock.Now()+stepNs))
	}
	j.closed = true
	for _, d := range j.ds {
		d.Close()
	}
	j.books.Close() // every row is final now; one that is not still goes out
	if j.outErr == nil {
		j.outErr = j.out.Close()
	}
	j.counters = map[string]*agentpb.Counters{}
	for _, hc := range j.hosts {
		name := hc.Host
		if j.counters[name] != nil {
			continue // a shared job's host, counted at its first driver
		}
		b := j.perHost[name].c
		c := &agentpb.Counters{Issued: b.Issued, Completed: b.Completed, Failed: b.Failed, InFlight: b.InFlight, Transport: map[string]uint64{}}
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

// hostBooks counts one host's RPCs and keeps them in the job's books,
// which hand out every host's rows in the order issued.
type hostBooks struct {
	all *driver.Books
	c   rundir.Books
}

func (b *hostBooks) Issued(row *rundir.RPC) {
	b.c.Issued++
	b.all.Issued(row)
}

func (b *hostBooks) Ended(row *rundir.RPC) {
	if row.Status == rundir.StatusCompleted {
		b.c.Completed++
	} else {
		b.c.Failed++
	}
	b.all.Ended(row)
}

func (b *hostBooks) InFlight(row *rundir.RPC) {
	b.c.InFlight++
	b.all.InFlight(row)
}

// served books one server's answer.
func (j *job) served(row *rundir.Served) {
	if j.outErr == nil {
		j.outErr = j.out.Served(row)
	}
}

// arrived tells host's drivers of a request its server on transport tr
// has whole.
func (j *job) arrived(host, tr string, req []byte, s driver.Scheduler) {
	if d := j.drivers[host+" "+tr]; d != nil {
		d.Arrived(req, s.Now())
	}
}

// serve answers every request to ServerPort with the response length it
// asks for, at once: the simulated server takes no time. With bookServed set,
// each answer is booked as a served.csv row.
func (j *job) serve(h *simnet.Node, s driver.Scheduler) error {
	local := netip.AddrPortFrom(h.IP, ServerPort).String()
	if t := h.TCP(); t != nil {
		if j.servedBy == nil {
			j.servedBy = map[string]uint64{}
		}
		tr := j.transportOf(true)
		err := t.Serve(ServerPort, func(sr *tcpmodel.ServerRPC) {
			j.arrived(h.Name, tr, sr.Req, s)
			n := driver.ResponseLength(sr.Req)
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
				j.served(&rundir.Served{Experiment: j.name, Transport: tr, ServerHost: h.Name,
					Server: local, Client: sr.Peer.String(), ReqBytes: int64(len(sr.Req)), RespBytes: int64(n),
					ReqNs: at, ReplyNs: at, ReqOffset: sr.ReqOffset, RespOffset: sr.RespOffset})
			}
		})
		if err != nil || h.Endpoint() == nil {
			return err
		}
	}
	tr := j.transportOf(false)
	return h.Serve(ServerPort, func(sr *homa.ServerRPC) {
		j.arrived(h.Name, tr, sr.Request(), s)
		n := driver.ResponseLengthOf(sr.Request(), sr.Length())
		if j.oneWay {
			n = 0
		}
		if len(j.zeros) < n {
			j.zeros = make([]byte, n)
		}
		if j.bookServed && !j.closed {
			now := j.epoch.Add(time.Duration(j.net.Clock().Now())).UnixNano()
			j.served(&rundir.Served{Experiment: j.name, Transport: tr, ServerHost: h.Name,
				Server: local, Client: sr.Peer().String(), RPCID: sr.ID(), ReqBytes: int64(sr.Length()),
				RespBytes: int64(n), ReqNs: now, ReplyNs: now, RecoveryFromNs: unixNs(sr.RecoveryFrom())})
		}
		if j.oneWay {
			_ = h.Drop(sr) // fails only when replied twice
			if c := j.byIP[sr.Peer().Addr()]; c != nil {
				c.Delivered(sr.ID())
			}
			return
		}
		_ = h.Reply(sr, j.zeros[:n]) // fails only for an RPC its client gave up
	})
}

// simTransport sends a simulated host's RPCs: on its Homa endpoint or,
// with tcp, its TCP model (driver.Transport).
type simTransport struct {
	j   *job
	h   *simnet.Node
	tcp bool
}

func (st simTransport) Call(row *rundir.RPC, target driver.Target, req []byte, end func(driver.Result)) {
	j, h := st.j, st.h
	if h.Endpoint() != nil && !st.tcp {
		row.Local = netip.AddrPortFrom(h.IP, h.Endpoint().Config().ClientPort).String()
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
			ReqOutNs: unixNs(info.RequestSent), FirstRespNs: unixNs(info.FirstResponse), RecoveryFromNs: unixNs(info.RecoveryFrom),
			GrantsIn: int64(info.GrantsReceived), GrantsOut: int64(info.GrantsSent)}
		if err != nil {
			r.Reason = homa.Reason(err)
		} else {
			r.RespBytes, r.DoneNs = int64(info.RespLength), unixNs(info.Done)
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

func unixNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
