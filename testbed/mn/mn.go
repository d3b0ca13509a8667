// Package mn drives mininet/runner.py, the Python process that builds the
// emulated network with Debian's Mininet, over its line protocol: one JSON
// object per line, requests on the runner's stdin, replies and events on its
// stdout (the protocol is described at the top of runner.py and in
// docs/emulation.md).
package mn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/homatb/homatb/mininet"
)

// Python is Debian's interpreter, which has the mininet module; the python3
// first on PATH may not.
const Python = "/usr/bin/python3"

// Spec describes the network to build. Names are logical ("h1", "s1");
// Node names are what Mininet calls the nodes (they carry the run tag).
type Spec struct {
	Tag      string            `json:"tag"`
	MTU      int               `json:"mtu"`
	Shaper   string            `json:"shaper"`
	BWMbit   float64           `json:"bw_mbit"`
	Hosts    []HostSpec        `json:"hosts"`
	Switches []SwitchSpec      `json:"switches"`
	Links    []LinkSpec        `json:"links"`
	Env      map[string]string `json:"env,omitempty"`
}

// HostSpec is one host: a shell in its own network namespace.
type HostSpec struct {
	Name string `json:"name"`
	Node string `json:"node"`
	IP   string `json:"ip"` // with prefix length
	MAC  string `json:"mac"`
}

// SwitchSpec is one P4 switch process: the embedded switch runs in the
// root namespace, BMv2 in a network namespace of its own.
type SwitchSpec struct {
	Name           string   `json:"name"`
	Node           string   `json:"node"`
	Kind           string   `json:"kind"` // "homatb" or "bmv2"
	Binary         string   `json:"binary"`
	DeviceID       uint64   `json:"device_id"`
	GRPCPort       int      `json:"grpc_port"`
	LinkBps        uint64   `json:"link_bps"`
	QueueDepthPkts int      `json:"queue_depth_pkts"`
	StatsFile      string   `json:"stats_file,omitempty"`
	LogFile        string   `json:"log_file,omitempty"`
	PcapDir        string   `json:"pcap_dir,omitempty"`
	AdminSocket    string   `json:"admin_socket,omitempty"`
	ExtraArgs      []string `json:"extra_args,omitempty"`
	// BMv2 only: p4c's tor.json and the switch's Thrift port (one per
	// switch, so that two BMv2 switches do not both take 9090).
	BMv2JSON   string `json:"bmv2_json,omitempty"`
	ThriftPort int    `json:"thrift_port,omitempty"`
	// BMv2 runs in a namespace of its own: P4Runtime on the Unix socket
	// GRPCSocket, BMv2's notifications on the IPC socket Notifications,
	// and PortShaper caps each port at the link rate.
	GRPCSocket    string      `json:"grpc_socket,omitempty"`
	Notifications string      `json:"notifications,omitempty"`
	PortShaper    *PortShaper `json:"port_shaper,omitempty"`
}

// PortShaper is a kernel shaper on each switch-side interface: an htb
// class at RateBps with eight strict-priority children, one per tor.p4
// queue, each a FIFO of LimitPkts, classified by DSCP as tor.p4's
// dscp_to_queue table.
type PortShaper struct {
	RateBps   uint64 `json:"rate_bps"`
	MTU       int    `json:"mtu"`
	LimitPkts int    `json:"limit_pkts"`
	// DSCPQueue maps a DSCP (decimal, as JSON keys are strings) to its
	// queue 0..7; others go to queue 0.
	DSCPQueue map[string]int `json:"dscp_queue"`
}

// LinkSpec is one veth pair; ShapeA shapes side A (a host NIC) to the link
// rate with the kernel.
type LinkSpec struct {
	A      string `json:"a"`
	APort  int    `json:"a_port"`
	AIntf  string `json:"a_intf"`
	B      string `json:"b"`
	BPort  int    `json:"b_port"`
	BIntf  string `json:"b_intf"`
	ShapeA bool   `json:"shape_a"`
}

// Built reports the processes behind the network.
type Built struct {
	Hosts    map[string]struct{ PID int } `json:"hosts"`
	Switches map[string]struct{ PID int } `json:"switches"`
}

// Event is an unprompted message from the runner.
type Event struct {
	Event    string `json:"event"`
	Name     string `json:"name"`
	PID      int    `json:"pid"`
	RC       int    `json:"rc"`
	Stopping bool   `json:"stopping"`
}

type message struct {
	Event
	ID    *int            `json:"id"`
	OK    bool            `json:"ok"`
	Error string          `json:"error"`
	Data  json.RawMessage `json:"data"`
}

// Runner is a running mininet/runner.py.
type Runner struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	events  chan Event
	exited  chan struct{}
	waitErr error

	mu      sync.Mutex
	nextID  int
	pending map[int]chan message
}

// Options configure Start.
type Options struct {
	// Dir receives the Python files (the run directory's mininet/).
	Dir string
	// Log receives the runner's stderr (Mininet's log).
	Log io.Writer
	// Env is added to the runner's environment and so to every process it
	// starts; the run tag there is what `homatb clean` looks for.
	Env []string
}

// Start writes the runner into opt.Dir, starts it in its own process group
// (so a terminal's SIGINT reaches only the orchestrator, which decides how
// to stop) and waits for it to be ready.
func Start(ctx context.Context, opt Options) (*Runner, error) {
	if err := mininet.WriteTo(opt.Dir); err != nil {
		return nil, err
	}
	cmd := exec.Command(Python, "-u", filepath.Join(opt.Dir, mininet.Runner))
	cmd.Env = append(os.Environ(), opt.Env...)
	cmd.Stderr = opt.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("mininet runner: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("mininet runner: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mininet runner: %w", err)
	}
	r := &Runner{cmd: cmd, stdin: stdin, events: make(chan Event, 64), exited: make(chan struct{}), pending: map[int]chan message{}}
	ready := make(chan struct{})
	go r.read(stdout, ready)
	go func() {
		r.waitErr = cmd.Wait()
		close(r.exited)
	}()
	select {
	case <-ready:
		return r, nil
	case <-r.exited:
		return nil, fmt.Errorf("mininet runner exited before it was ready (%v); is Debian's mininet installed? apt-get install mininet", r.waitErr)
	case <-ctx.Done():
		r.Kill()
		return nil, fmt.Errorf("mininet runner: %w", ctx.Err())
	case <-time.After(30 * time.Second):
		r.Kill()
		return nil, errors.New("mininet runner not ready after 30s")
	}
}

func (r *Runner) read(stdout io.Reader, ready chan struct{}) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // not protocol: a stray print; runner.py keeps stdout clean
		}
		switch {
		case m.ID != nil:
			r.mu.Lock()
			ch := r.pending[*m.ID]
			delete(r.pending, *m.ID)
			r.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case m.Event.Event == "ready":
			close(ready)
		case m.Event.Event != "":
			select {
			case r.events <- m.Event:
			default: // nobody listening fast enough; exits are also visible as failed requests
			}
		}
	}
	close(r.events)
}

// Events delivers process exits; it is closed when the runner's output ends.
func (r *Runner) Events() <-chan Event { return r.events }

// Exited is closed when the runner process has ended.
func (r *Runner) Exited() <-chan struct{} { return r.exited }

// PID is the runner's process id (and process group id).
func (r *Runner) PID() int { return r.cmd.Process.Pid }

// call sends one request and waits for its reply.
func (r *Runner) call(ctx context.Context, req map[string]any, out any) error {
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	ch := make(chan message, 1)
	r.pending[id] = ch
	r.mu.Unlock()
	req["id"] = id
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := r.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("mininet runner %s: %w", req["op"], err)
	}
	select {
	case m := <-ch:
		if !m.OK {
			return fmt.Errorf("mininet runner %s: %s", req["op"], m.Error)
		}
		if out != nil && len(m.Data) > 0 {
			return json.Unmarshal(m.Data, out)
		}
		return nil
	case <-r.exited:
		return fmt.Errorf("mininet runner %s: runner exited (%v)", req["op"], r.waitErr)
	case <-ctx.Done():
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
		return fmt.Errorf("mininet runner %s: %w", req["op"], ctx.Err())
	}
}

// Build builds the network and starts its switches.
func (r *Runner) Build(ctx context.Context, s Spec) (*Built, error) {
	var b Built
	if err := r.call(ctx, map[string]any{"op": "build", "spec": s}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// Cmd runs a command in a host and returns its exit code and output.
func (r *Runner) Cmd(ctx context.Context, host string, timeout time.Duration, args ...string) (int, string, error) {
	var res struct {
		RC     int    `json:"rc"`
		Output string `json:"output"`
	}
	err := r.call(ctx, map[string]any{"op": "cmd", "host": host, "args": args, "timeout": timeout.Seconds()}, &res)
	return res.RC, res.Output, err
}

// Popen starts a named long-running process in host ("" is the root
// namespace) with its output appended to log.
func (r *Runner) Popen(ctx context.Context, name, host, log string, env map[string]string, args ...string) (int, error) {
	var res struct {
		PID int `json:"pid"`
	}
	err := r.call(ctx, map[string]any{"op": "popen", "name": name, "host": host, "args": args, "log": log, "env": env}, &res)
	return res.PID, err
}

// Signal sends sig to a process started by Popen or to a switch.
func (r *Runner) Signal(ctx context.Context, name string, sig syscall.Signal) error {
	return r.call(ctx, map[string]any{"op": "signal", "name": name, "sig": int(sig)}, nil)
}

// Stop asks the runner to stop every process and the network and waits for
// it to exit. If ctx ends first the runner's process group is killed; what
// it leaves is for the cleaner.
func (r *Runner) Stop(ctx context.Context) error {
	err := r.call(ctx, map[string]any{"op": "stop"}, nil)
	_ = r.stdin.Close()
	select {
	case <-r.exited:
	case <-ctx.Done():
		r.Kill()
		if err == nil {
			err = fmt.Errorf("mininet runner stop: %w", ctx.Err())
		}
	}
	return err
}

// Kill ends the runner's whole process group at once and waits for it.
func (r *Runner) Kill() {
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.exited
}
