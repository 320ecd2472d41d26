// Package buildinfo says which build of devkit is running: the version and
// commit set at link time, else what the Go toolchain recorded. It imports
// nothing beyond the runtime, so that devkit-sup-monitor, whose memory is
// paid once per supervised process, can report the same identity as the
// devkit binary it ships with.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set at link time: -ldflags "-X github.com/devkit-go/devkit/cmd/devkit/internal/buildinfo.Version=v1.2.3".
var (
	Version = ""
	Commit  = ""
)

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// Current reports the version baked in at link time, falling back to what
// the Go toolchain recorded in the binary (module version, VCS revision).
func Current() Info {
	info := Info{Version: Version, Commit: Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}

// Build is the identity two binaries of one build share: version, commit
// and whether the tree was modified ("v1.2.3 0123abcd…", "devel 0123abcd…+modified").
func (i Info) Build() string {
	s := i.Version
	if i.Commit != "" {
		s += " " + i.Commit
	}
	if i.Modified {
		s += "+modified"
	}
	return s
}
