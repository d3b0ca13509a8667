//go:build linux

package batchsock

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// udpConn opens a UDP socket on 127.0.0.1, connected to peer when peer is
// not 0, and returns it with its port.
func udpConn(t *testing.T, peer uint16, opt Options) (*Conn, uint16) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if peer != 0 {
		if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: int(peer)}); err != nil {
			t.Fatal(err)
		}
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConn(fd, "test", opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, uint16(sa.(*unix.SockaddrInet4).Port)
}

// readAll reads until want datagrams arrived or a second passed, and
// returns their contents and sources.
func readAll(t *testing.T, c *Conn, b *Batch, bufs [][]byte, want int) ([][]byte, [][4]byte) {
	t.Helper()
	var got [][]byte
	var srcs [][4]byte
	deadline := time.Now().Add(time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		for i := range b.Size() {
			b.SetBuf(i, bufs[i])
		}
		n, err := c.TryRead(b, b.Size())
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			got = append(got, bytes.Clone(bufs[i][:b.Len(i)]))
			if b.kind != Frames {
				srcs = append(srcs, b.Src(i))
			}
		}
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return got, srcs
}

func bufsOf(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, size)
	}
	return out
}

// TestIPv4Batches writes batches of datagrams of different lengths to an
// address and reads them back with their source, through partial batches.
func TestIPv4Batches(t *testing.T) {
	rx, rxPort := udpConn(t, 0, Options{})
	tx, txPort := udpConn(t, 0, Options{})
	for _, tt := range []struct {
		name      string
		batch, n  int
		writeKind Kind
	}{
		{"full batch", 8, 8, IPv4TOS},
		{"partial batch", 8, 3, IPv4TOS},
		{"without TOS", 4, 4, IPv4},
		{"one slot", 1, 1, IPv4TOS},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := NewBatch(tt.batch, tt.writeKind)
			var sent [][]byte
			for i := range tt.n {
				d := bytes.Repeat([]byte{byte(i + 1)}, 10+i*100)
				sent = append(sent, d)
				w.SetBuf(i, d)
				w.SetDest(i, [4]byte{127, 0, 0, 1}, rxPort, uint8(i<<5))
			}
			n, err := tx.Write(w, tt.n)
			if err != nil || n != tt.n {
				t.Fatalf("Write: %d, %v; want %d", n, err, tt.n)
			}
			got, srcs := readAll(t, rx, NewBatch(tt.batch, IPv4), bufsOf(tt.batch, 2048), tt.n)
			if len(got) != tt.n {
				t.Fatalf("read %d datagrams, want %d", len(got), tt.n)
			}
			for i := range got {
				if !bytes.Equal(got[i], sent[i]) || srcs[i] != [4]byte{127, 0, 0, 1} {
					t.Errorf("datagram %d: %d bytes from %v, want %d bytes from 127.0.0.1", i, len(got[i]), srcs[i], len(sent[i]))
				}
			}
		})
	}
	if txPort == 0 {
		t.Error("no port")
	}
}

// TestTrunc reads a datagram into a short buffer: with Options.Trunc its
// length is the datagram's, without it the buffer's.
func TestTrunc(t *testing.T) {
	for _, tt := range []struct {
		trunc bool
		want  int
	}{{true, 100}, {false, 10}} {
		rx, rxPort := udpConn(t, 0, Options{Trunc: tt.trunc})
		tx, _ := udpConn(t, rxPort, Options{})
		w := NewBatch(1, Frames)
		w.SetBuf(0, make([]byte, 100))
		if _, err := tx.Write(w, 1); err != nil {
			t.Fatal(err)
		}
		r := NewBatch(1, Frames)
		r.SetBuf(0, make([]byte, 10))
		n, err := rx.Read(r, 1)
		if err != nil || n != 1 || r.Len(0) != tt.want {
			t.Errorf("trunc %v: read %d (%v), length %d; want 1, %d", tt.trunc, n, err, r.Len(0), tt.want)
		}
	}
}

// TestTryReadEmpty: with nothing queued TryRead returns at once, empty.
func TestTryReadEmpty(t *testing.T) {
	rx, _ := udpConn(t, 0, Options{})
	b := NewBatch(4, IPv4)
	for i := range 4 {
		b.SetBuf(i, make([]byte, 64))
	}
	if n, err := rx.TryRead(b, 4); n != 0 || err != nil {
		t.Errorf("TryRead on an empty socket: %d, %v", n, err)
	}
}

// TestCloseWakesRead: Close ends a parked Read with net.ErrClosed.
func TestCloseWakesRead(t *testing.T) {
	rx, _ := udpConn(t, 0, Options{})
	b := NewBatch(1, IPv4)
	b.SetBuf(0, make([]byte, 64))
	done := make(chan error, 1)
	go func() {
		_, err := rx.Read(b, 1)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	rx.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Read still parked after Close")
	}
}

// TestNoAllocs: a batch written and read back allocates nothing.
func TestNoAllocs(t *testing.T) {
	rx, rxPort := udpConn(t, 0, Options{})
	tx, _ := udpConn(t, 0, Options{})
	w, r := NewBatch(8, IPv4TOS), NewBatch(8, IPv4)
	out, in := bufsOf(8, 200), bufsOf(8, 2048)
	allocs := testing.AllocsPerRun(200, func() {
		for i := range 8 {
			w.SetBuf(i, out[i])
			w.SetDest(i, [4]byte{127, 0, 0, 1}, rxPort, 0)
		}
		if _, err := tx.Write(w, 8); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 8; {
			for i := range 8 {
				r.SetBuf(i, in[i])
			}
			n, err := rx.Read(r, 8-got)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per batch written and read", allocs)
	}
}
