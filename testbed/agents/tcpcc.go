package agents

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/homatb/homatb/hostagent/tcpcc"
	"github.com/homatb/homatb/testbed/preflight"
	"github.com/homatb/homatb/testbed/scenario"
)

// BPFCongestion lists the BPF congestion controls (package tcpcc) the
// plan's TCP transports use, each once.
func BPFCongestion(plan *scenario.Plan) []string {
	var names []string
	for _, t := range planTransports(plan) {
		if !t.Engine() && tcpcc.IsBPF(t.TCP.Congestion) && !slices.Contains(names, t.TCP.Congestion) {
			names = append(names, t.TCP.Congestion)
		}
	}
	return names
}

// planTransports are the plan's transports: the base scenario's, then each
// experiment's.
func planTransports(plan *scenario.Plan) []scenario.Transport {
	ts := slices.Clone(plan.Base.Transports)
	for _, e := range plan.Experiments {
		ts = append(ts, e.Transport)
	}
	return ts
}

// CongestionProblems checks that the kernel offers every congestion control
// the plan uses: the kernel's by name, the BPF ones by registering them
// once (and unregistering at once: the run registers its own).
func CongestionProblems(plan *scenario.Plan) []preflight.Problem {
	avail, err := tcpcc.Available()
	if err != nil {
		return nil // no procfs view of TCP: nothing to check against
	}
	have := strings.Join(avail, " ")
	var ps []preflight.Problem
	checked := map[string]bool{}
	for _, t := range planTransports(plan) {
		cc := t.TCP.Congestion
		if t.Engine() || checked[cc] {
			continue
		}
		checked[cc] = true
		if !tcpcc.IsBPF(cc) {
			if !slices.Contains(avail, cc) {
				ps = append(ps, preflight.Problem{What: "TCP congestion control " + cc + " is not available (have: " + have + ")", Fix: "modprobe tcp_" + cc})
			}
			continue
		}
		if err := tryRegister(cc); err != nil {
			ps = append(ps, preflight.Problem{What: fmt.Sprintf("TCP congestion control %s (homatb's BPF %s) cannot be registered: %v; this kernel offers %s",
				cc, tcpcc.KernelName(cc), err, have), Fix: "a kernel with BTF (/sys/kernel/btf/vmlinux) and BPF struct_ops for TCP (bpf_tcp_ca), or tcp.congestion: one of " + have})
		}
	}
	return ps
}

// tryRegister registers the BPF control and unregisters it again. One
// already registered (by a concurrent run) is as good.
func tryRegister(name string) error {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("no kernel BTF: %w", err)
	}
	r, err := tcpcc.Register(name)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return r.Close()
}

// Congestion is the BPF congestion controls a run registered for its
// agents; Close unregisters them.
type Congestion struct {
	regs []*tcpcc.Registration
}

// RegisterCongestion registers the plan's BPF congestion controls. A
// control another run already registered is used as it is. On an error the
// ones registered so far are returned too, for the caller to close.
func RegisterCongestion(plan *scenario.Plan, log *slog.Logger) (*Congestion, error) {
	c := &Congestion{}
	for _, name := range BPFCongestion(plan) {
		reg, err := tcpcc.Register(name)
		if errors.Is(err, os.ErrExist) {
			log.Warn("congestion control already registered (by another run?): using it", "name", tcpcc.KernelName(name))
			continue
		}
		if err != nil {
			return c, fmt.Errorf("registering TCP congestion control %s: %w", name, err)
		}
		log.Info("registered congestion control", "name", reg.KernelName)
		c.regs = append(c.regs, reg)
	}
	return c, nil
}

// Names are the kernel's names of the registered controls.
func (c *Congestion) Names() []string {
	var names []string
	for _, reg := range c.regs {
		names = append(names, reg.KernelName)
	}
	return names
}

// Close unregisters what RegisterCongestion registered; a nil Congestion
// has nothing to close.
func (c *Congestion) Close() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, reg := range c.regs {
		errs = append(errs, reg.Close())
	}
	c.regs = nil
	return errors.Join(errs...)
}
