package reconcile

import (
	"maps"
	"slices"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// containerOptions are the create options of w's container in slot: the
// workload's, with the hostname made the slot's: with replicas above 1,
// "<hostname>-<slot>" (web-0, web-1, …), as the operators expect
// of replicas; with one, the hostname as written. Which of the two is in
// the spec hash (spec.Hash), so a scale across 1 rolls the hostnames.
func containerOptions(w *spec.Workload, slot string) docker.ContainerOptions {
	o := w.Options
	out := docker.ContainerOptions{
		Entrypoint:  slices.Clone(o.Entrypoint),
		User:        o.User,
		WorkingDir:  o.WorkingDir,
		Hostname:    slotHostname(o.Hostname, slot, w.Replicas),
		CapAdd:      slices.Clone(o.CapAdd),
		CapDrop:     slices.Clone(o.CapDrop),
		SecurityOpt: slices.Clone(o.SecurityOpt),
		Privileged:  o.Privileged,
		Init:        o.Init,
		ShmSize:     o.ShmSize,
		Sysctls:     maps.Clone(o.Sysctls),
		ExtraHosts:  slices.Clone(o.ExtraHosts),
		DNS:         slices.Clone(o.DNS),
		DNSSearch:   slices.Clone(o.DNSSearch),
		LogDriver:   o.LogDriver,
		LogOptions:  maps.Clone(o.LogOptions),
		Expose:      slices.Clone(o.Expose),
		NetworkMode: o.NetworkMode,
		Devices:     slices.Clone(o.Devices),
		GroupAdd:    slices.Clone(o.GroupAdd),
	}
	for _, u := range o.Ulimits {
		out.Ulimits = append(out.Ulimits, docker.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	return out
}

// slotHostname is the hostname of slot (an index, or a Swarm's
// placeholder for one): "h-<slot>" with replicas above 1, h otherwise.
func slotHostname(h, slot string, replicas int) string {
	if h == "" || replicas <= 1 {
		return h
	}
	return h + "-" + slot
}

// desiredEntrypoint is the entrypoint w's containers run: the workload's
// own, or the image's (nil when that is unknown).
func desiredEntrypoint(w *spec.Workload, cfg docker.ContainerConfig) []string {
	if w.Options.Entrypoint != nil {
		return w.Options.Entrypoint
	}
	return cfg.ImageEntrypoint
}

// desiredNetworks are the networks w's containers are on, as the engine
// reports them: the network mode's (host, none) when the workload has one.
func desiredNetworks(w *spec.Workload) []string {
	if w.Options.NetworkMode != "" {
		return []string{w.Options.NetworkMode}
	}
	return w.Networks
}

// PrivilegedNote is the plan tree's line under a workload whose containers
// run privileged (WorkloadPlan.Privileged).
const PrivilegedNote = "privileged: its containers get every capability and device of the host"
