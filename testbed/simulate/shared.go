package simulate

import (
	"fmt"
	"time"

	"github.com/homatb/homatb/simnet"
	"github.com/homatb/homatb/testbed/scenario"
)

// hostStacks is what runs on a job's hosts besides its one transport: in
// a shared experiment the engine and the TCP model at once (each driver
// on its own transport's), and the host queue in front of the NIC.
type hostStacks struct {
	shared bool
	// engine and tcp are the names of the shared experiment's transports
	// on the engine and on the TCP model: the records' transport column.
	engine, tcp string
	// qdisc puts simnet's host qdisc in front of every NIC (host_qdisc:
	// pacer).
	qdisc bool
}

// enginePacerOff is the engine's NIC backlog under the host qdisc: longer
// than any run, so its own pacer never holds a packet. HomaModule's Homa
// does the same while homa_qdisc is active (homa_xmit_data skips its old
// pacer when homa_qdisc_active): every granted packet goes to the qdisc,
// which alone paces them and puts them in SRPT order.
const enginePacerOff = time.Hour

// stack sets up job j for experiment e: the host queue host_qdisc asks
// for and, for a shared experiment, both stacks on every host (the
// agents' Configure then adds a driver per host and transport). It
// returns the fidelity notes of the transports on the TCP model.
func (r *Network) stack(j *job, e *scenario.Experiment) ([]string, error) {
	j.stacks.qdisc = e.Scenario.HostQdisc == scenario.HostQdiscPacer
	if !e.Shared() {
		j.pacerAside(e.Transport.Name)
		return nil, nil
	}
	j.stacks.shared = true
	var notes []string
	for k, t := range e.Transports {
		if t.Engine() {
			j.stacks.engine, j.cfg = t.Name, r.homaConfig(t)
			j.pacerAside(t.Name)
			continue
		}
		tcp, err := r.tcpConfig(t)
		if err != nil {
			return nil, err
		}
		j.stacks.tcp, j.tcp, j.nicPrio = t.Name, tcp, t.TCP.NICPriorities
		if k > 0 { // the first transport's note is the experiment's own
			notes = append(notes, modelNote(t, tcp)...)
		}
	}
	if j.stacks.engine != "" && j.stacks.tcp != "" && !j.stacks.qdisc && !j.nicPrio {
		// The model's departure that matters most when the two share a host.
		notes = append(notes, fmt.Sprintf("%s and %s share each host's one FIFO NIC, which every segment the TCP model's window allows enters at once (no TCP Small Queues, no pacing): %s's packets wait behind up to a window of TCP's there; host_qdisc: pacer (or tcp.nic_priorities) separates them",
			j.stacks.engine, j.stacks.tcp, j.stacks.engine))
	}
	return notes, nil
}

// pacerAside lets the host queue alone pace Homa (enginePacerOff) when
// the job has one and transport tr is Homa.
func (j *job) pacerAside(tr string) {
	if j.stacks.qdisc && tr == scenario.TransportHoma {
		j.cfg.MaxNICBacklog = enginePacerOff
	}
}

// onTCP reports whether transport tr's drivers send on the TCP model.
func (j *job) onTCP(tr string) bool {
	if j.tcp == nil {
		return false
	}
	return !j.stacks.shared || tr == j.stacks.tcp
}

// transportOf is the records' transport of the job's TCP model (tcp) or
// engine.
func (j *job) transportOf(tcp bool) string {
	switch {
	case !j.stacks.shared:
		return j.transport
	case tcp:
		return j.stacks.tcp
	}
	return j.stacks.engine
}

// startHost starts what host h runs (the n-th host started): the TCP
// model, the engine, or in a shared job both; then its qdisc.
func (j *job) startHost(h *simnet.Node, n int) error {
	if j.tcp != nil {
		if err := h.StartTCP(*j.tcp); err != nil {
			return err
		}
		if j.nicPrio {
			if err := h.PrioritizeNIC(); err != nil {
				return err
			}
		}
	}
	if j.tcp == nil || j.stacks.shared {
		if err := h.Start(j.cfg, uint64(n)<<40, j.epoch, j.log); err != nil {
			return err
		}
	}
	if j.stacks.qdisc {
		return h.UseQdisc(simnet.QdiscConfig{})
	}
	return nil
}

// qdiscCounters adds host's qdisc counters to its transport counters.
func (j *job) qdiscCounters(host string, into map[string]uint64) {
	if !j.stacks.qdisc {
		return
	}
	st := j.net.Node(host).QdiscStats()
	into["qdisc_passed"] = st.Passed
	into["qdisc_homa_deferred"] = st.HomaDeferred
	into["qdisc_tcp_deferred"] = st.TCPDeferred
	into["qdisc_homa_bytes"] = st.HomaBytes
	into["qdisc_tcp_bytes"] = st.TCPBytes
}
