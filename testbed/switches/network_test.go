package switches

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRaiseSendBuffers raises the send buffers of this process's own
// packet sockets, as the run does BMv2's, and leaves its other sockets
// alone.
func TestRaiseSendBuffers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: packet sockets and SO_SNDBUFFORCE")
	}
	pkt, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pkt)
	udp, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(udp)
	before, err := unix.GetsockoptInt(udp, unix.SOL_SOCKET, unix.SO_SNDBUF)
	if err != nil {
		t.Fatal(err)
	}
	const want = 8 << 20
	n, err := raiseSendBuffers(os.Getpid(), want)
	if err != nil {
		t.Fatal(err)
	}
	if n < 1 {
		t.Errorf("raised %d sockets, want at least this test's packet socket", n)
	}
	// The kernel doubles what it is given, for its own overhead.
	if got, _ := unix.GetsockoptInt(pkt, unix.SOL_SOCKET, unix.SO_SNDBUF); got != 2*want {
		t.Errorf("packet socket's send buffer %d, want %d", got, 2*want)
	}
	if got, _ := unix.GetsockoptInt(udp, unix.SOL_SOCKET, unix.SO_SNDBUF); got != before {
		t.Errorf("UDP socket's send buffer changed from %d to %d", before, got)
	}
	if _, err := raiseSendBuffers(1<<30, want); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
