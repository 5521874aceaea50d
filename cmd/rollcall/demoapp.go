package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/demo/demoapp"
)

// runAsDemoapp runs the demo workload when rollcall was started as
// "demoapp": the demo image is this very executable, copied to /demoapp
// (engine/demo), so `rollcall demo` needs no Go toolchain nor source tree.
// It reports whether it ran, and the exit code.
func runAsDemoapp(args []string) (int, bool) {
	if len(args) == 0 || filepath.Base(args[0]) != "demoapp" {
		return 0, false
	}
	return demoapp.Main(args[1:], os.Stdout, os.Stderr), true
}

// newDemoappCmd is `rollcall demoapp [flags]`, the demo workload under its
// own name (hidden): every argument goes to it, as to cmd/demoapp.
func newDemoappCmd(e env) *cobra.Command {
	return &cobra.Command{
		Use:                "demoapp [-listen ADDR] [-version V] [-health] ...",
		Short:              "Run the demo workload (the program inside the demo image)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			if code := demoapp.Main(args, e.stdout, e.stderr); code != 0 {
				return &exitError{code: code} // demoapp has said why
			}
			return nil
		},
	}
}
