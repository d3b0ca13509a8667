// Package controller is homatb's P4Runtime controller: a client library for
// one switch (connect, arbitrate, push a pipeline, write and read entities by
// name) and the topology controller that turns a rack description and a
// priority policy into switch state, verifies it, and samples the switch's
// queue counters while an experiment runs.
//
// Everything is addressed by the names in the P4Info; numeric ids are
// resolved through it, so the same code drives BMv2 simple_switch_grpc and
// homatb's embedded target.
package controller
