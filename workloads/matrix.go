package workloads

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Trigger kinds of a connection matrix, as htsim names them.
const (
	// TriggerOneShot starts every flow waiting on it at its first
	// activation; htsim aborts on a second one.
	TriggerOneShot = "oneshot"
	// TriggerMultiShot starts its k-th waiting flow (in file order) at its
	// k-th activation; activations past the last flow do nothing.
	TriggerMultiShot = "multishot"
	// TriggerBarrier starts every flow waiting on it at its count-th
	// activation; htsim aborts on one more.
	TriggerBarrier = "barrier"
)

// KindConnectionMatrix is the agents' collective kind of a phase that
// runs a connection matrix.
const KindConnectionMatrix = "connection-matrix"

// MaxMatrixFlows bounds a connection matrix's flows and triggers.
const MaxMatrixFlows = 1_000_000

// Matrix is a connection matrix in htsim's format (its
// ConnectionMatrix::load): a header of `Nodes N`, `Connections C` and
// `Triggers T` lines, then one line per flow and per trigger
// (docs/scenarios.md, "Connection matrices").
type Matrix struct {
	// File names the matrix in errors; Text is what was parsed (the
	// agents are sent it and parse it again).
	File  string
	Text  []byte
	Nodes int
	// Flows are in file order; Triggers by id.
	Flows    []MatrixFlow
	Triggers map[int]*MatrixTrigger
}

// MatrixFlow is one flow line: SRC->DST [id X] (start T | trigger K)
// size BYTES [prio P] [send_done_trigger K] [recv_done_trigger K].
type MatrixFlow struct {
	Line     int
	Src, Dst int
	// ID is the line's id, or for a line without one the next number
	// above every id in the file, in file order.
	ID int
	// StartPs is when the flow starts, in picoseconds after the matrix's
	// start (htsim's reader takes the number as picoseconds); unused when
	// Trigger is set.
	StartPs int64
	// Trigger is the trigger the flow waits on, 0 for none.
	Trigger int
	Size    int64
	// Prio is the line's prio, read and kept but not applied (htsim's
	// transports do not apply it either); 0 when absent.
	Prio int
	// SendDone and RecvDone are the triggers the flow activates when its
	// sender has every byte acknowledged and when its receiver has every
	// byte; 0 for none.
	SendDone, RecvDone int
}

// MatrixTrigger is one trigger line: trigger id K (oneshot | multishot |
// barrier) [count N], with the flows that wait on it and activate it.
type MatrixTrigger struct {
	Line  int
	ID    int
	Kind  string
	Count int
	// Targets are the indexes in Matrix.Flows of the flows waiting on the
	// trigger, in file order (a multishot trigger starts them in it).
	Targets []int
	// Activations counts the flows' send_done and recv_done naming it.
	Activations int
}

// Needed is how many activations start target i of t (an index in
// t.Targets).
func (t *MatrixTrigger) Needed(i int) int {
	switch t.Kind {
	case TriggerMultiShot:
		return i + 1
	case TriggerBarrier:
		return t.Count
	}
	return 1
}

// LoadMatrix reads and parses the connection matrix in file.
func LoadMatrix(file string) (*Matrix, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("connection matrix: %w", err)
	}
	return ParseMatrix(file, b)
}

// ParseMatrix parses a connection matrix in htsim's format; file names it
// in errors, which say FILE:LINE as htsim's reader says the line. Beyond
// htsim's own checks it refuses what htsim accepts but cannot run to its
// end: a flow that can never start (its trigger is never activated often
// enough), an activation that would make htsim abort (a oneshot trigger's
// second, a barrier's one past its count), unknown trigger ids, repeated
// flow ids, nodes outside Nodes, and a flow to its own node.
func ParseMatrix(file string, text []byte) (*Matrix, error) {
	m := &Matrix{File: file, Text: text, Triggers: map[int]*MatrixTrigger{}}
	errAt := func(line int, format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, a...))
	}
	wantFlows, wantTriggers := -1, 0
	headerLine := map[string]int{}
	body := false
	// refs are the trigger ids the flows name, with the first line naming
	// each, to report a trigger never defined.
	refs := map[int]int{}
	ids := map[int]int{} // flow id -> line
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		tok := strings.Fields(sc.Text())
		if len(tok) == 0 || strings.HasPrefix(tok[0], "#") {
			continue
		}
		isFlow := strings.Contains(tok[0], "->")
		if !body && !isFlow && tok[0] != "trigger" && tok[0] != "failure" {
			// The header: htsim reads these keys and skips other lines
			// until the first flow, trigger or failure line.
			switch tok[0] {
			case "Nodes", "Connections", "Triggers", "Failures":
				if len(tok) != 2 {
					return nil, errAt(line, "%s: expected one number after it, got %d words", tok[0], len(tok)-1)
				}
				n, err := strconv.Atoi(tok[1])
				if err != nil || n < 0 || n > MaxMatrixFlows {
					return nil, errAt(line, "%s: expected a count from 0 to %d, got %q", tok[0], MaxMatrixFlows, tok[1])
				}
				if prev, ok := headerLine[tok[0]]; ok {
					return nil, errAt(line, "%s given twice (first at line %d)", tok[0], prev)
				}
				headerLine[tok[0]] = line
				switch tok[0] {
				case "Nodes":
					m.Nodes = n
				case "Connections":
					wantFlows = n
				case "Triggers":
					wantTriggers = n
				case "Failures":
					if n > 0 {
						return nil, errAt(line, "Failures %d: homatb does not run htsim's failure lines; use the scenario's faults", n)
					}
				}
			}
			continue
		}
		body = true
		switch {
		case isFlow:
			f, err := parseFlow(tok, line)
			if err != nil {
				return nil, errAt(line, "%v", err)
			}
			if f.ID != 0 {
				if prev, ok := ids[f.ID]; ok {
					return nil, errAt(line, "flow id %d is already the id of line %d's flow", f.ID, prev)
				}
				ids[f.ID] = line
			}
			for _, k := range []int{f.Trigger, f.SendDone, f.RecvDone} {
				if _, ok := refs[k]; k != 0 && !ok {
					refs[k] = line
				}
			}
			if len(m.Flows) >= MaxMatrixFlows {
				return nil, errAt(line, "more than %d flows", MaxMatrixFlows)
			}
			m.Flows = append(m.Flows, f)
		case tok[0] == "trigger":
			t, err := parseTrigger(tok, line)
			if err != nil {
				return nil, errAt(line, "%v", err)
			}
			if prev, ok := m.Triggers[t.ID]; ok {
				return nil, errAt(line, "trigger id %d is already defined at line %d", t.ID, prev.Line)
			}
			m.Triggers[t.ID] = t
		case tok[0] == "failure":
			return nil, errAt(line, "homatb does not run htsim's failure lines; use the scenario's faults")
		default:
			return nil, errAt(line, "unknown line %q: expected SRC->DST ..., trigger ... or failure ...", tok[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, line+1, err)
	}
	if _, ok := headerLine["Nodes"]; !ok {
		return nil, fmt.Errorf("%s: no Nodes line: expected \"Nodes N\" in the header", file)
	}
	if wantFlows < 0 {
		return nil, fmt.Errorf("%s: no Connections line: expected \"Connections C\" in the header", file)
	}
	if len(m.Flows) != wantFlows {
		return nil, errAt(headerLine["Connections"], "Connections %d, but the file has %d flow lines", wantFlows, len(m.Flows))
	}
	if len(m.Triggers) != wantTriggers {
		at := headerLine["Triggers"]
		if at == 0 {
			return nil, fmt.Errorf("%s: no Triggers line, but the file has %d trigger lines", file, len(m.Triggers))
		}
		return nil, errAt(at, "Triggers %d, but the file has %d trigger lines", wantTriggers, len(m.Triggers))
	}
	if len(m.Flows) == 0 {
		return nil, fmt.Errorf("%s: no flows", file)
	}
	for _, k := range sortedKeys(refs) {
		if _, ok := m.Triggers[k]; !ok {
			return nil, errAt(refs[k], "trigger %d is named but never defined: expected a line \"trigger id %d oneshot|multishot|barrier\"", k, k)
		}
	}
	next := 0
	for id := range ids {
		next = max(next, id)
	}
	for i := range m.Flows {
		f := &m.Flows[i]
		for _, n := range []struct {
			what string
			v    int
		}{{"source", f.Src}, {"destination", f.Dst}} {
			if n.v >= m.Nodes {
				return nil, errAt(f.Line, "%s node %d is outside the matrix's %d nodes (Nodes %d: 0 to %d)", n.what, n.v, m.Nodes, m.Nodes, m.Nodes-1)
			}
		}
		if f.ID == 0 {
			next++
			f.ID = next
		}
		if f.Trigger != 0 {
			t := m.Triggers[f.Trigger]
			t.Targets = append(t.Targets, i)
		}
		for _, k := range []int{f.SendDone, f.RecvDone} {
			if k != 0 {
				m.Triggers[k].Activations++
			}
		}
	}
	if err := m.checkTriggers(); err != nil {
		return nil, err
	}
	return m, nil
}

// parseFlow parses a flow line's words.
func parseFlow(tok []string, line int) (MatrixFlow, error) {
	f := MatrixFlow{Line: line, StartPs: -1}
	src, dst, _ := strings.Cut(tok[0], "->")
	var err error
	if f.Src, err = node(src); err != nil {
		return f, fmt.Errorf("%q: source %w", tok[0], err)
	}
	if f.Dst, err = node(dst); err != nil {
		return f, fmt.Errorf("%q: destination %w", tok[0], err)
	}
	if f.Src == f.Dst {
		return f, fmt.Errorf("%q: a flow from a node to itself: homatb's flows cross the network", tok[0])
	}
	seen := map[string]bool{}
	hasSize := false
	for i := 1; i < len(tok); i++ {
		key := tok[i]
		switch key {
		case "id", "start", "size", "prio", "trigger", "send_done_trigger", "recv_done_trigger":
		case "addon", "msg":
			return f, fmt.Errorf("%q: a key of other htsim versions that homatb does not run", key)
		default:
			return f, fmt.Errorf("unknown key %q: expected id, start, trigger, size, prio, send_done_trigger or recv_done_trigger", key)
		}
		if seen[key] {
			return f, fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		if i+1 >= len(tok) {
			return f, fmt.Errorf("%s: expected a number after it", key)
		}
		i++
		v := tok[i]
		switch key {
		case "start":
			ps, err := strconv.ParseFloat(v, 64)
			if err != nil || ps < 0 || ps > math.MaxInt64/2 || math.IsNaN(ps) {
				return f, fmt.Errorf("start %q: expected a time in picoseconds, 0 or more", v)
			}
			f.StartPs = int64(math.Round(ps))
		case "size":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return f, fmt.Errorf("size %q: expected a number of bytes, 1 or more", v)
			}
			f.Size, hasSize = n, true
		case "prio":
			n, err := strconv.Atoi(v)
			if err != nil {
				return f, fmt.Errorf("prio %q: expected a number", v)
			}
			f.Prio = n
		default:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return f, fmt.Errorf("%s %q: expected an id, 1 or more (htsim does not allow 0)", key, v)
			}
			switch key {
			case "id":
				f.ID = n
			case "trigger":
				f.Trigger = n
			case "send_done_trigger":
				f.SendDone = n
			case "recv_done_trigger":
				f.RecvDone = n
			}
		}
	}
	switch {
	case !hasSize:
		return f, fmt.Errorf("no size: expected \"size BYTES\"")
	case f.StartPs < 0 && f.Trigger == 0:
		return f, fmt.Errorf("no start method: expected \"start T\" or \"trigger K\"")
	case f.StartPs >= 0 && f.Trigger != 0:
		return f, fmt.Errorf("both a start time and a trigger: expected one of them")
	case f.Trigger != 0 && f.ID == 0:
		return f, fmt.Errorf("a flow started by a trigger needs an id (htsim requires one)")
	}
	return f, nil
}

func node(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: expected a node number, 0 or more", s)
	}
	return n, nil
}

// parseTrigger parses a trigger line's words.
func parseTrigger(tok []string, line int) (*MatrixTrigger, error) {
	t := &MatrixTrigger{Line: line}
	for i := 1; i < len(tok); i++ {
		switch key := tok[i]; key {
		case "id", "count":
			if i+1 >= len(tok) {
				return nil, fmt.Errorf("%s: expected a number after it", key)
			}
			i++
			n, err := strconv.Atoi(tok[i])
			if err != nil || n < 0 || (key == "id" && n == 0) {
				return nil, fmt.Errorf("%s %q: expected a number%s", key, tok[i], map[bool]string{true: ", 1 or more (htsim does not allow 0)"}[key == "id"])
			}
			if key == "id" {
				t.ID = n
			} else {
				t.Count = n
			}
		case TriggerOneShot, TriggerMultiShot, TriggerBarrier:
			if t.Kind != "" {
				return nil, fmt.Errorf("trigger is both %s and %s: expected one kind", t.Kind, key)
			}
			t.Kind = key
		default:
			return nil, fmt.Errorf("unknown key %q: expected id, oneshot, multishot, barrier or count", key)
		}
	}
	switch {
	case t.ID == 0:
		return nil, fmt.Errorf("trigger with no id: expected \"id K\"")
	case t.Kind == "":
		return nil, fmt.Errorf("trigger %d has no kind: expected oneshot, multishot or barrier", t.ID)
	case t.Kind == TriggerBarrier && t.Count < 1:
		return nil, fmt.Errorf("barrier trigger %d: expected \"count N\" with N 1 or more", t.ID)
	}
	return t, nil
}

// checkTriggers refuses activations htsim would abort on and flows that
// could never start: it plays the graph's activations in any order
// (their number, not their order, decides which flows start).
func (m *Matrix) checkTriggers() error {
	for _, k := range sortedKeys(m.Triggers) {
		t := m.Triggers[k]
		switch {
		case t.Kind == TriggerOneShot && t.Activations > 1:
			return fmt.Errorf("%s:%d: oneshot trigger %d is activated by %d send_done/recv_done: htsim aborts on its second activation; use a barrier or multishot trigger",
				m.File, t.Line, t.ID, t.Activations)
		case t.Kind == TriggerOneShot && t.Activations == 1 && len(t.Targets) == 0:
			return fmt.Errorf("%s:%d: oneshot trigger %d is activated but no flow waits on it (htsim aborts when it fires)", m.File, t.Line, t.ID)
		case t.Kind == TriggerBarrier && t.Activations > t.Count:
			return fmt.Errorf("%s:%d: barrier trigger %d has count %d but %d send_done/recv_done activate it: htsim aborts on the activation past its count",
				m.File, t.Line, t.ID, t.Count, t.Activations)
		}
	}
	started := make([]bool, len(m.Flows))
	fired := map[int]int{}
	queue := []int{}
	for i, f := range m.Flows {
		if f.Trigger == 0 {
			started[i] = true
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		f := m.Flows[queue[0]]
		queue = queue[1:]
		for _, k := range []int{f.SendDone, f.RecvDone} {
			if k == 0 {
				continue
			}
			fired[k]++
			t := m.Triggers[k]
			for j, target := range t.Targets {
				if !started[target] && fired[k] >= t.Needed(j) {
					started[target] = true
					queue = append(queue, target)
				}
			}
		}
	}
	if i := slices.Index(started, false); i >= 0 {
		f := m.Flows[i]
		t := m.Triggers[f.Trigger]
		return fmt.Errorf("%s:%d: flow %d never starts: its %s trigger %d (line %d) needs %d activations and gets at most %d from flows that start",
			m.File, f.Line, f.ID, t.Kind, t.ID, t.Line, t.Needed(slices.Index(t.Targets, i)), fired[t.ID])
	}
	return nil
}

// Hosts maps the matrix's nodes to hosts: node i is hosts[i]. It returns
// an error when there are fewer hosts than nodes.
func (m *Matrix) Hosts(hosts []string) ([]string, error) {
	if len(hosts) < m.Nodes {
		return nil, fmt.Errorf("%s has %d nodes but %d hosts are given: expected a host per node", m.File, m.Nodes, len(hosts))
	}
	return hosts[:m.Nodes], nil
}

func sortedKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TriggerNodes are the nodes whose flows wait on trigger k, each once, in
// the order of their first such flow: the nodes an activation of k must
// reach.
func (m *Matrix) TriggerNodes(k int) []int {
	var out []int
	if t := m.Triggers[k]; t != nil {
		for _, i := range t.Targets {
			if n := m.Flows[i].Src; !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// FlowsOf counts the flows node sends.
func (m *Matrix) FlowsOf(node int) int {
	n := 0
	for _, f := range m.Flows {
		if f.Src == node {
			n++
		}
	}
	return n
}

// MatrixRun is one node's part in running a matrix, on any clock (the
// agents in real time, the simulator in virtual time): which of its flows
// start when, as the activations of their triggers reach it. Every node
// hears every activation of a trigger its flows wait on, so each counts
// them itself and no node holds a trigger for the others. It is not safe
// for concurrent use.
type MatrixRun struct {
	m        *Matrix
	node     int
	heard    map[int]int
	launched []bool // by index in m.Flows; only the node's own
}

// MatrixLaunch is a flow to start now: its index in Matrix.Flows, when it
// could go (Ready: its start time, or when its trigger fired at the
// node) and when its trigger fired (Input, 0 for a flow with a start
// time).
type MatrixLaunch struct {
	Flow         int
	Ready, Input int64
}

// NewMatrixRun starts node's part in m.
func NewMatrixRun(m *Matrix, node int) *MatrixRun {
	return &MatrixRun{m: m, node: node, heard: map[int]int{}, launched: make([]bool, len(m.Flows))}
}

// Start returns the node's flows that have a start time, each Ready at
// start (ns) plus its start time.
func (r *MatrixRun) Start(start int64) []MatrixLaunch {
	var out []MatrixLaunch
	for i, f := range r.m.Flows {
		if f.Src == r.node && f.Trigger == 0 {
			r.launched[i] = true
			// Picoseconds to nanoseconds, rounded down.
			out = append(out, MatrixLaunch{Flow: i, Ready: start + f.StartPs/1000})
		}
	}
	return out
}

// Activate counts one activation of trigger k heard at the node at at,
// and returns the node's flows it starts.
func (r *MatrixRun) Activate(k int, at int64) []MatrixLaunch {
	t := r.m.Triggers[k]
	if t == nil {
		return nil
	}
	r.heard[k]++
	var out []MatrixLaunch
	for j, i := range t.Targets {
		if r.m.Flows[i].Src == r.node && !r.launched[i] && r.heard[k] >= t.Needed(j) {
			r.launched[i] = true
			out = append(out, MatrixLaunch{Flow: i, Ready: at, Input: at})
		}
	}
	return out
}
