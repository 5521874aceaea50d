// Command caddy is Caddy with its standard modules, `dynamic rollcall` and
// the handler rollcall_cohorts (rollcallup), for rollcall's zero-downtime
// and canary tests and examples/Caddyfile.
// build.sh copies this file and rollcallup into a throwaway module outside
// the repository.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/rollcall/rollcall/examples/caddy/rollcallup"
)

func main() {
	caddycmd.Main()
}
