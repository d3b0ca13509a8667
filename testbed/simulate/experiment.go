package simulate

import (
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"time"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
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
	hosts          []driver.Config
	servers        map[string]bool
	warmup, length time.Duration
	drain          time.Duration
	epoch          time.Time // wall time of virtual time 0
	log            *slog.Logger

	// pending are the issued RPCs' records in the order issued, from the
	// oldest not yet final (a driver.Sink, with books); each leading
	// final one goes to out at once, so that a long experiment holds only
	// the records of its open RPCs and those issued after them.
	pending []*rundir.RPC
	books   rundir.Books
	out     Records
	outErr  error
	// counters are the hosts' transport counters at the end, merged, and
	// hostCounters each one's.
	counters     map[string]uint64
	hostCounters []rundir.HostCounters
	// bookServed sends the servers' answers to out; servedBy counts each
	// TCP model server's.
	bookServed bool
	servedBy   map[string]uint64
	drivers    map[string]*driver.Host
	closed     bool // books closed: later callbacks are the shutdown's
	// oneWay sends the clients' requests as one-way messages: a server
	// answers none, and each ends as its receiver has it whole (the
	// receiver tells the sender's endpoint, free on the wire).
	oneWay bool
	byIP   map[netip.Addr]*simnet.Node
	// shared holds the collectives' targets and matrices, parsed once for
	// all their members (nil: each member parses its own).
	shared *driver.Shared
}

// hostConfig is host's workload as its agent would get it (client w, nil
// for none, and its parts in collectives), with the client's bounds those
// of the job.
func (j *job) hostConfig(host, phase string, w *agentpb.Workload, colls []*agentpb.Collective) (driver.Config, error) {
	c := driver.Config{Experiment: j.name, Transport: j.transport, Phase: phase, Host: host, Log: j.log}
	if w != nil {
		spec, err := driver.ParseWorkload(w)
		if err != nil {
			return c, fmt.Errorf("%s: %w", host, err)
		}
		// In nanoseconds, where the workload has milliseconds.
		spec.Duration, spec.Warmup = j.length, j.warmup
		for i, t := range spec.Targets {
			if n := j.byIP[t.Addr.Addr()]; n != nil {
				spec.Targets[i].Host = n.Name
			}
		}
		c.Client = spec
	}
	for i, pc := range colls {
		cs, err := driver.ParseCollectiveShared(pc, i, math.MaxInt32, j.shared)
		if err != nil {
			return c, fmt.Errorf("%s: %w", host, err)
		}
		c.Collectives = append(c.Collectives, cs)
	}
	return c, nil
}

// run simulates the job and returns its records: every issued RPC
// completed, failed, or in flight at the end.
func (j *job) run() error {
	clock := j.net.Clock()
	sched := driver.OnQueue(clock, j.epoch.UnixNano())
	var ds []*driver.Host
	j.drivers = map[string]*driver.Host{}
	for i, hc := range j.hosts {
		h := j.net.Node(hc.Host)
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
		if j.servers[hc.Host] {
			if err := j.serve(h, sched); err != nil {
				return err
			}
		}
		d := driver.NewHost(hc, sched, simTransport{j: j, h: h}, j)
		ds = append(ds, d)
		j.drivers[hc.Host] = d
	}
	// Every client, then every matrix, then every collective, so that
	// events due at one instant run in that order.
	for _, d := range ds {
		d.StartClient()
	}
	for _, d := range ds {
		d.StartMatrices()
	}
	for _, d := range ds {
		d.StartCollectives()
	}
	busy, open := func() bool {
		for _, d := range ds {
			if d.Busy() {
				return true
			}
		}
		return false
	}, func() bool {
		for _, d := range ds {
			if d.Open() > 0 {
				return true
			}
		}
		return false
	}
	// Ticks keep the clock's queue from ever emptying, so it runs in steps
	// of a millisecond: to the end, or until every client has issued its
	// last RPC and none is open (a bounded count, as calibration's), then
	// through the drain while RPCs are open.
	end := clock.Now() + j.length.Nanoseconds()
	const step = int64(time.Millisecond)
	for clock.Now() < end && busy() {
		clock.Run(min(end, clock.Now()+step))
	}
	for deadline := end + j.drain.Nanoseconds(); open() && clock.Now() < deadline; {
		clock.Run(min(deadline, clock.Now()+step))
	}
	j.closed = true
	for _, d := range ds {
		d.Close()
	}
	// Every row is final now; one that is not still goes out, as issued.
	for _, row := range j.pending {
		if j.outErr == nil {
			j.outErr = j.out.RPC(row)
		}
	}
	j.pending = nil
	j.counters = map[string]uint64{}
	for _, hc := range j.hosts {
		name := hc.Host
		h := rundir.HostCounters{Host: name, Role: rundir.HostRole(hc.Client != nil, j.servers[name]), Transport: map[string]uint64{}}
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
		j.hostCounters = append(j.hostCounters, h)
		j.net.Node(name).Stop()
	}
	return j.outErr
}

// Issued, Ended and InFlight book the rows (driver.Sink).
func (j *job) Issued(row *rundir.RPC) {
	j.pending = append(j.pending, row)
	j.books.Issued++
}

func (j *job) Ended(row *rundir.RPC) {
	if row.Status == rundir.StatusCompleted {
		j.books.Completed++
	} else {
		j.books.Failed++
	}
	j.flush()
}

func (j *job) InFlight(*rundir.RPC) {
	j.books.InFlight++
	j.flush()
}

// flush sends the leading final rows (the driver sets a row's status as
// it ends or the books close) to out, in the order issued.
func (j *job) flush() {
	n := 0
	for n < len(j.pending) && j.pending[n].Status != "" {
		if j.outErr == nil {
			j.outErr = j.out.RPC(j.pending[n])
		}
		j.pending[n] = nil
		n++
	}
	j.pending = j.pending[n:]
}

// served books one server's answer.
func (j *job) served(row *rundir.Served) {
	if j.outErr == nil {
		j.outErr = j.out.Served(row)
	}
}

// arrived tells host's drivers of a request its server has whole.
func (j *job) arrived(host string, req []byte, s driver.Scheduler) {
	if d := j.drivers[host]; d != nil {
		d.Arrived(req, s.Now())
	}
}

// serve answers every request to ServerPort with the response length it
// asks for, at once: the simulated server takes no time. With bookServed set,
// each answer is booked as a served.csv row.
func (j *job) serve(h *simnet.Node, s driver.Scheduler) error {
	var zeros []byte
	local := netip.AddrPortFrom(h.IP, ServerPort).String()
	if t := h.TCP(); t != nil {
		if j.servedBy == nil {
			j.servedBy = map[string]uint64{}
		}
		return t.Serve(ServerPort, func(sr *tcpmodel.ServerRPC) {
			j.arrived(h.Name, sr.Req, s)
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
				j.served(&rundir.Served{Experiment: j.name, Transport: j.transport, ServerHost: h.Name,
					Server: local, Client: sr.Peer.String(), ReqBytes: int64(len(sr.Req)), RespBytes: int64(n),
					ReqNs: at, ReplyNs: at, ReqOffset: sr.ReqOffset, RespOffset: sr.RespOffset})
			}
		})
	}
	return h.Serve(ServerPort, func(sr *homa.ServerRPC) {
		j.arrived(h.Name, sr.Request(), s)
		n := driver.ResponseLength(sr.Request())
		if j.oneWay {
			n = 0
		}
		if len(zeros) < n {
			zeros = make([]byte, n)
		}
		if j.bookServed && !j.closed {
			now := j.epoch.Add(time.Duration(j.net.Clock().Now())).UnixNano()
			j.served(&rundir.Served{Experiment: j.name, Transport: j.transport, ServerHost: h.Name,
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

// simTransport sends a simulated host's RPCs: on its Homa endpoint or its
// TCP model (driver.Transport).
type simTransport struct {
	j *job
	h *simnet.Node
}

func (st simTransport) Call(row *rundir.RPC, target driver.Target, req []byte, end func(driver.Result)) {
	j, h := st.j, st.h
	if h.Endpoint() != nil {
		row.Local = netip.AddrPortFrom(h.IP, h.Endpoint().Config().ClientPort).String()
	}
	if t := h.TCP(); t != nil {
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
			r.RespBytes, r.DoneNs = int64(len(resp)), unixNs(info.Done)
		}
		end(r)
	}
	if j.oneWay {
		h.Send(target.Addr, req, func(info homa.CallInfo, err error) { ended(nil, info, err) })
		return
	}
	h.Call(target.Addr, req, ended)
}

func unixNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
