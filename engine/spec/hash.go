package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"time"
)

// Hash is the spec hash: it covers every field that needs a new container
// (image reference and the image ID it resolved to, version, command,
// environment, labels, ports, healthcheck, stop signal, networks with their
// aliases, pre_stop, mounts, a read-only root and the create options). It
// leaves out replicas, resources and the restart policy, which change in
// place, the stop grace period, which is passed at stop time, and the
// update policy (drain included). Of the replicas one fact is in, when the
// workload sets a hostname: whether there is more than one, which makes
// the hostname per slot.
//
// pre_stop is in because it is kept in a label at create: a container whose
// label holds another command is not what the desired state asks for. It is
// left out of the encoding when empty, and so are the aliases, the mounts
// and read_only, so adding the fields changed no hash of a workload that
// uses none of them. Networks are
// encoded with their aliases, so the one-off hash change of a workload with
// networks rolls its containers onto the workload-name alias they lacked.
//
// The create options (options.go) are in the same way: left out when
// none is set, so a workload without options kept its hash.
//
// On a swarm (Workload.Swarm set) the hash also covers what Swarm keeps in
// the task template or the endpoint spec and recreates every task for
// (swarm.go): the endpoint mode, the restart policy, the reservations,
// and the resources and stop grace period, which a plain engine changes
// in place or passes at stop time. The placement and the service labels
// stay out (SwarmService). A workload on a plain engine has no Swarm: its
// hash is what it always was.
//
// The resolved image ID is part of the hash (DESIGN §4 names containers
// <prefix>-<workload>-<slot>-<hash[:8]>): a tag rebuilt to a new image then
// gets a new container name, so old and new can live side by side in one slot.
func Hash(w *Workload, imageID string) string {
	env := make([]string, 0, len(w.Environment))
	for k, v := range w.Environment {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	labels := make([]string, 0, len(w.Labels))
	for k, v := range w.Labels {
		labels = append(labels, k+"="+v)
	}
	sort.Strings(labels)
	// Every network is encoded with its aliases, sorted by name.
	type network struct {
		Name    string
		Aliases []string `json:",omitempty"`
	}
	var networks []network
	for _, n := range w.Networks {
		a := append([]string(nil), w.Aliases[n]...)
		sort.Strings(a)
		networks = append(networks, network{n, a})
	}
	sort.Slice(networks, func(i, j int) bool { return networks[i].Name < networks[j].Name })
	// Mounts by target, each as what the container sees: a bind's host
	// path, a volume's engine name (the slot's own: "", named per slot at
	// create). What a bind-mounted file holds is not in it: a changed file
	// rolls nothing.
	type mount struct {
		Type     MountType
		Source   string `json:",omitempty"`
		Target   string
		ReadOnly bool  `json:",omitempty"`
		Size     int64 `json:",omitempty"`
	}
	var mounts []mount
	for _, m := range w.Mounts {
		src := m.Source
		if m.Type == MountVolume {
			src = m.Volume
		}
		mounts = append(mounts, mount{m.Type, src, m.Target, m.ReadOnly, m.Size})
	}
	sort.Slice(mounts, func(i, j int) bool { return mounts[i].Target < mounts[j].Target })
	// A struct with fixed field order gives a canonical encoding.
	canon := struct {
		Image       string
		ImageID     string
		Version     string
		Command     []string
		Env         []string
		Labels      []string
		Ports       []Port
		Healthcheck *Healthcheck
		StopSignal  string
		Networks    []network
		PreStop     []string `json:",omitempty"`
		Mounts      []mount  `json:",omitempty"`
		ReadOnly    bool     `json:",omitempty"`
		Options     *Options `json:",omitempty"`
		// SlotHostnames: the hostname is per slot (replicas above 1).
		SlotHostnames bool `json:",omitempty"`
		// Swarm: the task template's and endpoint's own (swarmHash).
		Swarm *swarmTask `json:",omitempty"`
	}{w.Image, imageID, w.Version, w.Command, env, labels, w.Ports, w.Healthcheck, w.StopSignal, networks, w.PreStop, mounts, w.ReadOnly, hashOptions(w), w.Options.Hostname != "" && w.Replicas > 1, swarmHash(w)}
	b, err := json.Marshal(canon)
	if err != nil {
		panic("spec: hash: " + err.Error()) // plain data always marshals
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// swarmTask is what a swarm workload's hash covers beyond a plain
// engine's.
type swarmTask struct {
	EndpointMode EndpointMode
	Restart      SwarmRestart
	Resources    Resources
	Reservations Resources
	StopGrace    time.Duration
}

// swarmHash is nil on a plain engine, which leaves it out of the encoding.
func swarmHash(w *Workload) *swarmTask {
	if w.Swarm == nil {
		return nil
	}
	s := w.Swarm
	return &swarmTask{s.EndpointMode, s.Restart, w.Resources, s.Reservations, w.StopGrace}
}

func sortStrings(s []string) { sort.Strings(s) }
