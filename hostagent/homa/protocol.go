package homa

import (
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// protocol is the transport an Endpoint runs: how its messages become
// packets and packets messages, when it lets data go and what its timers
// do. The Endpoint chooses one when it is built (newProtocol, from
// homaconf.Config.Variant) and calls it at each entry point; no path of
// the engine asks which one it runs. What every transport shares stays in
// the engine: the RPC API and its records, the peers and server RPCs, the
// Conn and its transmit batch, the pacer's model of the link, the ticks
// and the counters.
//
// Three implement it: homaFamily, Homa's packets (DATA, GRANT, RESEND, ...)
// under one of the policies that tell Homa, pFabric, pHost and NDP apart
// (policy), roceProtocol, RoCEv2 queue pairs (roce.go), and uetProtocol,
// the Ultra Ethernet Transport's packet delivery contexts (uet.go). A transport
// with packets and loss recovery of its own is another implementation and
// another case of newProtocol.
type protocol interface {
	// receive handles one packet that arrived at now.
	receive(now time.Duration, p *Packet)
	// startOut begins sending data as r's outbound message: at most
	// unsched bytes before the receiver lets more go, with DATA's flags.
	startOut(now time.Duration, r *rpc, b body, unsched uint32, flags uint8)
	// send sends what is due at the end of an event: the grants or
	// credits it made due, and the data the pacer and the transport's
	// own rates let go. It reads the clock afresh.
	send()
	// tick runs the transport's timers over its RPCs, once a tick
	// (st.tick already counts it); it returns how many server RPCs the
	// Endpoint holds.
	tick(now time.Duration) (servers int)
	// callDone is told that the Call r ended, with err nil when its
	// response came.
	callDone(r *rpc, err error)
	// encapBytes is what each packet takes on the wire beyond its buffer,
	// the IPv4 header and the frame's overhead (RoCEv2: its UDP header),
	// for the pacer's model of the link.
	encapBytes() int
	// start starts what the transport runs beside the Endpoint's own
	// goroutines on conn (RoCE: the reader of PFC PAUSE frames); a Driven
	// Endpoint does not call it.
	start(conn Conn)
}

// pauseObeyer is a protocol that obeys PFC PAUSE frames for its data's
// priority (RoCE); a simulation hands them to it (Driven.Pause).
type pauseObeyer interface {
	// pausePriority is the priority whose PAUSE frames the data obeys.
	pausePriority() uint
	// pause obeys a PAUSE frame with quanta for that priority that
	// arrived at now (quanta 0: resume).
	pause(now time.Duration, quanta uint16)
}

// newProtocol builds the transport e's configuration names, and the
// Homa family's policy in e's state.
func newProtocol(e *Endpoint) protocol {
	switch e.cfg.Variant {
	case homaconf.VariantRoCE:
		return newRoCE(e)
	case homaconf.VariantUET:
		return newUET(e)
	}
	st := &e.state
	st.pol, st.unsched = newPolicy(e)
	return &homaFamily{e: e}
}

// homaFamily is the protocol of Homa and of the designs the Homa papers
// compare it with: messages as DATA packets at byte offsets, credit by
// GRANT (or the policy's own packets), lost bytes asked for by RESEND,
// restarts on RPC_UNKNOWN and server state freed by ACKs (recv.go,
// send.go, timer.go). Its policy is what tells the designs apart.
type homaFamily struct{ e *Endpoint }

func (h *homaFamily) receive(now time.Duration, p *Packet) { h.e.receiveHoma(now, p) }

func (h *homaFamily) startOut(now time.Duration, r *rpc, b body, unsched uint32, flags uint8) {
	h.e.startMessage(now, r, b, unsched, flags)
}

func (h *homaFamily) send() {
	e := h.e
	if e.state.schedDue {
		e.grantNow()
	}
	e.state.pol.credits()
	e.pumpData(e.now())
}

func (h *homaFamily) tick(now time.Duration) int { return h.e.checkRPCs(now) }

func (h *homaFamily) callDone(*rpc, error) {}

func (h *homaFamily) encapBytes() int { return 0 }

func (h *homaFamily) start(Conn) {}
