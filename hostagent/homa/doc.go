// Package homa is a user-space implementation of the Homa transport over
// IPv4 protocol 146: blind unscheduled bytes, receiver-driven grants in SRPT
// order with controlled overcommitment, receiver-chosen priorities carried in
// the top three bits of the TOS byte, versioned unscheduled cutoffs, RESEND /
// BUSY / RPC_UNKNOWN loss recovery, at-most-once RPCs with ACKs (or the 2018
// at-least-once mode) and the SIGCOMM 2018 incast optimisation.
//
// An Endpoint owns all Homa traffic of one host. It reads and writes packets
// through a Conn: ListenRaw for a raw socket, or homatest for an in-memory
// network. The protocol state sits behind one mutex, and the goroutine
// with the event (the reader with packets, a caller with its Call or Reply,
// the timer goroutine with a tick) runs the protocol code itself.
package homa
