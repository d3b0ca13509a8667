package agent

import (
	"os"
	"runtime"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/internal/buildinfo"
	"github.com/homatb/homatb/internal/sysinfo"
)

// describeMachine says what the run's fidelity box records of this host:
// kernel, CPU, and the NIC holding addr (the host's data-plane address).
// Everything is best effort: a field the system does not tell stays empty.
func describeMachine(addr string) *agentpb.Machine {
	m := &agentpb.Machine{CpuModel: sysinfo.CPUModel(), Cpus: uint32(runtime.NumCPU()), AgentVersion: buildinfo.Version()}
	m.Hostname, _ = os.Hostname()
	m.Kernel = buildinfo.Kernel()
	if ifname, err := interfaceOf(addr); err == nil {
		m.Nic = ifname
		m.NicDriver, m.NicSpeedMbps = sysinfo.NICDriver(ifname), sysinfo.NICSpeedMbps(ifname)
	}
	return m
}
