package tcprpc

import (
	"bufio"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// pipeConn is a client conn over net.Pipe with a fake retransmission
// counter, and the far end for the test to play the server.
type pipeConn struct {
	cn      *conn
	counter atomic.Uint64
	far     net.Conn
	farW    *bufio.Writer
	reqs    chan int // lengths of the requests the far end read
}

func newPipeConn(t *testing.T, start uint64) *pipeConn {
	t.Helper()
	near, far := net.Pipe()
	p := &pipeConn{far: far, farW: bufio.NewWriter(far), reqs: make(chan int, 16)}
	p.counter.Store(start)
	var closed atomic.Uint64
	p.cn = newConn(near, p.counter.Load, func(error) {}, &closed)
	go func() {
		br := bufio.NewReader(far)
		for {
			n, err := readHeader(br)
			if err == nil {
				_, err = br.Discard(n)
			}
			if err != nil {
				close(p.reqs)
				return
			}
			p.reqs <- n
		}
	}()
	t.Cleanup(func() { far.Close(); p.cn.close(net.ErrClosed) })
	return p
}

// send queues a request and waits until the far end has read it.
func (p *pipeConn) send(t *testing.T, n int) *pendingCall {
	t.Helper()
	pc, err := p.cn.send(make([]byte, n))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-p.reqs:
		if got != n {
			t.Fatalf("far end read a %d-byte request, want %d", got, n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("request never reached the far end")
	}
	return pc
}

// respond writes one response and waits for the call it completes.
func (p *pipeConn) respond(t *testing.T, pc *pendingCall) result {
	t.Helper()
	if err := writeMessage(p.farW, make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	if err := p.farW.Flush(); err != nil {
		t.Fatal(err)
	}
	return wait(t, pc)
}

func wait(t *testing.T, pc *pendingCall) result {
	t.Helper()
	select {
	case r := <-pc.done:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("call never completed")
		return result{}
	}
}

// TestRetransAttribution walks the per-RPC retransmission bookkeeping
// through idle, pipelined and failed calls with a counter the test moves.
func TestRetransAttribution(t *testing.T) {
	p := newPipeConn(t, 5) // retransmissions before the first RPC: the dial's
	a := p.send(t, 10)
	p.counter.Add(2) // while only A is outstanding
	b := p.send(t, 20)
	p.counter.Add(1) // while A and B are both outstanding
	if r := p.respond(t, a); r.err != nil || r.retrans != 3 {
		t.Errorf("A: %+v, want 3 retransmissions (2 alone, 1 shared with B)", r)
	}
	if r := p.respond(t, b); r.err != nil || r.retrans != 1 {
		t.Errorf("B: %+v, want the 1 retransmission after it was sent", r)
	}
	// Sent on an idle connection, C's base is the count read at B's
	// response, with no system call.
	c := p.send(t, 30)
	p.counter.Add(2)
	if r := p.respond(t, c); r.err != nil || r.retrans != 2 {
		t.Errorf("C: %+v, want 2", r)
	}
	if r := p.respond(t, p.send(t, 1)); r.retrans != 0 {
		t.Errorf("an RPC during which nothing was retransmitted: %+v, want 0", r)
	}
	d := p.send(t, 40)
	p.counter.Add(4)
	p.cn.close(errors.New("test: connection reset"))
	if r := wait(t, d); r.err == nil || r.retrans != 4 {
		t.Errorf("D on a failed connection: %+v, want an error and 4 retransmissions", r)
	}
	// A counter that cannot be read (0) gives 0, not a wrapped difference.
	if got := retransSince(7, 0); got != 0 {
		t.Errorf("retransSince(7, 0) = %d, want 0", got)
	}
}
