package tui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// The fixtures are snapshots as the session sends them, written out so
// that every golden is the same on every run. session_test.go checks the
// console against a real session on the fake engine as well.

const pfx = "rollcall"

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

const (
	hashV1 = "1111aaaa9f8e7d6c"
	hashV2 = "2222bbbb5a4b3c2d"
	hashW  = "3333cccc0a0b0c0d"
)

func limits() docker.Limits {
	return docker.Limits{NanoCPUs: 500_000_000, Memory: 64 << 20, Restart: "unless-stopped"}
}

// ctr is a managed container of workload w in slot, on image (v1 or v2 of
// web), created ago before t0.
func ctr(w string, slot int, image, imageID, hash, version string, ago time.Duration) docker.Container {
	return docker.Container{
		ID:      (fmt.Sprintf("%02x%02x", slot+1, len(w)) + strings.Repeat("c0ffee", 11))[:64],
		Name:    fmt.Sprintf("%s-%s-%d-%s", pfx, w, slot, hash[:8]),
		Image:   image,
		ImageID: imageID,
		Labels: map[string]string{
			docker.ManagedLabel(pfx): "true", docker.WorkloadLabel(pfx): w, docker.SlotLabel(pfx): fmt.Sprint(slot),
			docker.SpecLabel(pfx): hash, docker.VersionLabel(pfx): version,
		},
		State: docker.StateRunning, Health: docker.HealthHealthy, HasHealthcheck: true,
		Created: t0.Add(-ago), StartedAt: t0.Add(-ago + time.Second),
		Limits: limits(),
		Ports:  []docker.PublishedPort{{ContainerPort: 8080, Proto: "tcp", HostIP: "127.0.0.1", HostPort: 32768 + slot}},
	}
}

// view is c in its slot as Diff would judge it with the default
// min_ready and health_deadline at t0; a fresh healthy one serves.
func view(c docker.Container, rel reconcile.Relation, healthy bool) session.ContainerView {
	v := session.ContainerView{Container: c, Relation: rel, Condition: reconcile.ConditionOf(&c, nil, t0, false)}
	if healthy && !v.Condition.Healthy() {
		v.Condition = reconcile.ConditionHealthy
	}
	v.Serves = rel.Fresh() && v.Condition.Healthy()
	if d := webV2(); rel == reconcile.RelStale && c.Labels[docker.WorkloadLabel(pfx)] == "web" && c.Image != d.Image {
		// as Diff words an old web container's drift from web:v2
		v.Drift = []reconcile.Drift{{Field: reconcile.DriftImage, Have: c.Image, Want: d.Image},
			{Field: reconcile.DriftVersion, Have: c.Labels[docker.VersionLabel(pfx)], Want: d.Version},
			{Field: reconcile.DriftSpec, Have: c.Labels[docker.SpecLabel(pfx)][:8], Want: d.Hash[:8]}}
	}
	return v
}

func webV2() *session.DesiredSlot {
	return &session.DesiredSlot{Image: "web:v2", ImageID: "sha256:2222", Version: "2", Hash: hashV2, Limits: limits()}
}

func workerDesired() *session.DesiredSlot {
	return &session.DesiredSlot{Image: "worker:v5", ImageID: "sha256:5555", Hash: hashW, Limits: docker.Limits{Restart: "unless-stopped"}}
}

// base is what every fixture shares: a real engine, a parsed file, the lock.
func base(seq uint64) session.Snapshot {
	return session.Snapshot{
		Seq: seq, At: t0, PlanAt: t0,
		Source: "rollcall.yaml", Desired: &spec.Desired{Prefix: pfx}, Prefix: pfx,
		Engine:    docker.EngineInfo{Endpoint: "unix:///var/run/docker.sock", Version: "27.3.1", APIVersion: "1.47"},
		Connected: true,
		Mode:      session.ModeStep,
		Lock:      session.LockInfo{Path: "/run/lock/rollcall.lock", Held: true},
		Steps:     map[string]session.StepStatus{},
	}
}

func worker(crashed bool) session.SlotView {
	c := ctr("worker", 0, "worker:v5", "sha256:5555", hashW, "", 3*time.Hour)
	c.HasHealthcheck, c.Health = false, docker.HealthNone
	c.Limits = docker.Limits{Restart: "unless-stopped"}
	c.Ports = nil
	v := view(c, reconcile.RelUpToDate, true)
	v.Condition = reconcile.ConditionUnverified
	if crashed {
		v.State, v.ExitCode, v.OOMKilled, v.FinishedAt = docker.StateExited, 137, true, t0.Add(-5*time.Second)
		v.Condition, v.Serves = reconcile.ConditionCrashed, false
	}
	return session.SlotView{Workload: "worker", Slot: 0, Desired: workerDesired(), Containers: []session.ContainerView{v}, Ready: !crashed}
}

// converged: web ×3 on v2 and one worker, all healthy; nothing to do.
func converged() session.Snapshot {
	s := base(40)
	for i := range 3 {
		c := ctr("web", i, "web:v2", "sha256:2222", hashV2, "2", time.Duration(10+i)*time.Minute)
		s.Slots = append(s.Slots, session.SlotView{Workload: "web", Slot: i, Desired: webV2(),
			Containers: []session.ContainerView{view(c, reconcile.RelUpToDate, true)}, Ready: true})
	}
	s.Slots = append(s.Slots, worker(false))
	s.Progress = session.Progress{Ready: 4, Total: 4}
	s.Fresh, s.Steady = true, true
	s.Standing = session.Standing{Kind: session.StandingConverged}
	s.Events = []docker.Event{
		{Time: t0.Add(-12 * time.Minute), Action: "start", Name: "rollcall-web-2-2222bbbb"},
		{Time: t0.Add(-11 * time.Minute), Action: "health_status: healthy", Name: "rollcall-web-2-2222bbbb"},
		{Time: t0.Add(-10 * time.Minute), Action: "start", Name: "rollcall-web-0-2222bbbb"},
		{Time: t0.Add(-10*time.Minute + 2*time.Second), Action: "health_status: healthy", Name: "rollcall-web-0-2222bbbb"},
	}
	return s
}

// midRoll: web rolls v1 → v2 start-first with parallelism 1. Slot 0's new
// container is healthy, so its old one is next to roll; slots 1 and 2 wait
// their turn. Meanwhile the worker crashed and its restart is running.
func midRoll() session.Snapshot {
	s := base(57)
	new0 := ctr("web", 0, "web:v2", "sha256:2222", hashV2, "2", 40*time.Second)
	var views []session.SlotView
	for i := range 3 {
		old := ctr("web", i, "web:v1", "sha256:1111", hashV1, "1", 2*time.Hour)
		old.ID = fmt.Sprintf("%x01d", i+1) + old.ID[4:]
		v := session.SlotView{Workload: "web", Slot: i, Desired: webV2()}
		if i == 0 {
			v.Containers = []session.ContainerView{view(new0, reconcile.RelUpToDate, true), view(old, reconcile.RelStale, true)}
			v.Ready = true
		} else {
			v.Containers = []session.ContainerView{view(old, reconcile.RelStale, true)}
		}
		views = append(views, v)
	}
	s.Slots = append(views, worker(true))
	s.Progress = session.Progress{Ready: 1, Total: 4}

	roll := reconcile.Step{Action: reconcile.ActRoll, Workload: "web", Slot: 0, Container: "rollcall-web-0-1111aaaa", ContainerID: "1old",
		Reason: "image web:v1 → web:v2, version 1 → 2; rollcall-web-0-2222bbbb is healthy"}
	wait1 := reconcile.Step{Action: reconcile.ActWait, Wait: reconcile.WaitQueue, Workload: "web", Slot: 1, Container: "rollcall-web-1-1111aaaa", Reason: "queued: parallelism 1, 1 slot(s) mid-roll"}
	wait2 := reconcile.Step{Action: reconcile.ActWait, Wait: reconcile.WaitQueue, Workload: "web", Slot: 2, Container: "rollcall-web-2-1111aaaa", Reason: "queued: parallelism 1, 1 slot(s) mid-roll"}
	restart := reconcile.Step{Action: reconcile.ActRestart, Workload: "worker", Slot: 0, Container: "rollcall-worker-0-3333cccc", ContainerID: "1c0ffee", Reason: "crashed: exit 137 (OOM)"}
	then := func(a reconcile.Action, slot int, name, reason string) reconcile.Step {
		return reconcile.Step{Action: a, Workload: "web", Slot: slot, Container: name, Reason: reason, Then: true}
	}
	s.Plan = reconcile.Plan{Workloads: []reconcile.WorkloadPlan{
		{Name: "web", Changes: []string{"~ image: web:v1 → web:v2", "~ version: 1 → 2"}, Steps: []reconcile.Step{roll, wait1, wait2},
			Then: []reconcile.Step{
				then(reconcile.ActStart, 1, "rollcall-web-1-2222bbbb", "roll: image web:v1 → web:v2; rollcall-web-1-1111aaaa keeps serving"),
				then(reconcile.ActRoll, 1, "rollcall-web-1-1111aaaa", "image web:v1 → web:v2; rollcall-web-1-2222bbbb is healthy"),
				then(reconcile.ActStart, 2, "rollcall-web-2-2222bbbb", "roll: image web:v1 → web:v2; rollcall-web-2-1111aaaa keeps serving"),
				then(reconcile.ActRoll, 2, "rollcall-web-2-1111aaaa", "image web:v1 → web:v2; rollcall-web-2-2222bbbb is healthy"),
			}},
		{Name: "worker", Steps: []reconcile.Step{restart}},
	}}
	s.Steps[roll.Key()] = session.StepStatus{State: session.StepQueued}
	s.Steps[restart.Key()] = session.StepStatus{State: session.StepRunning, At: t0.Add(-time.Second)}
	s.Running = &session.StepRun{Step: restart, Since: t0.Add(-time.Second)}
	s.Next = roll.Key()
	start0 := reconcile.Step{Action: reconcile.ActStart, Workload: "web", Slot: 0, Container: "rollcall-web-0-2222bbbb",
		Reason: "roll: image web:v1 → web:v2, version 1 → 2; rollcall-web-0-1111aaaa keeps serving"}
	s.Recent = []session.StepResult{{Step: start0, Mode: session.ModeStep, Began: t0.Add(-41 * time.Second), Duration: 820 * time.Millisecond}}
	s.Events = []docker.Event{
		{Time: t0.Add(-40 * time.Second), Action: "create", Name: "rollcall-web-0-2222bbbb"},
		{Time: t0.Add(-40 * time.Second), Action: "start", Name: "rollcall-web-0-2222bbbb"},
		{Time: t0.Add(-30 * time.Second), Action: "health_status: healthy", Name: "rollcall-web-0-2222bbbb"},
		{Time: t0.Add(-5 * time.Second), Action: "die", Name: "rollcall-worker-0-3333cccc", Attributes: map[string]string{"exitCode": "137", "name": "rollcall-worker-0-3333cccc"}},
		{Time: t0.Add(-5 * time.Second), Action: "oom", Name: "rollcall-worker-0-3333cccc"},
	}
	s.Facts = []session.Fact{{Seq: 9, Kind: session.FactDecided, EngineAt: t0.Add(-42 * time.Second),
		Decision: &session.Decision{Kind: session.DecisionApprove, Key: start0.Key(), Step: &start0, By: "alice"}}}
	return s
}

// paused: web/0's new container missed its health deadline; with
// failure_action pause the session paused and fetched its last health
// output and logs.
func paused() session.Snapshot {
	s := base(88)
	new0 := ctr("web", 0, "web:v2", "sha256:2222", hashV2, "2", 70*time.Second)
	new0.Health = docker.HealthStarting
	var views []session.SlotView
	for i := range 3 {
		old := ctr("web", i, "web:v1", "sha256:1111", hashV1, "1", 2*time.Hour)
		v := session.SlotView{Workload: "web", Slot: i, Desired: webV2()}
		if i == 0 {
			v.Containers = []session.ContainerView{view(new0, reconcile.RelUpToDate, false), view(old, reconcile.RelStale, true)}
		} else {
			v.Containers = []session.ContainerView{view(old, reconcile.RelStale, true)}
		}
		views = append(views, v)
	}
	s.Slots = append(views, worker(false))
	s.Progress = session.Progress{Ready: 1, Total: 4}
	reason := "booting, not healthy within health_deadline 1m0s"
	s.Plan = reconcile.Plan{Workloads: []reconcile.WorkloadPlan{{
		Name:     "web",
		Changes:  []string{"~ image: web:v1 → web:v2", "~ version: 1 → 2"},
		Failures: []reconcile.Failure{{Workload: "web", Slot: 0, Container: "rollcall-web-0-2222bbbb", Action: "pause", Reason: reason}},
		Steps: []reconcile.Step{
			{Action: reconcile.ActWait, Wait: reconcile.WaitBoot, Workload: "web", Slot: 0, Container: "rollcall-web-0-2222bbbb", Reason: "booting: waiting for healthy, deadline 1m0s"},
			{Action: reconcile.ActWait, Wait: reconcile.WaitQueue, Workload: "web", Slot: 1, Container: "rollcall-web-1-1111aaaa", Reason: "queued: parallelism 1, 1 slot(s) mid-roll"},
			{Action: reconcile.ActWait, Wait: reconcile.WaitQueue, Workload: "web", Slot: 2, Container: "rollcall-web-2-1111aaaa", Reason: "queued: parallelism 1, 1 slot(s) mid-roll"},
		},
	}}}
	s.Pause = &session.PauseInfo{
		Reason:    "web/0 rollcall-web-0-2222bbbb: " + reason + " (failure_action pause)",
		Since:     t0.Add(-10 * time.Second),
		Workload:  "web",
		Container: "rollcall-web-0-2222bbbb",
		Health:    "exit 1: GET http://127.0.0.1:8080/healthz: dial tcp 127.0.0.1:8080: connect: connection refused",
		Logs: []string{
			"listening on :8081",
			"warning: GREETING not set, using default",
		},
	}
	p := *s.Pause
	s.Facts = []session.Fact{{Seq: 31, Kind: session.FactPaused, EngineAt: t0.Add(-10 * time.Second), Pause: &p,
		Failure: &session.Failure{Workload: "web", Slot: 0, Container: "rollcall-web-0-2222bbbb", Reason: reason, Action: "pause"}}}
	s.Events = []docker.Event{
		{Time: t0.Add(-70 * time.Second), Action: "start", Name: "rollcall-web-0-2222bbbb"},
		{Time: t0.Add(-9 * time.Second), Action: "exec_die", Name: "rollcall-web-0-2222bbbb", Attributes: map[string]string{"exitCode": "1"}},
	}
	return s
}

// watching: the mid-roll seen from a second console, which could not get
// the lock and so watches, read-only.
func watching() session.Snapshot {
	s := midRoll()
	s.Mode = session.ModeWatch
	s.Lock = session.LockInfo{Path: "/run/lock/rollcall.lock", Holder: &session.LockHolder{User: "alice", PID: 4242, Since: t0.Add(-time.Hour)}}
	s.Running = nil
	restart := s.Plan.Workloads[1].Steps[0]
	s.Steps[restart.Key()] = session.StepStatus{State: session.StepQueued}
	s.Recent = nil
	return s
}

// emergency: auto mode with skip-health on.
func emergency() session.Snapshot {
	s := midRoll()
	s.Mode = session.ModeAuto
	s.SkipHealth = true
	return s
}

// downtime: a stop-first step waits for the operator's yes.
func downtime() session.Snapshot {
	s := midRoll()
	s.Running = nil
	roll := s.Plan.Workloads[0].Steps[0]
	roll.Downtime = true
	roll.Reason = "stop-first: slot down until the new container is healthy; " + roll.Reason
	s.Plan.Workloads[0].Steps[0] = roll
	s.Steps[roll.Key()] = session.StepStatus{State: session.StepQueued, Approved: true, NeedsConfirm: true}
	s.Confirm = &session.Confirmation{Kind: session.ConfirmDowntime, Key: roll.Key(), Step: roll,
		Prompt: "web/0: stop rollcall-web-0-1111aaaa before its replacement starts? The slot is down until the new container is healthy."}
	return s
}

// trouble: the engine went away, the file stopped parsing (the last good
// state stays), the lock could not be taken, and a spec is on hold.
func trouble() session.Snapshot {
	s := converged()
	s.Connected = false
	s.Fresh, s.Steady = false, false
	s.Standing = session.Standing{Kind: session.StandingRolling}
	s.EngineErr = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
	s.SourceErr = spec.ErrorList{{File: "rollcall.yaml", Line: 7, Col: 5, Msg: `unknown key "replica"`, Hint: "did you mean replicas?"}}
	s.Lock = session.LockInfo{Err: "host lock /run/lock/rollcall.lock: permission denied"}
	s.Holds = map[string][]string{"web": {hashV1}}
	s.Mode = session.ModeWatch
	return s
}

// staged: nothing runs yet in step mode, and the plan holds several steps
// the operator can approve: web/0's start (next), a wait for web/1, the
// worker's limits update and the stop of an extra container.
func staged() session.Snapshot {
	s := base(12)
	for i := range 2 {
		old := ctr("web", i, "web:v1", "sha256:1111", hashV1, "1", 2*time.Hour)
		s.Slots = append(s.Slots, session.SlotView{Workload: "web", Slot: i, Desired: webV2(),
			Containers: []session.ContainerView{view(old, reconcile.RelStale, true)}})
	}
	s.Slots = append(s.Slots, worker(false))
	s.Progress = session.Progress{Ready: 1, Total: 3}
	start0 := reconcile.Step{Action: reconcile.ActStart, Workload: "web", Slot: 0, Container: "rollcall-web-0-2222bbbb",
		Reason: "roll: image web:v1 → web:v2; rollcall-web-0-1111aaaa keeps serving"}
	wait1 := reconcile.Step{Action: reconcile.ActWait, Workload: "web", Slot: 1, Container: "rollcall-web-1-1111aaaa",
		Reason: "queued: parallelism 1, 1 slot(s) mid-roll"}
	update := reconcile.Step{Action: reconcile.ActUpdate, Workload: "worker", Slot: 0, Container: "rollcall-worker-0-3333cccc",
		ContainerID: "01c0ffee", Reason: "limits: restart no → unless-stopped"}
	stop := reconcile.Step{Action: reconcile.ActStop, Workload: "old", Slot: 0, Container: "rollcall-old-0-4444dddd",
		ContainerID: "02c0ffee", Reason: "extra: workload old is no longer desired"}
	s.Plan = reconcile.Plan{Workloads: []reconcile.WorkloadPlan{
		{Name: "old", Steps: []reconcile.Step{stop}},
		{Name: "web", Changes: []string{"~ image: web:v1 → web:v2"}, Steps: []reconcile.Step{start0, wait1}},
		{Name: "worker", Steps: []reconcile.Step{update}},
	}}
	for _, st := range []reconcile.Step{start0, update, stop} {
		s.Steps[st.Key()] = session.StepStatus{State: session.StepQueued}
	}
	s.Next = stop.Key()
	s.Waiting = "step mode: approve a step (enter) or the rollout (A)"
	s.Standing = session.Standing{Kind: session.StandingAwaitingApproval, Causes: []session.Cause{{Kind: session.CauseApproval, Step: &stop}}}
	return s
}

// rolledBack: web/0's new container missed its deadline with
// failure_action rollback: it was stopped, the old one serves, its spec
// is on hold, and an approved rollout goes on with the worker.
func rolledBack() session.Snapshot {
	s := staged()
	s.Waiting = ""
	s.RolledBack = []session.RollbackInfo{{Workload: "web", Slot: 0, Container: "rollcall-web-0-2222bbbb", Hash: hashV2,
		Reason: "not healthy within health_deadline 1m0s", At: t0.Add(-5 * time.Second)}}
	s.Holds = map[string][]string{"web": {hashV2}}
	s.Rollout = &session.RolloutInfo{By: "alice", Since: t0.Add(-time.Minute), Left: 2}
	v := &s.Slots[0].Containers[0]
	v.RestartCount, v.ExitCode, v.OOMKilled = 2, 137, true
	return s
}

// proxied: midRoll behind Caddy. The new web/0 takes 3 requests, the old
// one refuses the proxy (drained) with nothing in flight, the old web/1
// serves, web/2's old one has left Caddy's list; the worker is not
// running, so the session has no address for it.
func proxied() session.Snapshot {
	s := midRoll()
	s.Desired = &spec.Desired{Prefix: pfx, Proxy: &spec.Proxy{CaddyAdmin: "http://127.0.0.1:2019"}}
	px := &session.ProxyView{Admin: "http://127.0.0.1:2019", At: t0, ByContainer: map[string]session.ProxyRoute{}}
	for _, v := range s.Slots {
		for _, c := range v.Containers {
			switch {
			case v.Workload == "worker":
			case c.Image == "web:v2":
				px.ByContainer[c.ID] = session.ProxyRoute{Routed: true, InFlight: 3}
			case v.Slot == 0:
				px.ByContainer[c.ID] = session.ProxyRoute{Routed: true, Fails: 2}
			case v.Slot == 2:
				px.ByContainer[c.ID] = session.ProxyRoute{}
			default:
				px.ByContainer[c.ID] = session.ProxyRoute{Routed: true, InFlight: 1}
			}
		}
	}
	s.Proxy = px
	return s
}

// proxyDown: converged, and the proxy's admin API does not answer.
func proxyDown() session.Snapshot {
	s := converged()
	s.Desired = &spec.Desired{Prefix: pfx, Proxy: &spec.Proxy{CaddyAdmin: "http://127.0.0.1:2019"}}
	s.Proxy = &session.ProxyView{Admin: "http://127.0.0.1:2019", At: t0,
		Err:   `caddy upstreams: Get "http://127.0.0.1:2019/reverse_proxy/upstreams": dial tcp 127.0.0.1:2019: connect: connection refused`,
		Cause: "dial tcp 127.0.0.1:2019: connect: connection refused"}
	return s
}

// pullImage is the image web is desired on in the pull fixtures: in a
// registry, not on the engine yet.
const pullImage = "127.0.0.1:5000/team/web:v3"

// pullStepOf is the pull step of web, as Diff plans it while its image
// is not on the engine.
func pullStepOf() reconcile.Step {
	why := reconcile.Reason{Kind: reconcile.ReasonPull, Image: pullImage}
	return reconcile.Step{Action: reconcile.ActPull, Workload: "web", Slot: reconcile.NoSlot, Container: pullImage,
		Why: why, Reason: why.String()}
}

// pulling: web ×3 serve web:v2; its desired image, in a registry, is
// being pulled: 2 of 4 layers, 1.6 of 4.0 MiB. Nothing of web starts or
// stops before.
func pulling() session.Snapshot {
	s := converged()
	s.Seq, s.Mode, s.Steady = 61, session.ModeAuto, false
	s.Standing = session.Standing{Kind: session.StandingRolling}
	s.Progress = session.Progress{Ready: 1, Total: 4} // web's 3 slots are stale until the image is there
	for i := range 3 {
		v := &s.Slots[i]
		v.Desired = &session.DesiredSlot{Image: pullImage, Version: "3", Hash: "4444dddd1e2f3a4b", Limits: limits()}
		v.Ready = false
		v.Containers[0].Relation, v.Containers[0].Serves = reconcile.RelStale, true
		v.Containers[0].Drift = []reconcile.Drift{{Field: reconcile.DriftImage, Have: "web:v2", Want: pullImage}}
	}
	pull := pullStepOf()
	s.Plan = reconcile.Plan{Workloads: []reconcile.WorkloadPlan{
		{Name: "web", Changes: []string{"~ image: web:v2 → " + pullImage, "~ version: 2 → 3"}, Steps: []reconcile.Step{pull}},
	}}
	s.Steps[pull.Key()] = session.StepStatus{State: session.StepRunning, At: t0.Add(-3 * time.Second)}
	run := session.StepRun{Step: pull, Since: t0.Add(-3 * time.Second), Pull: &reconcile.PullProgress{Step: pull,
		PullProgress: docker.PullProgress{Ref: pullImage, Layers: 4, LayersDone: 2, Bytes: 4 << 20, BytesDone: 1677722}}}
	s.Running, s.RunningSteps = &run, []session.StepRun{run}
	s.Next = pull.Key()
	return s
}

// pullFailed: the pull of web's image failed, unauthorized (the registry
// wants credentials the engine was not given); it goes again in 12s.
// Every web container still serves web:v2.
func pullFailed() session.Snapshot {
	s := pulling()
	s.Seq = 62
	pull := pullStepOf()
	s.Running, s.RunningSteps = nil, nil
	const err = "pull web: pull " + pullImage + ": unauthorized: Head \"http://127.0.0.1:5000/v2/team/web/manifests/v3\": no basic auth credentials"
	s.Steps[pull.Key()] = session.StepStatus{State: session.StepFailed, Err: err, At: t0.Add(-2 * time.Second), RetryAt: t0.Add(12 * time.Second)}
	s.Recent = []session.StepResult{{Step: pull, Mode: session.ModeAuto, Began: t0.Add(-3 * time.Second), Duration: 640 * time.Millisecond,
		Err: err, PullKind: docker.PullUnauthorized}}
	s.Facts = []session.Fact{{Seq: 40, Kind: session.FactStepFailed, Step: pull, Result: &s.Recent[0], Duration: 640 * time.Millisecond, Err: errors.New(err)}}
	return s
}
