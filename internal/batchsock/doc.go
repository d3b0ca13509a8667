// Package batchsock reads and writes datagrams in batches, one recvmmsg or
// sendmmsg per batch, on a non-blocking socket parked in Go's netpoller: the
// switch's AF_PACKET ports (p4/dataplane) and the Homa hosts' raw IPv4
// sockets (hostagent/homa) share it.
//
// A Batch is the one batch shape: a fixed number of slots, each a buffer
// and, on IPv4 sockets, the peer's address (and the TOS to send with). Its
// vectors are built once, so reading and writing allocate nothing. The
// system calls are raw (MSG_DONTWAIT never blocks): unix.Syscall6 would
// tell the Go scheduler the call may block, which wakes the runtime's
// monitor thread after every idle spell, a context switch per burst on a
// shared machine.
//
// A Conn may be read by one goroutine, polled with TryRead by another and
// written by a third at the same time, each with a Batch of its own.
package batchsock
