// Package p4rtclient is a P4Runtime client for one device: it dials the
// server, keeps an arbitration stream open (and reopens it, re-pushing its
// pipeline and entries, when the switch restarts), pushes a pipeline, and
// reads and writes entities addressed by their P4Info names, encoding
// values as canonical bytestrings and decoding per-update errors.
//
// Nothing in it knows tor.p4: the same code drives BMv2 simple_switch_grpc
// and homatb's embedded target.
package p4rtclient
