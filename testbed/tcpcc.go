package testbed

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/homatb/homatb/hostagent/tcpcc"
	"github.com/homatb/homatb/testbed/scenario"
)

// bpfCongestion lists the BPF congestion controls (package tcpcc) the
// plan's TCP transports use, each once.
func bpfCongestion(plan *scenario.Plan) []string {
	var names []string
	add := func(t scenario.Transport) {
		if !t.Engine() && tcpcc.IsBPF(t.TCP.Congestion) && !slices.Contains(names, t.TCP.Congestion) {
			names = append(names, t.TCP.Congestion)
		}
	}
	for _, t := range plan.Base.Transports {
		add(t)
	}
	for _, e := range plan.Experiments {
		add(e.Transport)
	}
	return names
}

// congestionProblems checks that the kernel offers every congestion control
// the plan uses: the kernel's by name, the BPF ones by registering them
// once (and unregistering at once: the run registers its own).
func congestionProblems(plan *scenario.Plan) []Problem {
	avail, err := tcpcc.Available()
	if err != nil {
		return nil // no procfs view of TCP: nothing to check against
	}
	have := strings.Join(avail, " ")
	var ps []Problem
	checked := map[string]bool{}
	for _, t := range append(slices.Clone(plan.Base.Transports), experimentTransports(plan)...) {
		cc := t.TCP.Congestion
		if t.Engine() || checked[cc] {
			continue
		}
		checked[cc] = true
		if !tcpcc.IsBPF(cc) {
			if !slices.Contains(avail, cc) {
				ps = append(ps, Problem{What: "TCP congestion control " + cc + " is not available (have: " + have + ")", Fix: "modprobe tcp_" + cc})
			}
			continue
		}
		if err := tryRegister(cc); err != nil {
			ps = append(ps, Problem{What: fmt.Sprintf("TCP congestion control %s (homatb's BPF %s) cannot be registered: %v; this kernel offers %s",
				cc, tcpcc.KernelName(cc), err, have), Fix: "a kernel with BTF (/sys/kernel/btf/vmlinux) and BPF struct_ops for TCP (bpf_tcp_ca), or tcp.congestion: one of " + have})
		}
	}
	return ps
}

func experimentTransports(plan *scenario.Plan) []scenario.Transport {
	ts := make([]scenario.Transport, 0, len(plan.Experiments))
	for _, e := range plan.Experiments {
		ts = append(ts, e.Transport)
	}
	return ts
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

// registerCongestion registers the plan's BPF congestion controls for the
// run; closeCongestion (in teardown) unregisters them. A control another
// run already registered is used as it is.
func (r *run) registerCongestion() error {
	for _, name := range bpfCongestion(r.plan) {
		reg, err := tcpcc.Register(name)
		if errors.Is(err, os.ErrExist) {
			r.log.Warn("congestion control already registered (by another run?): using it", "name", tcpcc.KernelName(name))
			continue
		}
		if err != nil {
			return fmt.Errorf("registering TCP congestion control %s: %w", name, err)
		}
		r.log.Info("registered congestion control", "name", reg.KernelName)
		r.ccs = append(r.ccs, reg)
	}
	if len(r.ccs) == 0 {
		return nil
	}
	return r.man.update(func(m *Manifest) {
		for _, reg := range r.ccs {
			m.Congestion = append(m.Congestion, reg.KernelName)
		}
	})
}

// closeCongestion unregisters what registerCongestion registered.
func (r *run) closeCongestion() error {
	var errs []error
	for _, reg := range r.ccs {
		errs = append(errs, reg.Close())
	}
	r.ccs = nil
	return errors.Join(errs...)
}
