package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"

	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/cleanup"
	"github.com/homatb/homatb/testbed/external"
	"github.com/homatb/homatb/testbed/hostqdisc"
	"github.com/homatb/homatb/testbed/mn"
	"github.com/homatb/homatb/testbed/preflight"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
)

// Problem is one preflight failure with the command that fixes it.
type Problem = preflight.Problem

// PreflightError lists every problem found, so one attempt shows them all.
type PreflightError = preflight.Error

// Preflight checks that this machine can run the plan: root, Debian's
// Mininet, the tools it and the run use, the homatb binary, and the kernel
// pieces (TCP congestion control); for an external topology, that its
// agents and switch answer instead. It returns the leftovers of earlier runs
// separately: they are offered for cleaning, not fatal.
func Preflight(plan *scenario.Plan, binary string, registry string) ([]cleanup.Leftovers, error) {
	if plan.Base.Topology.Kind == scenario.KindExternal {
		return nil, external.Preflight(plan)
	}
	var ps []Problem
	if os.Geteuid() != 0 {
		ps = append(ps, Problem{What: "not running as root: Mininet needs root for namespaces and veths", Fix: "sudo homatb run ..."})
	}
	if _, err := os.Stat(mn.Python); err != nil {
		ps = append(ps, Problem{What: "Debian's " + mn.Python + " is missing", Fix: "apt-get install python3"})
	} else if err := exec.Command(mn.Python, "-c", "import mininet.net").Run(); err != nil {
		ps = append(ps, Problem{What: "Mininet is not installed for " + mn.Python, Fix: "apt-get install mininet"})
	}
	for tool, pkg := range map[string]string{"ethtool": "ethtool", "tc": "iproute2", "ip": "iproute2", "mnexec": "mininet"} {
		if _, err := exec.LookPath(tool); err != nil {
			ps = append(ps, Problem{What: tool + " not found on PATH", Fix: "apt-get install " + pkg})
		}
	}
	if binary == "" {
		ps = append(ps, Problem{What: "no homatb binary for the switch and agent processes", Fix: "make build"})
	} else if st, err := os.Stat(binary); err != nil || st.Mode()&0o111 == 0 {
		ps = append(ps, Problem{What: "homatb binary " + binary + " is not executable", Fix: "make build"})
	}
	if plan.Base.Switch.Target == scenario.TargetBMv2 {
		ps = append(ps, switches.BMv2Problems(context.Background())...)
	}
	ps = append(ps, agents.CongestionProblems(plan)...)
	ps = append(ps, hostQdiscProblems(plan)...)
	left, err := cleanup.Find(registry, "")
	if err != nil && os.Geteuid() == 0 {
		ps = append(ps, Problem{What: fmt.Sprintf("cannot look for leftovers: %v", err), Fix: ""})
	}
	var dead []cleanup.Leftovers
	for _, l := range left {
		if !l.Alive && !l.Empty() {
			dead = append(dead, l)
		}
	}
	if len(ps) > 0 {
		return dead, &PreflightError{Problems: ps}
	}
	return dead, nil
}

// hostQdiscProblems checks that the kernel can divide a host link between
// Homa and TCP when an experiment asks for host_qdisc: pacer, by building
// the division once in a namespace of its own.
func hostQdiscProblems(plan *scenario.Plan) []Problem {
	if !slices.ContainsFunc(plan.Experiments, func(e scenario.Experiment) bool { return e.Scenario.HostQdisc == scenario.HostQdiscPacer }) || os.Geteuid() != 0 {
		return nil
	}
	if err := hostqdisc.Probe(); err != nil {
		return []Problem{{What: fmt.Sprintf("host_qdisc pacer divides each host link's htb with u32 filters, and this kernel cannot: %v", err),
			Fix: "a kernel with htb and u32 (CONFIG_NET_SCH_HTB, CONFIG_NET_CLS_U32; modprobe sch_htb cls_u32), or host_qdisc: none"}}
	}
	return nil
}
