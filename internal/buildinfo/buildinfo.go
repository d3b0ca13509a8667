// Package buildinfo names the build of the running homatb binary, so that
// an orchestrator and the agents it drives on other machines can check that
// they run the same code.
package buildinfo

import (
	"runtime/debug"
	"strings"
	"syscall"
)

// commit is the git commit the Makefile links in (-ldflags "-X
// .../buildinfo.commit=..."), for builds that carry no VCS settings: Go
// records none in a git worktree or with -buildvcs=false. It is set by the
// linker and never written at run time.
var commit string

// Version is the module version and VCS revision of the running binary
// ("(devel) 1a2b3c...", with "+dirty" for uncommitted changes), or
// "unknown" when the binary carries no build information.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := revision(info, commit)
	if rev == "" {
		return info.Main.Version + " (commit unknown: build with make)"
	}
	return info.Main.Version + " " + rev + dirty
}

// Commit is the git commit the running binary was built from ("" when
// unknown).
func Commit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return commit
	}
	rev, _ := revision(info, commit)
	return rev
}

// revision is the build's VCS revision, with "+dirty" for uncommitted
// changes; linked is the commit the linker set, used when Go recorded
// none. A linked commit may end in "+dirty" itself.
func revision(info *debug.BuildInfo, linked string) (rev, dirty string) {
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
	if rev == "" {
		return linked, ""
	}
	return rev, dirty
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
