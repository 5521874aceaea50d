package spec

// Proxy is the reverse proxy in front of the workloads (DESIGN §3 proxy):
// the console shows what it routes to, and a drain ends once it no longer
// routes to the container being stopped. It is no part of any workload's
// spec hash: pointing rollcall at another proxy recreates nothing.
type Proxy struct {
	// CaddyAdmin is the address of Caddy's admin API: a unix socket,
	// "unix:///run/rollcall-caddy/admin.sock" (the shipped Caddyfile: no
	// workload container can reach it), or a base URL,
	// "http://127.0.0.1:2019". engine/proxy dials it.
	CaddyAdmin string
}
