package spec

import (
	"encoding/json"
)

// Options are the create options real services use beyond image, command
// and environment (issue 28): each is set when a container is created, and
// is in the spec hash, so changing one replaces the containers. The zero
// value leaves every one to the image or the engine.
type Options struct {
	// Entrypoint replaces the image's; nil keeps it.
	Entrypoint []string `json:",omitempty"`
	User       string   `json:",omitempty"`
	WorkingDir string   `json:",omitempty"`
	// Hostname is the hostname of slot 0; slot n > 0 is "<Hostname>-n"
	// (reconcile.CreateSpec), so a slot's hostname does not change with
	// the replicas, which change in place.
	Hostname    string   `json:",omitempty"`
	CapAdd      []string `json:",omitempty"`
	CapDrop     []string `json:",omitempty"`
	SecurityOpt []string `json:",omitempty"`
	Privileged  bool     `json:",omitempty"`
	Init        bool     `json:",omitempty"`
	ShmSize     int64    `json:",omitempty"` // bytes
	// Ulimits are sorted by name.
	Ulimits    []Ulimit          `json:",omitempty"`
	Sysctls    map[string]string `json:",omitempty"`
	ExtraHosts []string          `json:",omitempty"` // "host:ip"
	DNS        []string          `json:",omitempty"` // IP addresses
	DNSSearch  []string          `json:",omitempty"`
	LogDriver  string            `json:",omitempty"`
	LogOptions map[string]string `json:",omitempty"`
	Expose     []string          `json:",omitempty"` // "80/tcp"
	// NetworkMode is "", NetworkHost or NetworkNone. With either, the
	// workload lists no networks and publishes no ports.
	NetworkMode string   `json:",omitempty"`
	Devices     []string `json:",omitempty"` // "host:container:perms", all three
	GroupAdd    []string `json:",omitempty"`
}

// Ulimit is one resource limit; -1 is unlimited.
type Ulimit struct {
	Name       string
	Soft, Hard int64
}

// Network modes of network_mode.
const (
	NetworkHost = "host"
	NetworkNone = "none"
)

// IsZero reports whether o asks for nothing (an empty map or list counts
// as none).
func (o Options) IsZero() bool {
	b, err := json.Marshal(o)
	return err == nil && string(b) == "{}"
}

// hashOptions is nil when w sets no option, which leaves them out of the
// encoding.
func hashOptions(w *Workload) *Options {
	if w.Options.IsZero() {
		return nil
	}
	return &w.Options
}
