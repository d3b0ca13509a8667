// Package sysinfo reads what this machine is and how busy it is from
// /proc and sysfs: the CPU model, a NIC's driver and speed (the host
// agent's description of its host), and the CPUs' load over a span with
// the share of processes outside a tree (the orchestrator's fidelity
// checks). Everything is best effort: what the system does not tell reads
// as zero.
package sysinfo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CPUModel is /proc/cpuinfo's first "model name", "" when unknown.
func CPUModel() string {
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

// NICDriver is the interface's kernel driver as ethtool names it ("veth",
// "mlx5_core"), or sysfs's when the ioctl fails; "" when unknown.
func NICDriver(ifname string) string {
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

// NICSpeedMbps is the link speed sysfs reports in Mbit/s (0 when unknown:
// a down link or a driver without one reads -1 or fails).
func NICSpeedMbps(ifname string) int64 {
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
