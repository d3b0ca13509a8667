package agent

import (
	"github.com/homatb/homatb/rundir"
)

// Record is one issued RPC, exactly one per RPC: a row of rpcs.csv.
type Record = rundir.RPC

// RPC statuses in records.
const (
	StatusCompleted = rundir.StatusCompleted
	StatusFailed    = rundir.StatusFailed
	StatusInflight  = rundir.StatusInflight
)

// recordWriter streams an experiment's client records to rpcs.csv rows.
type recordWriter = rundir.CSVStream[Record]

func newRecordWriter(path string) (*recordWriter, error) {
	return rundir.NewCSVStream(path, rundir.RPCs())
}

// servedWriter streams a server's answered requests to served.csv rows.
type servedWriter = rundir.CSVStream[rundir.Served]

func newServedWriter(path string) (*servedWriter, error) {
	return rundir.NewCSVStream(path, rundir.ServedRPCs())
}
