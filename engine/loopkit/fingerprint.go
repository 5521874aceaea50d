package loopkit

import (
	"encoding/json"

	"github.com/rollcall/rollcall/engine/spec"
)

// Fingerprint tells desired states apart by everything a session acts
// on: every field of spec.Desired but Source (where it was read from, for
// messages). Two desired states of one fingerprint are the same to a
// session; a fleet hands a host every desired state whose fingerprint
// changed, so a change to any key of the file reaches the hosts. "" for
// nil.
func Fingerprint(d *spec.Desired) string {
	if d == nil {
		return ""
	}
	cp := *d
	cp.Source = ""
	return marshal(cp)
}

// PlanFingerprint tells desired states apart by what a plan is diffed
// from: the prefix and the workloads. Equal ones need no new plan, no new
// settle time and no new approval: a session takes a change of its other
// keys (notify, proxy, registry_poll, ...) as it comes, without planning
// again.
func PlanFingerprint(d *spec.Desired) string {
	if d == nil {
		return ""
	}
	return marshal(struct {
		Prefix    string
		Workloads map[string]*spec.Workload
	}{d.Prefix, d.Workloads})
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("loopkit: fingerprint: " + err.Error()) // plain data always marshals
	}
	return string(b)
}
