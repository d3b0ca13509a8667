package dataplane

import (
	"testing"
	"time"

	"github.com/homatb/homatb/wire"
)

// pauseFrame is a PFC PAUSE frame from a peer for the classes in vec, each
// with quanta q.
func pauseFrame(vec uint8, q uint16) []byte {
	var quanta [NumQueues]uint16
	for c := range NumQueues {
		if vec&(1<<c) != 0 {
			quanta[c] = q
		}
	}
	f := make([]byte, pfcFrameLen)
	wire.PutPFCFrame(f, [6]byte{0x02, 0, 0, 0, 0, 0x99}, vec, &quanta)
	return f
}

// TestPFCPausesUpstreamAndResumes: port 2's peer pauses priority 3, so the
// frames port 1 receives at priority 3 stay queued; at XOFF (4) the switch
// sends a PAUSE out of port 1, and once port 2's peer resumes and the
// queue drains below XON (1) a resume. Nothing is lost, and the counters
// say who paused whom and for how long.
func TestPFCPausesUpstreamAndResumes(t *testing.T) {
	r := startRig(t, func(c *Config) {
		c.PFC = PFC{Priorities: 1 << 3, XoffPkts: 4, XonPkts: 1}
		c.Unshaped, c.LinkRateBps = false, 100e6 // a full PAUSE lasts 335 ms
	})
	r.ports[2].in <- pauseFrame(1<<3, PFCQuantaMax)
	time.Sleep(20 * time.Millisecond) // the PAUSE is obeyed before the data comes
	const n = 6
	for i := range n {
		r.ports[1].in <- makeFrame(100, 2, 3, uint32(i))
	}
	r.ports[1].in <- makeFrame(100, 2, 5, 99) // another priority is not paused
	if got := r.recvN(t, 2, 1); frameSeq(got[0]) != 99 {
		t.Fatalf("port 2 sent frame %d first, want the priority-5 frame", frameSeq(got[0]))
	}
	up := r.recvN(t, 1, 1)[0]
	vec, quanta, ok := wire.ParsePFCFrame(up)
	if !ok || vec != 1<<3 || quanta[3] != PFCQuantaMax {
		t.Fatalf("port 1 sent %x, want a PAUSE of priority 3", up)
	}
	select {
	case f := <-r.ports[2].out:
		t.Fatalf("paused port 2 sent frame %d", frameSeq(f))
	case <-time.After(20 * time.Millisecond):
	}
	r.ports[2].in <- pauseFrame(1<<3, 0)
	got := r.recvN(t, 2, n)
	for i, f := range got {
		if frameSeq(f) != uint32(i) {
			t.Errorf("frame %d is %d: want FIFO order", i, frameSeq(f))
		}
	}
	vec, quanta, ok = wire.ParsePFCFrame(r.recvN(t, 1, 1)[0])
	if !ok || vec != 1<<3 || quanta[3] != 0 {
		t.Fatalf("port 1's second frame: vector %08b quanta %d, want a resume of priority 3", vec, quanta[3])
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	s := r.d.Stats()
	q1, q2 := s.Ports[0].Queues[3], s.Ports[1].Queues[3]
	if q1.PFCPausesSent != 1 || q1.PFCResumesSent != 1 || q2.PFCPausesRecv != 1 || q2.PFCResumesRecv != 1 {
		t.Errorf("port 1 sent %d pauses %d resumes, port 2 received %d and %d; want 1 each",
			q1.PFCPausesSent, q1.PFCResumesSent, q2.PFCPausesRecv, q2.PFCResumesRecv)
	}
	if q2.PFCPausedNs < uint64(20*time.Millisecond) || q2.PFCPausedNs > uint64(5*time.Second) {
		t.Errorf("port 2 queue 3 paused %v, want at least the 20 ms it held frames", time.Duration(q2.PFCPausedNs))
	}
	if q2.DropPkts != 0 || q2.SentPkts != n {
		t.Errorf("port 2 queue 3 dropped %d sent %d, want 0 and %d", q2.DropPkts, q2.SentPkts, n)
	}
}

// TestPFCPauseExpires: a PAUSE's quanta run out without a resume.
func TestPFCPauseExpires(t *testing.T) {
	r := startRig(t, func(c *Config) {
		c.PFC = PFC{Priorities: 1 << 3, XoffPkts: 100, XonPkts: 50}
		c.Unshaped, c.LinkRateBps = false, 1e9
	})
	// 5859 quanta of 512 bit times at 1 Gbit/s: 3 ms.
	r.ports[2].in <- pauseFrame(1<<3, 5859)
	// The data frame must come after the PAUSE took effect: on a loaded
	// machine port 2's reader may see it later than a fixed sleep allows.
	for deadline := time.Now().Add(time.Second); r.d.Stats().Ports[1].Queues[3].PFCPausesRecv == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the PAUSE was not received within 1 s")
		}
		time.Sleep(100 * time.Microsecond)
	}
	start := time.Now()
	r.ports[1].in <- makeFrame(100, 2, 3, 1)
	r.recvN(t, 2, 1)
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("frame waited %v for a 3 ms pause", waited)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	q := r.d.Stats().Ports[1].Queues[3]
	if q.PFCPausedNs < uint64(2900*time.Microsecond) || q.PFCPausedNs > uint64(3100*time.Microsecond) {
		t.Errorf("paused %v, want the pause's 3 ms", time.Duration(q.PFCPausedNs))
	}
}

func TestPFCConfigChecked(t *testing.T) {
	for _, p := range []PFC{{Priorities: 8, XoffPkts: 0}, {Priorities: 8, XoffPkts: 4, XonPkts: 4}} {
		if _, err := (Config{Ports: map[uint16]string{1: "a"}, PFC: p}).withDefaults(); err == nil {
			t.Errorf("PFC %+v accepted", p)
		}
	}
}

// TestPFCHeadroom: lossless queues hold their headroom beyond the depth,
// the others do not.
func TestPFCHeadroom(t *testing.T) {
	c := Config{QueueDepthPkts: 64, PFC: PFC{Priorities: 1<<3 | 1<<4, XoffPkts: 8, XonPkts: 4, HeadroomPkts: 100}}
	for q, want := range []int{64, 64, 64, 164, 164, 64, 64, 64} {
		if got := c.queueLimitPkts(1, q); got != want {
			t.Errorf("queue %d holds %d packets, want %d", q, got, want)
		}
	}
}
