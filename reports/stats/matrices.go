package stats

import (
	"fmt"
	"slices"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// MatrixStats summarises one connection-matrix phase of an experiment:
// how its flows ended, their completion times and the whole graph's.
type MatrixStats struct {
	Phase string `json:"phase"`
	// File is the matrix's path as the run's scenario names it.
	File string `json:"file"`
	// Flows counts the matrix's flows (0 when the file could not be read
	// again); Completed, Failed and InFlight the flows' RPCs by status, and
	// Unstarted the flows with no record (their trigger never fired before
	// the end).
	Flows     int `json:"flows"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	InFlight  int `json:"in_flight"`
	Unstarted int `json:"unstarted"`
	// Notifications counts the trigger notifications sent between hosts.
	Notifications int `json:"notifications"`
	// FCT is the completed flows' completion times: from when each could
	// start (its start time, or its trigger firing at its sender) to its
	// answer (µs).
	FCT Percentiles `json:"fct_us"`
	// Slowdown is the completed flows' completion times each over its
	// ideal: the fabric's ideal RTT of an RPC of the flow's bytes and
	// answer between its hosts (docs/reports.md, "Slowdown"); no count
	// without calibration or link rate.
	Slowdown Percentiles `json:"slowdown"`
	// Completion is the whole graph's completion time: from the earliest
	// flow's start to the last flow's answer (µs); null unless every flow
	// completed.
	Completion *float64 `json:"completion_us"`
	// OrderChecked counts the triggered flows rundir.CheckMatrixOrder found
	// started after their trigger fired; OrderError is its first violation.
	OrderChecked int    `json:"order_checked"`
	OrderError   string `json:"order_error,omitempty"`
}

// matrixPhase is a connection-matrix phase of the run's scenario.
type matrixPhase struct {
	name, file string
	m          *workloads.Matrix // nil when the file cannot be read
}

// matrixPhases are the run's connection-matrix phases in the scenario's
// order, each with its matrix read again from the scenario's path.
func matrixPhases(man *Manifest) []matrixPhase {
	if man == nil {
		return nil
	}
	var out []matrixPhase
	for _, p := range ListOf(MapOf(man.Scenario)["phases"]) {
		pm := MapOf(p)
		if f := Scalar(pm["connection_matrix"]); f != "" {
			mp := matrixPhase{name: Scalar(pm["name"]), file: f}
			mp.m, _ = workloads.LoadMatrix(f)
			out = append(out, mp)
		}
	}
	return out
}

// matrixStats summarises the matrices' records of one experiment: rows
// and the links between each row's hosts; ideal is nil without
// calibration.
func matrixStats(rows []rundir.RPC, links []uint8, phases []matrixPhase, ideal *idealRTT, conf float64) []MatrixStats {
	type phaseRows struct {
		rows  []rundir.RPC
		links []uint8
	}
	byPhase := map[string]*phaseRows{}
	for i, r := range rows {
		pr := byPhase[r.Matrix]
		if pr == nil {
			pr = &phaseRows{}
			byPhase[r.Matrix] = pr
		}
		pr.rows, pr.links = append(pr.rows, r), append(pr.links, links[i])
	}
	var out []MatrixStats
	for _, ph := range phases {
		pr, ok := byPhase[ph.name]
		if !ok {
			continue
		}
		out = append(out, oneMatrix(ph, pr.rows, pr.links, ideal, conf))
	}
	return out
}

func oneMatrix(ph matrixPhase, rows []rundir.RPC, links []uint8, ideal *idealRTT, conf float64) MatrixStats {
	ms := MatrixStats{Phase: ph.name, File: ph.file}
	var fct []int64
	var slows []float64
	var first, last int64
	seen := 0
	for i, r := range rows {
		if r.Flow == 0 {
			ms.Notifications++
			continue
		}
		seen++
		if first == 0 || r.IntendedNs < first {
			first = r.IntendedNs
		}
		switch r.Status {
		case rundir.StatusCompleted:
			ms.Completed++
			fct = append(fct, r.DoneNs-r.IntendedNs)
			last = max(last, r.DoneNs)
			if ideal != nil {
				slows = append(slows, float64(r.DoneNs-r.IntendedNs)/ideal.at(r.ReqBytes, r.RespBytes, int(links[i])))
			}
		case rundir.StatusFailed:
			ms.Failed++
		default:
			ms.InFlight++
		}
	}
	slices.Sort(fct)
	ms.FCT = percentiles(fct, conf, 1e-3)
	slices.Sort(slows)
	ms.Slowdown = percentiles(slows, conf, 1)
	if ph.m == nil {
		ms.OrderError = fmt.Sprintf("the matrix %s could not be read again: flows not counted, order not checked", ph.file)
		return ms
	}
	ms.Flows = len(ph.m.Flows)
	ms.Unstarted = max(ms.Flows-seen, 0)
	if ms.Completed == ms.Flows {
		us := float64(last-first) / 1e3
		ms.Completion = &us
	}
	n, err := rundir.CheckMatrixOrder(rows, ph.m)
	ms.OrderChecked = n
	if err != nil {
		ms.OrderError = err.Error()
	}
	return ms
}

// MatrixRow is one experiment's connection-matrix phase in the report.
type MatrixRow struct {
	Name, Config string
	M            MatrixStats
}

// MatrixRows are the report's rows of connection matrices: each
// experiment's, in the summary's order.
func MatrixRows(s *Summary) []MatrixRow {
	var out []MatrixRow
	for _, e := range s.Experiments {
		for _, m := range e.Flows {
			out = append(out, MatrixRow{Name: e.Name, Config: e.Config, M: m})
		}
	}
	return out
}
