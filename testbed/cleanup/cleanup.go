// Package cleanup finds and removes what a run left on the machine, by tag
// rather than from memory (like `mn -c`): processes whose environment holds
// HOMATB_RUN=<tag>, root-namespace interfaces named after the tag, and the
// run's registration file and socket directory. Network namespaces of a
// Mininet run are held by its host shells, so they go with the processes.
package cleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/homatb/homatb/testbed/topo"
)

// EnvTag is the environment variable every process of a run carries.
const EnvTag = "HOMATB_RUN"

// DefaultRegistry is where live runs register (one JSON file per tag).
const DefaultRegistry = "/run/homatb"

// Registration is what a run writes at start so that a later `homatb clean`
// knows whether it is still alive and what it owns.
type Registration struct {
	Tag      string `json:"tag"`
	Run      string `json:"run"`
	RunDir   string `json:"run_dir"`
	OwnerPID int    `json:"owner_pid"`
	// OwnerStart is the owner's start time in clock ticks (from
	// /proc/PID/stat), so a reused PID is not taken for the owner.
	OwnerStart uint64   `json:"owner_start"`
	Dirs       []string `json:"dirs,omitempty"`
}

// Register writes reg into registry and returns its path.
func Register(registry string, reg Registration) (string, error) {
	if reg.OwnerPID == 0 {
		reg.OwnerPID = os.Getpid()
	}
	reg.OwnerStart = startTime(reg.OwnerPID)
	if err := os.MkdirAll(registry, 0o755); err != nil {
		return "", fmt.Errorf("register run: %w", err)
	}
	b, err := json.MarshalIndent(reg, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(registry, reg.Tag+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", fmt.Errorf("register run: %w", err)
	}
	return path, nil
}

// Proc is a leftover process.
type Proc struct {
	PID  int
	Cmd  string
	Ours bool // a child of this process (not yet reaped)
}

// Leftovers is what one run tag left behind.
type Leftovers struct {
	Tag          string
	Registration *Registration
	// Alive is true when the run's owner still runs: its state is not
	// leftover, and Remove leaves it alone unless forced.
	Alive bool
	Procs []Proc
	Intfs []string
	Files []string
}

// Empty reports whether nothing is left.
func (l Leftovers) Empty() bool {
	return len(l.Procs) == 0 && len(l.Intfs) == 0 && len(l.Files) == 0
}

func (l Leftovers) String() string {
	var parts []string
	if len(l.Procs) > 0 {
		parts = append(parts, fmt.Sprintf("%d processes", len(l.Procs)))
	}
	if len(l.Intfs) > 0 {
		parts = append(parts, fmt.Sprintf("%d interfaces", len(l.Intfs)))
	}
	if len(l.Files) > 0 {
		parts = append(parts, fmt.Sprintf("%d files", len(l.Files)))
	}
	state := "dead"
	if l.Alive {
		state = "still running"
	}
	run := ""
	if l.Registration != nil {
		run = " (run " + l.Registration.Run + ")"
	}
	return fmt.Sprintf("%s%s, %s: %s", l.Tag, run, state, strings.Join(parts, ", "))
}

// Find lists leftovers by tag; tag "" means every tag found.
func Find(registry, tag string) ([]Leftovers, error) {
	byTag := map[string]*Leftovers{}
	get := func(t string) *Leftovers {
		if l, ok := byTag[t]; ok {
			return l
		}
		l := &Leftovers{Tag: t}
		byTag[t] = l
		return l
	}
	want := func(t string) bool { return tag == "" || t == tag }

	regs, _ := filepath.Glob(filepath.Join(registry, "hb*.json"))
	for _, path := range regs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var reg Registration
		if json.Unmarshal(b, &reg) != nil || !topo.TagPattern.MatchString(reg.Tag) || !want(reg.Tag) {
			continue
		}
		l := get(reg.Tag)
		l.Registration = &reg
		l.Alive = reg.OwnerPID != 0 && startTime(reg.OwnerPID) == reg.OwnerStart && reg.OwnerStart != 0
		l.Files = append(l.Files, path)
		for _, d := range reg.Dirs {
			if _, err := os.Stat(d); err == nil {
				l.Files = append(l.Files, d)
			}
		}
	}
	procs, err := taggedProcs()
	if err != nil {
		return nil, err
	}
	for t, ps := range procs {
		if want(t) {
			get(t).Procs = ps
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	for _, link := range links {
		name := link.Attrs().Name
		if m := topo.IntfPattern.FindStringSubmatch(name); m != nil && want(m[1]) {
			l := get(m[1])
			l.Intfs = append(l.Intfs, name)
		}
	}
	out := make([]Leftovers, 0, len(byTag))
	for _, l := range byTag {
		sort.Strings(l.Intfs)
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tag < out[j].Tag })
	return out, nil
}

// taggedProcs scans /proc for processes carrying HOMATB_RUN, by tag.
func taggedProcs() (map[string][]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("scan processes: %w", err)
	}
	self := os.Getpid()
	out := map[string][]Proc{}
	prefix := []byte(EnvTag + "=")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or a kernel thread
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if !bytes.HasPrefix(kv, prefix) {
				continue
			}
			t := string(kv[len(prefix):])
			if !topo.TagPattern.MatchString(t) {
				break
			}
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out[t] = append(out[t], Proc{PID: pid, Cmd: strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))), Ours: parentPID(pid) == self})
			break
		}
	}
	return out, nil
}

// Remove kills the processes (TERM, then KILL after grace), deletes the
// interfaces and removes the files. A live run is refused unless force.
func Remove(ctx context.Context, l Leftovers, grace time.Duration, force bool) error {
	if l.Alive && !force {
		return fmt.Errorf("run %s is still running (pid %d); stop it or clean with --force", l.Tag, l.Registration.OwnerPID)
	}
	var errs []error
	for _, p := range l.Procs {
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, p := range l.Procs {
		for alive(p.PID) && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(p.PID) {
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("kill %d (%s): %w", p.PID, p.Cmd, err))
			}
		}
	}
	for _, name := range l.Intfs {
		link, err := netlink.LinkByName(name)
		if err != nil {
			continue // went with its namespace or its peer
		}
		if err := netlink.LinkDel(link); err != nil && !errors.Is(err, syscall.ENODEV) {
			errs = append(errs, fmt.Errorf("delete interface %s: %w", name, err))
		}
	}
	for _, f := range l.Files {
		if err := os.RemoveAll(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// alive reports whether pid exists and is not a zombie (a zombie child of
// ours holds nothing: its namespace and sockets are gone).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := statFields(stat)
	return len(fields) > 0 && fields[0] != "Z"
}

// statFields returns /proc/PID/stat fields after the command name, so
// fields[0] is the state (field 3) and fields[19] the start time (field 22).
func statFields(stat []byte) []string {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

func startTime(pid int) uint64 {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := statFields(stat)
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

func parentPID(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := statFields(stat)
	if len(f) < 2 {
		return 0
	}
	v, _ := strconv.Atoi(f[1])
	return v
}

// InterfaceExists reports whether a root-namespace interface is present.
func InterfaceExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}
