package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// version and commit are set at release build time with -ldflags
// "-X main.version=v1.2.3 -X main.commit=abc123"; otherwise they come from
// the build info Go stamps into the binary (versionOf).
var (
	version = ""
	commit  = ""
)

// engineProbeTimeout bounds how long version waits for an engine to answer.
const engineProbeTimeout = 5 * time.Second

func newVersionCmd(e env, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rollcall's version, commit and Go version, and the engine's if one answers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, rev := buildVersion()
			fmt.Fprintf(e.stdout, "rollcall %s\n", v)
			fmt.Fprintf(e.stdout, "commit:  %s\n", rev)
			fmt.Fprintf(e.stdout, "go:      %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintf(e.stdout, "engine:  %s\n", engineVersion(cmd.Context(), e, g))
			return nil
		},
	}
}

// buildVersion reads the version and VCS commit the binary was built from.
func buildVersion() (v, rev string) {
	info, _ := debug.ReadBuildInfo()
	return versionOf(version, commit, info)
}

// noVCS is the commit line of a binary with no VCS information.
const noVCS = "unknown (no VCS information in the build: go build in a git clone stamps it, unless -buildvcs=false; go run does not)"

// versionOf is the version and commit for the -ldflags values (ldVersion,
// ldCommit; "" when unset) and the build info (nil when there is none).
// Unset values come from the build info: the version from the main
// module's, the commit from the VCS revision, time and modified flag go
// build stamps in a git clone ("abc123… 2026-03-01T12:00:00Z (modified)"),
// else from the main module's pseudo-version, which a go install of a
// commit carries ("v0.0.0-20260301120000-abcdef123456").
func versionOf(ldVersion, ldCommit string, info *debug.BuildInfo) (v, rev string) {
	v, rev = ldVersion, ldCommit
	if info == nil {
		info = &debug.BuildInfo{}
	}
	if v == "" {
		v = info.Main.Version
	}
	if v == "" {
		v = "unknown"
	}
	if rev != "" {
		return v, rev
	}
	var vcsTime string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			vcsTime = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		var ok bool
		if rev, vcsTime, ok = pseudoRevision(info.Main.Version); !ok {
			return v, noVCS
		}
		modified = strings.HasSuffix(info.Main.Version, "+dirty")
	}
	if vcsTime != "" {
		rev += " " + vcsTime
	}
	if modified {
		rev += " (modified)"
	}
	return v, rev
}

// pseudoRevision reads the revision and commit time of a module
// pseudo-version: "v0.0.0-20260301120000-abcdef123456", also with a
// pre-release before the time ("v1.2.4-0.2026…", "v1.2.3-rc.1.0.2026…")
// and "+dirty" or "+incompatible" after it.
func pseudoRevision(v string) (rev, when string, ok bool) {
	v, _, _ = strings.Cut(v, "+")
	i := strings.LastIndexByte(v, '-')
	if i < 0 {
		return "", "", false
	}
	rev, rest := v[i+1:], v[:i]
	stamp := rest[max(strings.LastIndexAny(rest, "-."), 0)+1:]
	if len(rev) != 12 || strings.Trim(rev, "0123456789abcdef") != "" || len(stamp) != 14 {
		return "", "", false
	}
	t, err := time.Parse("20060102150405", stamp)
	if err != nil {
		return "", "", false
	}
	return rev, t.UTC().Format(time.RFC3339), true
}

// engineVersion describes the engine, or why none answered; it never fails
// the command.
func engineVersion(ctx context.Context, e env, g *globals) string {
	ctx, cancel := context.WithTimeout(ctx, engineProbeTimeout)
	defer cancel()
	c, closeClient, err := connect(ctx, e, g)
	if err != nil {
		return "not reachable: " + oneLine(err.Error())
	}
	defer closeClient()
	info, err := c.Info(ctx)
	if err != nil {
		return "not reachable: " + oneLine(err.Error())
	}
	s := fmt.Sprintf("%s (API %s) at %s", info.Version, info.APIVersion, info.Endpoint)
	if info.Simulated {
		s += " (simulated)"
	}
	return s
}
