package dataplane

// Port is the frame I/O of one switch port. Recv and Send are each called
// from one goroutine at a time (the port's receiver and its scheduler).
type Port interface {
	// Recv blocks until at least one frame arrives, then fills up to
	// len(bufs) of bufs and sets sizes[i] to each frame's length; a size
	// larger than len(bufs[i]) means the frame was truncated. After Close
	// it returns an error wrapping net.ErrClosed.
	Recv(bufs [][]byte, sizes []int) (int, error)
	// Send transmits frames in order and returns how many were sent.
	Send(frames [][]byte) (int, error)
	// Close releases the port and unblocks Recv.
	Close() error
}
