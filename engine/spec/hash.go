package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// Hash is the spec hash: it covers every field that needs a new container
// (image reference and the image ID it resolved to, version, command,
// environment, labels, ports, healthcheck, stop signal, networks). It leaves
// out replicas, resources and the restart policy, which change in place, the
// stop grace period, which is passed at stop time, and the update policy.
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
	networks := append([]string(nil), w.Networks...)
	sort.Strings(networks)
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
		Networks    []string
	}{w.Image, imageID, w.Version, w.Command, env, labels, w.Ports, w.Healthcheck, w.StopSignal, networks}
	b, err := json.Marshal(canon)
	if err != nil {
		panic("spec: hash: " + err.Error()) // plain data always marshals
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func sortStrings(s []string) { sort.Strings(s) }
