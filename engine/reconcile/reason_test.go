package reconcile

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// reasonFits is the action, and for a wait its kind, that each kind of
// reason goes with.
var reasonFits = map[ReasonKind]struct {
	action Action
	wait   WaitKind
}{
	ReasonMissing: {ActStart, ""}, ReasonRoll: {ActStart, ""}, ReasonBlueGreen: {ActStart, ""}, ReasonCanaryStart: {ActStart, ""},
	ReasonStopFirst: {ActRoll, ""}, ReasonReplaced: {ActRoll, ""}, ReasonOrphan: {ActRoll, ""},
	ReasonDuplicate: {ActStop, ""}, ReasonSurplus: {ActStop, ""}, ReasonCold: {ActStop, ""}, ReasonExtra: {ActStop, ""},
	ReasonRollback: {ActStop, ""}, ReasonRolledBack: {ActStop, ""}, ReasonNeverStarted: {ActStop, ""},
	ReasonCrashed: {ActRestart, ""}, ReasonOldDown: {ActRestart, ""}, ReasonLimits: {ActUpdate, ""}, ReasonCanaryStep: {ActCanary, ""}, ReasonPull: {ActPull, ""},
	ReasonQueued: {ActWait, WaitQueue}, ReasonRestartQueued: {ActWait, WaitQueue}, ReasonBlueGreenWait: {ActWait, WaitBlueGreen},
	ReasonDelay: {ActWait, WaitDelay}, ReasonDependency: {ActWait, WaitDependency},
	ReasonCanaryFirst: {ActWait, WaitCanary}, ReasonCanaryHeld: {ActWait, WaitCanary},
	ReasonStarting: {ActWait, WaitBoot}, ReasonBooting: {ActWait, WaitBoot}, ReasonReady: {ActWait, WaitReady},
	ReasonRestarting: {ActWait, WaitRestarting}, ReasonPaused: {ActWait, WaitPaused}, ReasonBackoff: {ActWait, WaitBackoff},
}

// Every step of every plan, and every then row and failure, says why as
// data, and its words are that data's: Reason is Why.String(), and the
// kind fits the step. A step whose words were written on their own (a
// Sprintf left somewhere in Diff) fails here. Several states a check, as
// some kinds (a held canary, a workload-wide restart queue) are rare draws;
// over the run, every kind of reason comes up, so no site goes unchecked.
func TestEveryReasonIsRenderedFromItsFields(t *testing.T) {
	seen := map[ReasonKind]bool{}
	rapid.Check(t, func(t *rapid.T) {
		for range 8 {
			d, o := genWideState(t)
			p := Diff(d, o)
			AddThen(d, o, &p)
			for _, wp := range p.Workloads {
				for _, f := range wp.Failures {
					if f.Why.Kind != ReasonHealthDeadline || f.Reason != f.Why.String() {
						t.Fatalf("failure %s: why %+v, reason %q, rendered %q", f.Container, f.Why, f.Reason, f.Why.String())
					}
					seen[f.Why.Kind] = true
				}
				for _, s := range append(append([]Step(nil), wp.Steps...), wp.Then...) {
					fits, ok := reasonFits[s.Why.Kind]
					switch {
					case !ok:
						t.Fatalf("%s (then %v): reason kind %q, reason %q", brief(s), s.Then, s.Why.Kind, s.Reason)
					case s.Reason != s.Why.String():
						t.Fatalf("%s (then %v): reason %q, but its Why (%s) renders %q", brief(s), s.Then, s.Reason, s.Why.Kind, s.Why.String())
					case s.Action != fits.action || s.Wait != fits.wait:
						t.Fatalf("%s (then %v): a %s reason on a %s step waiting for %q", brief(s), s.Then, s.Why.Kind, s.Action, s.Wait)
					case s.Why.Kind == ReasonReplaced && s.Why.Pending != s.Then:
						t.Fatalf("%s (then %v): a roll pending %v", brief(s), s.Then, s.Why.Pending)
					}
					seen[s.Why.Kind] = true
				}
			}
		}
	})
	if t.Failed() {
		return
	}
	for _, k := range declaredKinds(t) {
		if !seen[k] {
			t.Errorf("no plan drawn had a %s reason: the generator misses that site", k)
		}
	}
}

// declaredKinds are the ReasonKind constants of reason.go, read from its
// source so that a kind added there is in the tests below too.
func declaredKinds(t *testing.T) []ReasonKind {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reason.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []ReasonKind
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "ReasonKind" {
				continue
			}
			for _, val := range v.Values {
				lit := val.(*ast.BasicLit)
				kinds = append(kinds, ReasonKind(lit.Value[1:len(lit.Value)-1]))
			}
		}
	}
	if len(kinds) == 0 {
		t.Fatal("reason.go declares no ReasonKind")
	}
	return kinds
}

// genWideState draws a desired and an observed state as genDesired and
// genObserved do, with what they leave out besides: canaries and their
// progress, an operator's rollback, paused containers, restarts in flight,
// restarts rollcall issued, OOM kills, a forced recreate and draining
// containers; and now and then one workload in a scene that random
// containers seldom make (a health failure across it, a roll whose new
// containers miss their deadline, a canary that holds, an engine back from
// a crash mid-roll), so that every kind
// of step and reason comes up.
func genWideState(t *rapid.T) (*spec.ResolvedDesired, *Observed) {
	d := genDesired(t)
	for i := range d.Workloads {
		w := &d.Workloads[i]
		if w.Err == nil && rapid.IntRange(0, 3).Draw(t, w.Name+"-canary") == 0 {
			withCanary(w.Workload) // not part of the spec hash
		}
	}
	o := genObserved(t, d)
	for i := range o.Containers {
		c := &o.Containers[i]
		switch rapid.IntRange(0, 15).Draw(t, "extra-state") {
		case 0:
			c.State, c.Health = docker.StatePaused, docker.HealthNone
		case 1:
			setIn(&o.Restarting, c.ID)
		case 2:
			o.Restarts[c.ID] = rapid.IntRange(1, 8).Draw(t, "restarted")
		case 3:
			setIn(&o.Draining, c.ID)
		case 4:
			c.OOMKilled = c.State == docker.StateExited
		}
	}
	for _, w := range d.Workloads {
		if w.Err != nil {
			continue
		}
		genScene(t, &w, o)
		if w.Update.Canary != nil {
			switch rapid.IntRange(0, 3).Draw(t, w.Name+"-progress") {
			case 1:
				setCanary(o, w.Name, CanaryProgress{Spec: w.Hash, Passed: 1})
			case 2:
				setCanary(o, w.Name, CanaryProgress{Spec: w.Hash, Passed: rapid.IntRange(0, 1).Draw(t, "held-at"), Held: tooLittleTraffic(&w)})
			case 3:
				setCanary(o, w.Name, CanaryProgress{Spec: "another", Passed: 2})
			}
		}
		if rapid.IntRange(0, 5).Draw(t, w.Name+"-rolling-back") == 0 {
			if o.RollingBack == nil {
				o.RollingBack = map[string]string{}
			}
			o.RollingBack[w.Name] = w.Hash
		}
		if rapid.IntRange(0, 7).Draw(t, w.Name+"-recreate") == 0 {
			if o.RecreateBefore == nil {
				o.RecreateBefore = map[string]time.Time{}
			}
			o.RecreateBefore[w.Name] = t0.Add(-time.Duration(rapid.IntRange(0, 300).Draw(t, "recreate-age")) * time.Second)
		}
	}
	if len(d.Workloads) >= 2 && rapid.IntRange(0, 3).Draw(t, "depends") == 0 {
		// A cold start of a slot that waits for its dependency, which
		// runs nothing yet (depends_on; not part of the spec hash).
		a, b := &d.Workloads[0], &d.Workloads[1]
		if a.Replicas > 0 && b.Replicas > 0 {
			a.DependsOn = []spec.Dependency{{Workload: b.Name, Condition: spec.DependHealthy}}
			kept := o.Containers[:0]
			for _, c := range o.Containers {
				if w := c.Labels[docker.WorkloadLabel(pfx)]; w != b.Name && (w != a.Name || c.Labels[docker.SlotLabel(pfx)] != "0") {
					kept = append(kept, c)
				}
			}
			o.Containers = kept
		}
	}
	if rapid.IntRange(0, 5).Draw(t, "pulls") == 0 {
		markPulls(t, d) // rule 0: a workload whose image is pulled first
	}
	return d, o
}

// genScene may put workload w's containers in a scene of their own.
func genScene(t *rapid.T, w *spec.Resolved, o *Observed) {
	one := &spec.ResolvedDesired{Prefix: pfx, Workloads: []spec.Resolved{*w}}
	var cs []docker.Container
	add := func(c docker.Container) {
		c.ID = fmt.Sprintf("s%02d", len(o.Containers)+len(cs))
		c.Name += "-" + c.ID
		cs = append(cs, c)
	}
	switch rapid.IntRange(0, 7).Draw(t, w.Name+"-scene") {
	case 0: // a dependency down: every settled container turns unhealthy
		if w.Healthcheck == nil {
			return
		}
		for slot := range w.Replicas {
			add(fresh(one, w.Name, slot, unhealthy))
		}
	case 1: // a roll whose new containers miss their health deadline
		for slot := range w.Replicas {
			add(stale(one, w.Name, slot))
			add(fresh(one, w.Name, slot, func(c *docker.Container) {
				c.Health, c.HealthySinceStart = docker.HealthStarting, false
				c.Created, c.StartedAt = t0.Add(-2*w.Update.HealthDeadline), t0.Add(-2*w.Update.HealthDeadline)
			}))
		}
	case 2: // a canary beside the old container of slot 0 that held on too little traffic
		if w.Replicas == 0 {
			return
		}
		withCanary(w.Workload)
		for slot := range w.Replicas {
			add(stale(one, w.Name, slot))
		}
		add(fresh(one, w.Name, 0))
		setCanary(o, w.Name, CanaryProgress{Spec: w.Hash, Held: tooLittleTraffic(w)})
	case 3: // an engine back after it went away mid-roll: the old containers
		// exited, the new ones created and never started (issue 26 row 15)
		for slot := range w.Replicas {
			add(stale(one, w.Name, slot, exited(0)))
			add(fresh(one, w.Name, slot, func(c *docker.Container) {
				c.State, c.Health, c.HealthySinceStart = docker.StateCreated, docker.HealthNone, false
				c.Created, c.StartedAt = t0.Add(-2*w.Update.HealthDeadline), time.Time{}
			}))
		}
	case 4: // a roll paced by update.delay: slot 0 finished a moment ago
		if w.Replicas < 2 || w.Update.Strategy != spec.StrategyRolling || w.Update.Canary != nil {
			return
		}
		w.Update.Delay = time.Minute // not part of the spec hash
		add(fresh(one, w.Name, 0, func(c *docker.Container) { c.Created, c.StartedAt = t0.Add(-time.Second), t0.Add(-time.Second) }))
		for slot := 1; slot < w.Replicas; slot++ {
			add(stale(one, w.Name, slot))
		}
	default:
		return
	}
	kept := o.Containers[:0]
	for _, c := range o.Containers {
		if c.Labels[docker.WorkloadLabel(pfx)] != w.Name {
			kept = append(kept, c)
		}
	}
	o.Containers = append(kept, cs...)
}

// tooLittleTraffic is the judgement of a canary step of w that ended
// with too few requests.
func tooLittleTraffic(w *spec.Resolved) *Judgement {
	j := Judge(w.Update.Canary.Analysis, time.Minute, CohortFigures{Requests: 900}, CohortFigures{Requests: 12}, true)
	return &j
}

func setIn(m *map[string]bool, id string) {
	if *m == nil {
		*m = map[string]bool{}
	}
	(*m)[id] = true
}

func setCanary(o *Observed, workload string, p CanaryProgress) {
	if o.Canary == nil {
		o.Canary = map[string]CanaryProgress{}
	}
	o.Canary[workload] = p
}

// Diff's code writes no step's or failure's words but through explain:
// every other place says why in a Reason, so the words cannot drift from
// the data (a Reason: or .Reason = left in a literal or an assignment
// fails here, even one explain would overwrite).
func TestOnlyExplainWritesReasons(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if ok && fn.Name.Name == "explain" && name == "reason.go" {
				continue
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.KeyValueExpr:
					if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Reason" {
						t.Errorf("%s: a literal writes Reason; set Why", fset.Position(n.Pos()))
					}
				case *ast.AssignStmt:
					for _, lhs := range n.Lhs {
						if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Reason" {
							t.Errorf("%s: an assignment writes Reason; set Why", fset.Position(n.Pos()))
						}
					}
				}
				return true
			})
		}
	}
	if checked == 0 {
		t.Fatal("no source files read")
	}
}

// Each kind of reason renders its words from its fields, as the plan, the
// journal and the console print them.
func TestReasonString(t *testing.T) {
	const old, repl = "rollcall-web-0-01234567", "rollcall-web-0-89abcdef"
	image := []Drift{{DriftImage, "web:v1", "web:v2"}, {DriftVersion, "1", "2"}}
	hc := &spec.Healthcheck{Retries: 3, StartPeriod: 5 * time.Second}
	step := &CanaryStep{Index: 0, Of: 2, Share: 0.05, For: time.Minute, Analysis: spec.Analysis{Interval: 10 * time.Second}}
	held := Judgement{Verdict: VerdictInsufficient, Check: CheckMinRequests, Measured: 3, Limit: 100, Window: time.Minute,
		Stable: CohortFigures{Requests: 900}, Canary: CohortFigures{Requests: 3}}
	cases := []struct {
		why  Reason
		want string
	}{
		{Reason{Kind: ReasonMissing, Slot: 1, Replicas: 3}, "missing: slot 1 of 3"},
		{Reason{Kind: ReasonRoll, Drift: image, Image: "web:v2", Serving: old},
			"roll: image web:v1 → web:v2, version 1 → 2; " + old + " keeps serving"},
		{Reason{Kind: ReasonBlueGreen, Drift: []Drift{{Field: DriftLegacy}}, Serving: old},
			"blue-green: legacy: no spec label; " + old + " keeps serving"},
		{Reason{Kind: ReasonCanaryStart, Drift: image, Image: "web:v2", Serving: old},
			"canary: image web:v1 → web:v2, version 1 → 2; " + old + " keeps serving until the canary passed"},
		{Reason{Kind: ReasonStopFirst, Drift: []Drift{{Field: DriftRecreate, Want: "12:00:00"}}},
			"stop-first: slot down until the new container is healthy; recreate requested at 12:00:00"},
		{Reason{Kind: ReasonStopFirst, Drift: []Drift{{Field: DriftRecreate, Want: "12:00:00"}}, StopFirst: spec.StopFirstData,
			StopFirstWhat: "volume pgdata", LastDown: 4200 * time.Millisecond},
			"stop-first (one replica writes volume pgdata): slot down until the new container is healthy (4.2s last time); recreate requested at 12:00:00"},
		{Reason{Kind: ReasonReplaced, Drift: []Drift{{DriftImageID, "aaaaaaaaaaaa", "bbbbbbbbbbbb"}}, Image: "web:v2", Serving: repl},
			"image ID aaaaaaaaaaaa → bbbbbbbbbbbb (web:v2 rebuilt); " + repl + " is healthy"},
		{Reason{Kind: ReasonReplaced, Drift: []Drift{{DriftSpec, "01234567", "89abcdef"}}, Serving: repl, Pending: true},
			"spec 01234567 → 89abcdef; once " + repl + " is healthy"},
		{Reason{Kind: ReasonDuplicate, Serving: repl}, "duplicate: " + repl + " serves slot"},
		{Reason{Kind: ReasonSurplus, Slot: 3, Replicas: 3}, "surplus: index 3 ≥ replicas 3"},
		{Reason{Kind: ReasonCold}, "cold: replicas 0"},
		{Reason{Kind: ReasonOrphan}, "orphan: no readable slot label"},
		{Reason{Kind: ReasonExtra, Workload: "old"}, "extra: workload old is not in the desired state"},
		{Reason{Kind: ReasonRollback, Deadline: time.Minute, Serving: old},
			"rollback: not healthy within health_deadline 1m0s; " + old + " keeps serving"},
		{Reason{Kind: ReasonRolledBack, Spec: "89abcdef01234567", Serving: old},
			"rollback: spec 89abcdef rolled back and on hold; " + old + " keeps serving"},
		{Reason{Kind: ReasonNeverStarted}, "never started: its start was lost; removed, to be created again"},
		{Reason{Kind: ReasonCrashed, Crash: Crash{Cause: CrashOOM, ExitCode: 137}}, "crashed: exit 137 (OOM)"},
		{Reason{Kind: ReasonOldDown, Crash: Crash{Cause: CrashExit}},
			"old container down (crashed: exit 0) and no up-to-date one serves the slot: restarted to serve it"},
		{Reason{Kind: ReasonPull, Image: "reg/web:v2"}, "pull: reg/web:v2 is not on the engine; nothing of this workload starts or stops before"},
		{Reason{Kind: ReasonPull, Image: "reg/web:v2", Digest: "sha256:0123456789abcdef0123"},
			"pull: the registry moved reg/web:v2 to sha256:0123456789ab; nothing of this workload starts or stops before"},
		{Reason{Kind: ReasonLimits, Have: docker.Limits{Memory: 64 << 20, Restart: "always"},
			Want: docker.Limits{NanoCPUs: 5e8, Memory: 128 << 20}},
			"limits cpus ∞ mem 64M restart always → cpus 0.5 mem 128M restart no"},
		{Reason{Kind: ReasonCanaryStep, Canary: step},
			"canary step 1/2: 5% of the traffic for 1m0s, judged against the stable cohort every 10s"},
		{Reason{Kind: ReasonQueued, Parallelism: 2, RollingFirst: []string{"web/0", "web/1"}},
			"queued: parallelism 2, rolling first: web/0, web/1"},
		{Reason{Kind: ReasonDelay, Delay: 10 * time.Second}, "delay: update.delay 10s after the last slot finished rolling"},
		{Reason{Kind: ReasonDependency, Dependency: "db", DependCondition: spec.DependHealthy}, "depends on db: starts once a container of it is healthy"},
		{Reason{Kind: ReasonDependency, Dependency: "db", DependCondition: spec.DependStarted}, "depends on db: starts once a container of it is running"},
		{Reason{Kind: ReasonDependency, Dependency: "db", DependCondition: spec.DependCompleted},
			"depends on db: starts once a container of it is completed (exit 0)"},
		{Reason{Kind: ReasonBlueGreenWait, Replicas: 3}, "blue-green: old containers drain once all 3 slots are healthy"},
		{Reason{Kind: ReasonCanaryFirst, CanarySteps: 2}, "canary first: no old container drains before its steps pass"},
		{Reason{Kind: ReasonCanaryFirst, CanarySteps: 1}, "canary first: no old container drains before its step pass"},
		{Reason{Kind: ReasonCanaryHeld, Canary: &CanaryStep{Index: 1, Of: 2}, Judgement: &held},
			"canary holds at step 2/2: too little traffic: 3 of min_requests 100 " +
				"(canary 3 requests at 0%, p95 –; stable 900 at 0%, p95 –; over 1m0s) (on_insufficient_traffic hold: retry or roll back)"},
		{Reason{Kind: ReasonStarting, Deadline: time.Minute}, "starting: the engine is starting it, deadline 1m0s"},
		{Reason{Kind: ReasonBooting, Deadline: time.Minute}, "booting: waiting for healthy, deadline 1m0s"},
		{Reason{Kind: ReasonBooting, Deadline: time.Minute, Healthcheck: hc},
			"booting: waiting for healthy (retries 3, start_period 5s), deadline 1m0s"},
		{Reason{Kind: ReasonBooting, Deadline: time.Minute, Healthcheck: hc, Unhealthy: true},
			"booting: unhealthy, not yet healthy since it started (a slow starter; retries 3, start_period 5s), deadline 1m0s"},
		{Reason{Kind: ReasonReady, MinReady: 5 * time.Second}, "booting: no healthcheck, healthy (unverified) after min_ready 5s"},
		{Reason{Kind: ReasonRestarting, RestartPolicy: "unless-stopped"}, "the engine is restarting it (restart policy unless-stopped)"},
		{Reason{Kind: ReasonPaused}, "paused on the engine: left alone"},
		{Reason{Kind: ReasonBackoff, Crash: Crash{Cause: CrashExit, ExitCode: 1}, Backoff: 4 * time.Second},
			"crashed: exit 1: restart backoff 4s"},
		{Reason{Kind: ReasonRestartQueued, Crash: Crash{Cause: CrashUnhealthy}, Parallelism: 1},
			"crashed: unhealthy after it was healthy; workload-wide health failure: restarting one at a time"},
		{Reason{Kind: ReasonRestartQueued, Crash: Crash{Cause: CrashUnhealthy}, Parallelism: 2},
			"crashed: unhealthy after it was healthy; workload-wide health failure: restarting 2 at a time"},
		{Reason{Kind: ReasonHealthDeadline, Condition: ConditionBooting, Deadline: time.Minute},
			"booting, not healthy within health_deadline 1m0s"},
		{Reason{}, ""},
	}
	tested := map[ReasonKind]bool{}
	for _, c := range cases {
		tested[c.why.Kind] = true
		if got := c.why.String(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.why.Kind, got, c.want)
		}
	}
	for _, k := range declaredKinds(t) {
		if !tested[k] {
			t.Errorf("no case renders a %s reason", k)
		}
	}
}

// Each way of crashing says so in its words.
func TestCrashString(t *testing.T) {
	for _, c := range []struct {
		crash Crash
		want  string
	}{
		{Crash{Cause: CrashUnhealthy}, "crashed: unhealthy after it was healthy"},
		{Crash{Cause: CrashDeadline, Deadline: time.Minute}, "crashed: not healthy within health_deadline 1m0s of its start"},
		{Crash{Cause: CrashOOM, ExitCode: 137}, "crashed: exit 137 (OOM)"},
		{Crash{Cause: CrashNeverStarted}, "crashed: created but never started"},
		{Crash{Cause: CrashExit, ExitCode: 2}, "crashed: exit 2"},
	} {
		if got := c.crash.String(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.crash.Cause, got, c.want)
		}
	}
}
