package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
)

// version is set at release build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version from the build info is used.
var version = ""

// engineProbeTimeout bounds how long version waits for an engine to answer.
const engineProbeTimeout = 5 * time.Second

func newVersionCmd(e env, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rollcall's version, commit and Go version, and the engine's if one answers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, commit := buildVersion()
			fmt.Fprintf(e.stdout, "rollcall %s\n", v)
			fmt.Fprintf(e.stdout, "commit:  %s\n", commit)
			fmt.Fprintf(e.stdout, "go:      %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintf(e.stdout, "engine:  %s\n", engineVersion(cmd.Context(), e, g))
			return nil
		},
	}
}

// buildVersion reads the version and VCS commit the binary was built from.
func buildVersion() (v, commit string) {
	v, commit = version, "unknown"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if v == "" {
			v = "unknown"
		}
		return v, commit
	}
	if v == "" {
		v = info.Main.Version
	}
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && commit != "unknown" {
		commit += " (modified)"
	}
	return v, commit
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
