package homa

import "net/netip"

// Packet is one IPv4 payload (a Homa packet) with its peer and TOS byte.
type Packet struct {
	// Buf holds the packet. For reads the Conn fills Buf[:cap(Buf)] and
	// reslices Buf to the bytes received; for writes len(Buf) is sent.
	Buf []byte
	// Addr is the source address on reads and the destination on writes.
	Addr netip.Addr
	// TOS is the IPv4 TOS byte; Homa puts the priority in its top 3 bits.
	TOS uint8
	// Entropy, on writes, is the UDP source port a transport that sprays
	// its packets asks for (uet: the packet's entropy value, which the
	// switches' multipath hash reads); 0, or a Conn that cannot set it
	// per packet, sends from the socket's own port.
	Entropy uint16
	// Pad, on writes, is how many payload bytes follow Buf that the
	// packet stands for but does not carry: the Conn sends a packet of
	// len(Buf)+Pad bytes whose last Pad bytes nobody reads. Only an
	// Endpoint that carries just its messages' first bytes
	// (DrivenConfig.HeadBytes) sets it; the simulator's Conn honours it.
	Pad int
}

// Conn is the packet boundary of an Endpoint: a raw IPv4 protocol-146
// socket or an in-memory network.
type Conn interface {
	// ReadBatch blocks until at least one packet arrives and returns how
	// many of pkts it filled. After Close it returns net.ErrClosed.
	ReadBatch(pkts []Packet) (int, error)
	// WriteBatch sends every packet of pkts, or returns an error.
	WriteBatch(pkts []Packet) error
	// LocalAddr is the address packets are sent from.
	LocalAddr() netip.Addr
	// BatchSize is the largest batch worth passing to ReadBatch/WriteBatch.
	BatchSize() int
	// Close unblocks readers and releases the Conn.
	Close() error
}

// TryReader is a Conn that can also be read without waiting, which lets
// a goroutine waiting for a message fetch it itself (Config.Poll).
type TryReader interface {
	// TryReadBatch is ReadBatch returning 0 at once when nothing is
	// queued. It may run concurrently with a blocked ReadBatch.
	TryReadBatch(pkts []Packet) (int, error)
}

// TOS returns the TOS byte for Homa priority p (0 lowest, 7 highest).
func TOS(p uint8) uint8 { return p << 5 }

// Priority returns the Homa priority carried in a TOS byte.
func Priority(tos uint8) uint8 { return tos >> 5 }

// PauseReader is a Conn that also receives the PFC PAUSE frames (IEEE
// 802.1Qbb, wire.ParsePFCFrame) its link's switch sends, as a NIC does:
// the roce variant stops its data for the priority they name.
type PauseReader interface {
	// ReadPause blocks until a MAC control frame arrives and copies it
	// (from its Ethernet header) into b. After Close it returns an error
	// wrapping net.ErrClosed.
	ReadPause(b []byte) (int, error)
}
