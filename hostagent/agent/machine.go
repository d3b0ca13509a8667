package agent

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/internal/buildinfo"
)

// describeMachine says what the run's fidelity box records of this host:
// kernel, CPU, and the NIC holding addr (the host's data-plane address).
// Everything is best effort: a field the system does not tell stays empty.
func describeMachine(addr string) *agentpb.Machine {
	m := &agentpb.Machine{CpuModel: cpuModel(), Cpus: uint32(runtime.NumCPU()), AgentVersion: buildinfo.Version()}
	m.Hostname, _ = os.Hostname()
	m.Kernel = buildinfo.Kernel()
	if ifname, err := interfaceOf(addr); err == nil {
		m.Nic = ifname
		m.NicDriver, m.NicSpeedMbps = nicDriver(ifname), nicSpeed(ifname)
	}
	return m
}

// cpuModel is /proc/cpuinfo's first "model name".
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// nicDriver is the interface's kernel driver as ethtool names it ("veth",
// "mlx5_core"), or sysfs's when the ioctl fails.
func nicDriver(ifname string) string {
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		info, err := unix.IoctlGetEthtoolDrvinfo(fd, ifname)
		unix.Close(fd)
		if err == nil {
			return unix.ByteSliceToString(info.Driver[:])
		}
	}
	if target, err := os.Readlink(filepath.Join("/sys/class/net", ifname, "device", "driver")); err == nil {
		return filepath.Base(target)
	}
	return ""
}

// nicSpeed is the link speed sysfs reports in Mbit/s (0 when unknown: a
// down link or a driver without one reads -1 or fails).
func nicSpeed(ifname string) int64 {
	b, err := os.ReadFile(filepath.Join("/sys/class/net", ifname, "speed"))
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}
