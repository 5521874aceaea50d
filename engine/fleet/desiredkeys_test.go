package fleet

import (
	"reflect"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source/load"
	"github.com/rollcall/rollcall/engine/spec"
)

// A change to any key of a several-host file reaches every host's
// session. The keys are spec.Desired's fields: one added later fails
// this test until it has a case here, or a reason no host acts on it.
// A change that leaves the workloads as they are begins no rollout and
// touches no engine: the sessions take it without planning again.
func TestEveryKeyOfTheFileReachesEveryHost(t *testing.T) {
	type change struct {
		key   string // the field of spec.Desired
		text  string // what the file gains (the workloads: their image)
		sees  func(*spec.Desired) bool
		plans bool // a new plan: a rollout, engine calls
	}
	changes := []change{
		{key: "Workloads", text: "web:v1", plans: true,
			sees: func(d *spec.Desired) bool { return d.Workloads["web"] != nil && d.Workloads["web"].Image == "web:v1" }},
		{key: "Notify", text: "notify:\n  - http://127.0.0.1:9/hook\n",
			sees: func(d *spec.Desired) bool { return len(d.Notify) == 1 && d.Notify[0].URL == "http://127.0.0.1:9/hook" }},
		{key: "Proxy", text: "proxy: {caddy_admin: \"http://127.0.0.1:9\"}\n",
			sees: func(d *spec.Desired) bool { return d.Proxy != nil && d.Proxy.CaddyAdmin == "http://127.0.0.1:9" }},
		{key: "RegistryPoll", text: "registry_poll: 30s\n",
			sees: func(d *spec.Desired) bool { return d.RegistryPoll == 30*time.Second }},
		{key: "Volumes", text: "volumes: {data: {}}\n",
			sees: func(d *spec.Desired) bool { return d.Volumes["data"] != nil }},
	}
	// The fields no host's session is handed a change of, and why.
	notHanded := map[string]string{
		"Source":   "where the file was read from, not a key of it",
		"Prefix":   "a running fleet refuses a new prefix: a restart changes it",
		"Hosts":    "the fleet's own: a host's copy has none, and a running fleet refuses other hosts",
		"Fleet":    "the fleet's own (its waves): a host's copy has none",
		"Host":     "not a key: ForHost names the host in each host's copy",
		"Warnings": "not a key: findings of the load, which come with the key that causes them",
		"Engine":   "a several-host file is on plain engines: `engine: swarm` refuses hosts:, so no host is handed another engine",
	}
	covered := map[string]bool{}
	for _, c := range changes {
		covered[c.key] = true
	}
	for f := range reflect.TypeFor[spec.Desired]().Fields() {
		if _, ok := notHanded[f.Name]; !ok && !covered[f.Name] {
			t.Errorf("spec.Desired.%s has no case: change it in a several-host file and check every host's session sees it", f.Name)
		}
	}

	w := newWorld(t, abc...)
	w.seed("web:v2", 2)
	image, extra := "web:v2", ""
	file := func() string { return fleetYAML(image, 2, abc) + extra }
	r := w.fleet(file(), session.ModeAuto)
	r.start()
	r.drive("done", doneAll)
	for _, c := range changes {
		before, calls := r.last, len(w.mutations())
		if c.plans {
			image = c.text
		} else {
			extra += c.text
		}
		r.src.Set(file())
		snap := r.drive(c.key+" seen by every host's session, done", func(s Snapshot) bool {
			if !doneAll(s) || len(s.Hosts) != len(abc) {
				return false
			}
			for _, h := range s.Hosts {
				if d := h.Session.Desired; d == nil || d.Host != h.Name || !c.sees(d) {
					return false
				}
			}
			return true
		})
		if c.plans {
			if len(w.mutations()) == calls || snap.RolloutID == before.RolloutID {
				t.Errorf("%s: changed workloads rolled nothing (rollout %q)", c.key, snap.RolloutID)
			}
			continue
		}
		if m := w.mutations(); len(m) != calls {
			t.Errorf("%s: a change with the same workloads touched an engine: %+v", c.key, m[calls:])
		}
		if snap.RolloutID != before.RolloutID {
			t.Errorf("%s: a change with the same workloads began rollout %q (was %q)", c.key, snap.RolloutID, before.RolloutID)
		}
	}
}

// A host handed a change beside its workloads (handOver) keeps the plan
// its session has: until the session shows the state handed over, the
// fleet reads its plan as that of the state it replaced, not as unknown
// (which would hold the host and the waves after it). A state of new
// workloads is unknown until the session resolves them.
func TestHandOverKeepsThePlanKnown(t *testing.T) {
	d, err := load.Parse("fleet.yaml", []byte(fleetYAML("web:v2", 2, abc)))
	if err != nil {
		t.Fatal(err)
	}
	loaded, _ := d.ForHost("a")
	handed := *loaded
	handed.Notify = []spec.Webhook{{URL: "http://127.0.0.1:9/hook"}}
	fresh, _ := d.ForHost("a")
	s := session.Snapshot{Seq: 1, Desired: loaded, Connected: true, Fresh: true, Steady: true,
		Standing: session.Standing{Kind: session.StandingConverged},
		Resolved: &spec.ResolvedDesired{Prefix: loaded.Prefix, Workloads: []spec.Resolved{{Workload: loaded.Workloads["web"]}}}}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	_, h := oneHostRun(loaded, t0)
	h.observe(s, t0) // the session decided converged of the state it loaded
	for _, c := range []struct {
		name string
		want *spec.Desired
		is   PlanState
	}{
		{"the state it loaded", loaded, PlanConverged},
		{"handed over beside the same workloads", &handed, PlanConverged},
		{"new workloads, not resolved yet", fresh, PlanUnknown},
	} {
		h.want = c.want
		if got := h.planState(); got != c.is {
			t.Errorf("%s: plan state %v, want %v", c.name, got, c.is)
		}
	}
}
