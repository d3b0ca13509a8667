package homa_test

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
	"github.com/homatb/homatb/wire"
)

// pauseConn is an in-memory Conn that also receives the PAUSE frames a
// test hands it, as a host's link from its switch does.
type pauseConn struct {
	*homatest.Conn
	frames chan []byte
	done   chan struct{}
}

func (c *pauseConn) ReadPause(b []byte) (int, error) {
	select {
	case f := <-c.frames:
		return copy(b, f), nil
	case <-c.done:
		return 0, fmt.Errorf("pause conn: %w", net.ErrClosed)
	}
}

func (c *pauseConn) Close() error {
	close(c.done)
	return c.Conn.Close()
}

func pfcFrame(prio int, quanta uint16) []byte {
	var q [wire.PFCClasses]uint16
	q[prio] = quanta
	f := make([]byte, wire.PFCFrameLen)
	wire.PutPFCFrame(f, [6]byte{2, 0, 0, 0, 0, 1}, 1<<prio, &q)
	return f
}

// TestRoCEObeysPause: a PAUSE for the data's priority stops the queue
// pair's data (a PAUSE for another priority does not) until the resume;
// then the Call completes, and the Endpoint counts the frames and the
// time it stood paused.
func TestRoCEObeysPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := homaconf.Config{Variant: homaconf.VariantRoCE, LinkBps: 1e8}
		network := homatest.NewNetwork(homatest.LinkConfig{Rate: 1e8, Delay: 2 * time.Microsecond})
		defer network.Close()
		server := attach(t, network, serverAddr, cfg)
		srv, err := server.Listen(serverPort)
		if err != nil {
			t.Fatal(err)
		}
		serveEcho(t.Context(), t, srv)
		mc, err := network.NewConn(clientAddr)
		if err != nil {
			t.Fatal(err)
		}
		pc := &pauseConn{Conn: mc, frames: make(chan []byte, 4), done: make(chan struct{})}
		client, err := homa.NewEndpoint(pc, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()

		pc.frames <- pfcFrame(5, wire.PFCQuantaMax) // not RoCE's data priority: ignored
		pc.frames <- pfcFrame(3, wire.PFCQuantaMax) // 335 ms at 100 Mbit/s
		synctest.Wait()
		req := make([]byte, 20_000)
		fill(req, 1)
		done := make(chan error, 1)
		go func() {
			resp, _, err := client.Call(t.Context(), netip.AddrPortFrom(serverAddr, serverPort), req)
			if err == nil && !bytes.Equal(resp, req) {
				err = fmt.Errorf("echo differs")
			}
			done <- err
		}()
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if d := client.Stats().TxPackets[wire.TypeData.Index()][3]; d != 0 {
			t.Fatalf("paused client sent %d data packets", d)
		}
		pc.frames <- pfcFrame(3, 0)
		if err := <-done; err != nil {
			t.Fatalf("call after the resume: %v", err)
		}
		st := client.Stats()
		if st.PausesReceived != 1 || st.ResumesReceived != 1 {
			t.Errorf("pauses %d resumes %d received, want 1 and 1 (priority 5 ignored)", st.PausesReceived, st.ResumesReceived)
		}
		if st.PausedNs < uint64(50*time.Millisecond) || st.PausedNs > uint64(60*time.Millisecond) {
			t.Errorf("paused %v, want the 50 ms before the resume", time.Duration(st.PausedNs))
		}
	})
}
