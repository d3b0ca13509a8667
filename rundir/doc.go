// Package rundir declares every file format of a run directory
// (results/<run>/), once: the orchestrator (testbed), the host agents, the
// controller's telemetry poller and reports all read and write these files
// through the types and functions here, so a writer and a reader cannot
// drift apart without a compile error or a failing round-trip test.
// docs/formats.md describes the same formats for people.
//
//	manifest.json                    Manifest (WriteManifest, ReadManifest)
//	rpcs.csv                         RPCs: one RPC per row
//	telemetry.csv                    Telemetry: switch queues over time (WriteTelemetry)
//	hosts.csv                        Hosts: Homa's gauges per host over time
//	switch/<experiment>/<sw>.json    SwitchStats (package p4/switchstats), differenced
//	switch/<experiment>/<sw>.postcards[.zst]  Postcard: per-packet switch records (ReadPostcards;
//	                                 .zst once the run kept them, CreatePostcards)
//
// Each CSV file is a CSVFormat: its columns in order and its row type, with
// a Writer and a Reader that finds columns by header name. Calibration RPCs
// are the experiment CalibrationExperiment(transport). The files reports
// write from these (summary.json, by_size.csv, the cperf .data files,
// report.html) are declared in package reports, their only writer.
//
// rundir imports nothing of homatb but the switch statistics type, which
// lives with the switch so that p4 depends on nothing outside it.
package rundir
