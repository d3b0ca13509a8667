//go:build linux

package homa

// ListenUDPBatch exposes the UDP variant of RawConn to the benchmarks.
var ListenUDPBatch = listenBatch
