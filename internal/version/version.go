package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set by the linker for release builds (see the package comment).
var (
	version string
	commit  string
)

// Info describes the running build.
type Info struct {
	Version   string `json:"version"`    // a release ("0.1.0"), a Go module version, or "devel"
	Commit    string `json:"commit"`     // the VCS revision, "+dirty" when modified, or "unknown"
	GoVersion string `json:"go_version"` // the toolchain that built the binary
}

// Get returns the running build's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, bi)
}

// resolve merges the link-time values with bi (nil when unavailable).
func resolve(linkVersion, linkCommit string, bi *debug.BuildInfo) Info {
	in := Info{Version: strings.TrimPrefix(linkVersion, "v"), Commit: linkCommit, GoVersion: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = strings.TrimPrefix(bi.Main.Version, "v")
		}
		if in.Commit == "" {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" && modified == "true" {
				rev += "+dirty"
			}
			in.Commit = rev
		}
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	return in
}

// String is the text `signalbox version` prints.
func (in Info) String() string {
	return fmt.Sprintf("signalbox %s\ncommit: %s\ngo: %s %s/%s\n", in.Version, in.Commit, in.GoVersion, runtime.GOOS, runtime.GOARCH)
}
