// Package controller is homatb's ToR fabric controller: it turns a rack
// description (Topology) and a priority policy (Policy) into the table
// entries of every tor.p4 switch, programs and verifies them, syncs them
// when the policy changes, applies BMv2 queue settings, and samples the
// switches' queue counters and registers while an experiment runs (Poller).
//
// The P4Runtime work itself (connect, arbitrate, push a pipeline, read and
// write entities by name) is done by package p4rtclient; the shape of the
// per-(port, queue) state comes from package p4.
package controller
