// Command caddy is Caddy with its standard modules, `dynamic rollcall` and
// the handler rollcall_cohorts (rollcallup), for rollcall's zero-downtime
// and canary tests and examples/Caddyfile.
// It is the main package of examples/caddy's own Go module, so that
// rollcall's module never needs Caddy; build.sh builds it.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/rollcall/rollcall/examples/caddy/rollcallup"
)

func main() {
	caddycmd.Main()
}
