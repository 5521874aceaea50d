// Command demoapp is the tiny HTTP workload that rollcall's demo, tests and
// benchmarks roll; see package engine/demo/demoapp. Tests build it with
// CGO_ENABLED=0 into a FROM scratch image.
package main

import (
	"os"

	"github.com/rollcall/rollcall/engine/demo/demoapp"
)

func main() { os.Exit(demoapp.Main(os.Args[1:], os.Stdout, os.Stderr)) }
