package docker

// ContainerOptions are the create options real services use beyond the
// image, command and environment: each is set at create and is part of the
// spec hash, so changing one replaces the containers. The zero value asks
// for nothing: every field left to the image or the engine.
type ContainerOptions struct {
	// Entrypoint replaces the image's; nil keeps the image's.
	Entrypoint []string
	User       string // "name", "uid", "uid:gid"; "": the image's
	WorkingDir string // absolute; "": the image's
	// Hostname is the container's own, per slot (reconcile.CreateSpec
	// derives it from the workload's); "": the engine's (the short ID).
	Hostname    string
	CapAdd      []string
	CapDrop     []string
	SecurityOpt []string
	Privileged  bool
	// Init runs an init process as PID 1; false leaves it to the daemon's
	// default.
	Init       bool
	ShmSize    int64 // bytes; 0: the engine's (64M)
	Ulimits    []Ulimit
	Sysctls    map[string]string
	ExtraHosts []string // "host:ip", as /etc/hosts takes them
	DNS        []string // IP addresses
	DNSSearch  []string
	LogDriver  string // "": the daemon's
	LogOptions map[string]string
	// Expose are ports the container exposes without publishing them:
	// "80/tcp".
	Expose []string
	// NetworkMode is "" (the networks of CreateSpec.Networks, or the
	// default bridge), NetworkHost or NetworkNone; with either, Networks
	// is empty.
	NetworkMode string
	Devices     []string // "host[:container[:perms]]"
	GroupAdd    []string
}

// Network modes of ContainerOptions.NetworkMode.
const (
	NetworkHost = "host"
	NetworkNone = "none"
)

// Ulimit is one resource limit; -1 is unlimited.
type Ulimit struct {
	Name       string
	Soft, Hard int64
}
