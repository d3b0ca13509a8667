// Package buildinfo names the build of the running homatb binary, so that
// an orchestrator and the agents it drives on other machines can check that
// they run the same code.
package buildinfo

import (
	"runtime/debug"
	"strings"
	"syscall"
)

// Version is the module version and VCS revision of the running binary
// ("(devel) 1a2b3c...", with "+dirty" for uncommitted changes), or
// "unknown" when the binary carries no build information.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		v += " " + rev + dirty
	}
	return v
}

// Kernel is the running kernel's release (uname -r), or "".
func Kernel() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	var sb strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
