package reconcile

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// This file plans for a Swarm (DESIGN §13; the facts are in
// research/swarm.md). rollcall never schedules a task there: a workload is
// the service docker.ServiceName(prefix, workload), and every step writes,
// creates or removes that service; Swarm's updater and restart supervisor
// place, start, health-gate and replace the tasks. DiffSwarm is as pure as
// Diff and fills the same Plan: steps with typed reasons, Failures, and
// Plan.Slots. The rules, in the order DiffSwarm weighs them:
//
//  S1. A desired workload with no service: CREATE it. Its slots start on
//      the desired spec, with no old task beside them: no downtime. None
//      with replicas 0.
//  S2. A managed service whose workload is not desired: REMOVE it (extra);
//      a second service of one workload is removed too (duplicate).
//  S3. Its desired spec on hold (rule 9): nothing is written, whatever
//      else differs; the slots not on the spec are Held. Swarm's own
//      updater goes on with what it was last given: a hold stops
//      rollcall's writes, not Swarm.
//  S4. The task template is not the desired one (its spec hash label, its
//      image, the endpoint mode): ROLLOUT. Unpaced (auto, A, apply,
//      agent): one write of the whole spec with the file's update
//      settings, and Swarm rolls every slot. Paced (step mode): the write
//      has parallelism 1 and a delay of PacedDelay, so Swarm updates one
//      slot and sleeps. A roll forward to an older spec (rollcall's own
//      rollback: the session puts the stored revision in place of the
//      desired spec before DiffSwarm) is planned the same way.
//  S5. Swarm paused the update of the desired spec (its failure action):
//      the workload failed, a Failure with Swarm's message and the failed
//      task's error (shown, never matched). Nothing more is written until
//      the operator's retry (SwarmObserved.Resume): then RESUME, the spec
//      sent again, which Swarm takes as a new update of the slots left.
//  S6. Paced, slots left on an older spec: ADVANCE, a write outside the
//      task template (the step counter, docker.StepLabel) that ends
//      Swarm's sleeping updater, whose successor updates the next slot of
//      its own choice. Offered only once every task of the desired spec is
//      RUNNING (Swarm's healthy) and Swarm has placed the last step's
//      task; else a wait. From unpaced settings (step mode entered mid-
//      roll), the advance writes the paced ones.
//  S7. Unpaced, slots left, the service has other update settings (step
//      mode left mid-roll): SETTINGS, the file's, and Swarm rolls the
//      slots left with them.
//  S8. Only the replicas differ: SCALE, in place; no task is replaced.
//      Swarm takes the lowest free slots, and on a scale-down chooses
//      which tasks go. While paced slots are left, the replicas ride on
//      the advance instead (any write advances a paced roll).
//  S9. Only the update settings differ (a paced roll done, whose updater
//      sleeps its delay; or a hand edit): SETTINGS, the file's; no task is
//      replaced, and Swarm's update ends.
//  S10. Otherwise Swarm is at work or done: a wait for each slot not ready
//      (its task starting, crashed and being restarted, queued for the
//      updater, or not yet placed), for old tasks Swarm still retires, and
//      for Swarm's monitor period after the last slot. A task of the roll
//      not RUNNING within health_deadline is a Failure: Swarm's updater
//      waits for it with no timeout.
//
// In paced mode a write that would cut a start-first overlap short (a
// slot's new task not yet RUNNING beside its old one, which a new updater
// shuts down at once) waits for that task.
//
// Every write carries the whole desired spec, the service version it was
// read at, and the next step counter, so that each write is a change
// Swarm's supervisor acts on. rollcall never uses Swarm's PreviousSpec or
// its rollback: Swarm's failure action is pause for the file's pause and
// for its rollback (rollcall rolls back to its own revisions, as a roll
// forward), and continue for continue. Swarm's own rollback, when someone
// runs `docker service rollback`, leaves a template that is not the
// desired one, and S4 rolls forward again, as Diff puts back a container
// changed by hand.
//
// Slots are Swarm's task slots, numbered from 1 as Swarm numbers them, so
// that `docker service ps` and rollcall name a slot alike (a host's slots
// count from 0). A service's desired slots are the slots Swarm keeps a
// task for (desired running), the first replicas of them, and while
// Swarm has fewer, the lowest free numbers, which Swarm takes next. A
// task relates to its slot as up-to-date (its spec hash and image are the
// desired ones) or stale; its condition is healthy when RUNNING on a node
// that is up (unverified without a healthcheck), booting before, crashed
// when it ended while Swarm wants it running or its node is down, and
// drained when Swarm is shutting it down. A task Swarm put in its slot by
// itself, after the slot's last task failed or lost its node, is marked
// EngineReplaced: Swarm's step, never an approval. Swarm replaces on the
// service's current spec, so an old task that crashes mid-roll comes back
// on the new one: in step mode, a slot advanced unasked.
//
// Emergency mode (SkipHealth) has no counterpart: Swarm gates health on
// each node's agent, and nothing rollcall counts can make its updater go
// on sooner. depends_on is not honoured, as `docker stack deploy` does
// not; a blue-green workload rolls with parallelism 0 (every slot at
// once, each old task retired as its new one runs). A job or a canary
// cannot run on a Swarm: such a workload is in error, and nothing of it is
// created or written.

// SwarmObserved is everything DiffSwarm looks at besides the desired
// state: one read of the swarm manager, and the session's own marks.
type SwarmObserved struct {
	// Now is the time of the read: a task of a roll not RUNNING by its
	// creation plus health_deadline is a Failure.
	Now      time.Time
	Services []docker.Service
	Tasks    []docker.Task
	// Nodes are the swarm's nodes: a task on a node that is not ready is
	// not healthy. Empty when they were not read: tasks are judged alone.
	Nodes []docker.Node
	// Holds are specs rolled back (rule 9), keyed by workload then spec
	// hash, as Observed.Holds.
	Holds map[string]map[string]bool
	// Paced is step mode: each roll advances one slot per approval.
	Paced bool
	// Resume holds the workloads whose paused update the operator retried
	// (the session's Retry): DiffSwarm plans the write that resumes it.
	Resume map[string]bool
}

// Held reports whether workload's spec hash is on hold.
func (o *SwarmObserved) Held(workload, hash string) bool { return o.Holds[workload][hash] }

// ServiceStep is what a step on a Swarm creates, writes or removes.
type ServiceStep struct {
	Prefix string
	// ID is the service's ID and Version the version the plan read it
	// at, which a write names; "" and 0 for a create.
	ID      string
	Version uint64
	// Spec is the whole spec written (or created); for a remove, the
	// service's as read.
	Spec docker.ServiceSpec
}

// Counter is the step counter the step's spec carries (docker.StepLabel).
func (s *ServiceStep) Counter() string { return s.Spec.Labels[docker.StepLabel(s.Prefix)] }

// SwarmEndpointMode is the endpoint mode of every service rollcall
// writes: DNS round robin. A VIP needs IPVS on every node, which many
// hosts lack, and a proxy in front resolves tasks.<service> to every task
// itself, so dnsrr is what works everywhere.
const SwarmEndpointMode = "dnsrr"

// PacedDelay is the delay of a paced roll's update settings: Swarm's
// updater sleeps it after each slot, until the next advance ends it. Left
// alone that long, Swarm would take the next slot by itself.
const PacedDelay = 365 * 24 * time.Hour

// swarmSlot is Swarm's placeholder for a task's slot, which each node
// expands in a task's hostname and mount sources.
const swarmSlot = "{{.Task.Slot}}"

// ServiceSpecFor is the service of a workload: named
// docker.ServiceName(prefix, name); labelled managed, with its workload,
// the stack namespace (the prefix, so `docker stack ps <prefix>` lists it)
// and step counter 0; the file's replicas and update settings; endpoint
// mode dnsrr. The task template is what CreateSpec gives a slot, with
// nothing of one slot: no name (Swarm names tasks), no slot label, the
// slot's hostname and own volumes by Swarm's placeholder for the task's
// slot. It keeps the workload, spec hash and version labels, so every
// task shows its revision, but not the managed label: a task's container
// is Swarm's, and rollcall on that node's engine must never take it for
// an orphan of its own.
func ServiceSpecFor(prefix string, w *spec.Resolved) docker.ServiceSpec {
	task := createSpecOf(prefix, w, swarmSlot)
	delete(task.Labels, docker.SlotLabel(prefix))
	delete(task.Labels, docker.ManagedLabel(prefix))
	task.Limits.Restart = "" // a service's is its own (Restart)
	out := docker.ServiceSpec{
		Name:         docker.ServiceName(prefix, w.Name),
		Labels:       serviceLabels(prefix, w),
		Task:         *task,
		Replicas:     w.Replicas,
		Update:       UpdateConfigFor(w),
		EndpointMode: endpointOf(w),
		ResolveImage: w.Workload.Pull == spec.PullAlways,
	}
	if sw := w.Swarm; sw != nil {
		// The file's, as spec filled them in (Swarm's own defaults).
		out.Placement = placementOf(sw)
		out.Restart = docker.SwarmRestart{Condition: string(sw.Restart.Condition), Delay: sw.Restart.Delay,
			MaxAttempts: sw.Restart.MaxAttempts, Window: sw.Restart.Window}
		out.Reservations = docker.Reservations{NanoCPUs: sw.Reservations.NanoCPUs, Memory: sw.Reservations.Memory}
	}
	return out
}

// serviceLabels are a service's own labels: the file's service_labels,
// then rollcall's (managed, workload, stack namespace, step counter 0),
// which no label of the file overrides.
func serviceLabels(prefix string, w *spec.Resolved) map[string]string {
	out := map[string]string{}
	if w.Swarm != nil {
		maps.Copy(out, w.Swarm.Labels)
	}
	maps.Copy(out, map[string]string{
		docker.ManagedLabel(prefix):  "true",
		docker.WorkloadLabel(prefix): w.Name,
		docker.StackLabel:            prefix,
		docker.StepLabel(prefix):     "0",
	})
	return out
}

// placementOf is the file's placement as Swarm holds it (nil lists for
// none: the normal form a spec reads back in).
func placementOf(sw *spec.SwarmService) docker.Placement {
	p := sw.Placement
	return docker.Placement{Constraints: nilIfEmpty(p.Constraints), Preferences: nilIfEmpty(p.Preferences), MaxReplicas: p.MaxReplicas}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// endpointOf is the endpoint mode a workload's service has: the file's
// (spec fills in Swarm's default, vip), else SwarmEndpointMode.
func endpointOf(w *spec.Resolved) string {
	if w.Swarm != nil && w.Swarm.EndpointMode != "" {
		return string(w.Swarm.EndpointMode)
	}
	return SwarmEndpointMode
}

// UpdateConfigFor is the file's update settings as Swarm runs them:
// parallelism (0, every slot at once, for blue-green), the order, the
// delay, the monitor (health_deadline: how long after RUNNING a failure
// still counts), and the failure action: pause for pause and for rollback
// (rollcall rolls back to its own revision, never Swarm's PreviousSpec),
// continue for continue. Swarm spells order and action as spec does.
func UpdateConfigFor(w *spec.Resolved) docker.UpdateConfig {
	par := max(w.Update.Parallelism, 1)
	if w.Update.Strategy == spec.StrategyBlueGreen {
		par = 0
	}
	action := spec.FailurePause
	if w.Update.FailureAction == spec.FailureContinue {
		action = spec.FailureContinue
	}
	return docker.UpdateConfig{Parallelism: par, Delay: w.Update.Delay, Monitor: w.Update.HealthDeadline,
		FailureAction: action, Order: w.EffectiveOrder(), MaxFailureRatio: float32(w.Update.MaxFailureRatio)}
}

// PacedUpdateConfig is a paced roll's update settings: the file's, one
// slot at a time, with PacedDelay after each.
func PacedUpdateConfig(w *spec.Resolved) docker.UpdateConfig {
	u := UpdateConfigFor(w)
	u.Parallelism, u.Delay = 1, PacedDelay
	return u
}

// updateEqual compares update settings as Swarm holds them: no order is
// stop-first and no failure action pause, Swarm's defaults.
func updateEqual(a, b docker.UpdateConfig) bool {
	norm := func(u docker.UpdateConfig) docker.UpdateConfig {
		u.Order = cmp.Or(u.Order, spec.OrderStopFirst)
		u.FailureAction = cmp.Or(u.FailureAction, spec.FailurePause)
		return u
	}
	return norm(a) == norm(b)
}

// isPaced reports whether u are paced settings: one slot, then PacedDelay.
func isPaced(u docker.UpdateConfig) bool { return u.Parallelism == 1 && u.Delay == PacedDelay }

// imageIs reports whether image reference have is want: the same, or want
// pinned to a digest by the manager ("web:v2@sha256:…").
func imageIs(have, want string) bool {
	if have == want {
		return true
	}
	ref, _, pinned := cutDigest(have)
	return pinned && ref == want
}

func cutDigest(ref string) (string, string, bool) {
	for i := len(ref) - 1; i >= 0; i-- {
		if ref[i] == '@' {
			return ref[:i], ref[i+1:], true
		}
	}
	return ref, "", false
}

// DiffSwarm returns the plan that moves a swarm's services towards the
// desired state (the rules above). It is pure: the same inputs give the
// same plan, whatever the order of o's services, tasks and nodes. Only
// services labelled <prefix>.managed=true are looked at, and only their
// tasks; a plan holds nothing of any other service.
func DiffSwarm(d *spec.ResolvedDesired, o *SwarmObserved) Plan {
	prefix := d.Prefix
	managed, workloadKey := docker.ManagedLabel(prefix), docker.WorkloadLabel(prefix)
	var plan Plan
	byWorkload := map[string][]*docker.Service{}
	ours := map[string]bool{}
	for i := range o.Services {
		s := &o.Services[i]
		if s.Spec.Labels[managed] != "true" {
			continue // I5: never ours to look at
		}
		w := s.Spec.Labels[workloadKey]
		if w == "" {
			plan.Notes = append(plan.Notes, fmt.Sprintf("service %s has %s but no %s label: left alone", s.Spec.Name, managed, workloadKey))
			continue
		}
		byWorkload[w] = append(byWorkload[w], s)
		ours[s.ID] = true
	}
	slices.Sort(plan.Notes)
	tasks := map[string][]*docker.Task{}
	for i := range o.Tasks {
		if t := &o.Tasks[i]; ours[t.ServiceID] {
			tasks[t.ServiceID] = append(tasks[t.ServiceID], t)
		}
	}
	nodes := nodesOf(o.Nodes)

	desired := make(map[string]*spec.Resolved, len(d.Workloads))
	for i := range d.Workloads {
		desired[d.Workloads[i].Name] = &d.Workloads[i]
	}
	names := slices.Sorted(maps.Keys(desired))
	for name := range byWorkload {
		if desired[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)

	for _, name := range names {
		svcs := byWorkload[name]
		slices.SortFunc(svcs, func(a, b *docker.Service) int {
			// The service of the workload's own name first, then the oldest.
			own := docker.ServiceName(prefix, name)
			if (a.Spec.Name == own) != (b.Spec.Name == own) {
				if a.Spec.Name == own {
					return -1
				}
				return 1
			}
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		var svc *docker.Service
		var dups []*docker.Service
		if len(svcs) > 0 {
			svc, dups = svcs[0], svcs[1:]
		}
		sw := swarmWorkload{prefix: prefix, name: name, w: desired[name], svc: svc, o: o, nodes: nodes}
		if svc != nil {
			sw.tasks = sortedTasks(tasks[svc.ID])
		}
		wp, slots := sw.plan()
		for _, dup := range dups {
			wp.Steps = append(wp.Steps, Step{Action: ActRemove, Workload: name, Slot: NoSlot, Container: dup.Spec.Name,
				Service: &ServiceStep{Prefix: prefix, ID: dup.ID, Version: dup.Version, Spec: dup.Spec},
				Why:     Reason{Kind: ReasonSwarmDuplicate, Serving: svc.Spec.Name}})
		}
		sortSwarmSteps(wp.Steps)
		for i := range wp.Steps {
			wp.Steps[i].explain()
		}
		for i := range wp.Failures {
			wp.Failures[i].explain()
		}
		if len(wp.Steps) > 0 || len(wp.Failures) > 0 {
			wp.Changes = sw.changes(slots)
		}
		if len(wp.Steps) > 0 || len(wp.Failures) > 0 || wp.Error != "" || len(wp.Notes) > 0 || len(wp.Held) > 0 {
			plan.Workloads = append(plan.Workloads, wp)
		}
		plan.Slots = append(plan.Slots, slots...)
	}
	return plan
}

// swarmWorkload is one workload's inputs to DiffSwarm.
type swarmWorkload struct {
	prefix, name string
	w            *spec.Resolved  // nil: not desired
	svc          *docker.Service // nil: no service
	tasks        []*docker.Task  // the service's, by slot, then creation
	o            *SwarmObserved
	nodes        map[string]*docker.Node
}

// plan is the workload's block and its slots.
func (sw *swarmWorkload) plan() (WorkloadPlan, []SlotState) {
	wp := WorkloadPlan{Name: sw.name}
	w, svc := sw.w, sw.svc
	switch {
	case w == nil: // S2
		slots := sw.slots(RelExtra)
		wp.Steps = []Step{{Action: ActRemove, Workload: sw.name, Slot: NoSlot, Container: svc.Spec.Name,
			Service: &ServiceStep{Prefix: sw.prefix, ID: svc.ID, Version: svc.Version, Spec: svc.Spec},
			Why:     Reason{Kind: ReasonExtra, Workload: sw.name}}}
		return wp, slots.states
	case w.Err != nil:
		wp.Error = w.Err.Error() + ": nothing of this workload is created or written"
		return wp, sw.slots(RelUnknown).states
	case w.Job:
		wp.Error = "a job does not run on a Swarm: nothing of this workload is created or written"
		return wp, sw.slots(RelUnknown).states
	case w.Update.Canary != nil:
		wp.Error = "a canary does not run on a Swarm: nothing of this workload is created or written"
		return wp, sw.slots(RelUnknown).states
	}
	slots := sw.slots(RelUpToDate)
	held := sw.o.Held(w.Name, w.Hash)
	if held { // S3
		for _, st := range slots.states {
			if st.Desired && !st.Ready {
				wp.Held = append(wp.Held, st.Slot)
			}
		}
		if len(wp.Held) > 0 {
			wp.HeldSpec = w.Hash
			wp.Notes = append(wp.Notes, fmt.Sprintf("spec %s is on hold (rolled back): not written to Swarm until the desired spec changes", short(w.Hash)))
			if svc != nil && svc.UpdateState == docker.UpdateUpdating && !isPaced(svc.Spec.Update) {
				wp.Notes = append(wp.Notes, "Swarm's updater goes on by itself with what it was last given: a hold stops rollcall's writes only")
			}
		}
		for i := range slots.states {
			if st := &slots.states[i]; st.Desired && !st.Ready {
				st.Wait = WaitHold
			}
		}
		if failure, ok := sw.pausedFailure(); ok {
			wp.Failures = append(wp.Failures, failure)
		}
		return wp, slots.states
	}
	if svc == nil { // S1
		if w.Replicas > 0 {
			want := ServiceSpecFor(sw.prefix, w)
			wp.Steps = []Step{{Action: ActCreate, Workload: w.Name, Slot: NoSlot, Container: want.Name,
				Service: &ServiceStep{Prefix: sw.prefix, Spec: want},
				Why:     Reason{Kind: ReasonSwarmCreate, Replicas: w.Replicas}}}
		}
		return wp, slots.states
	}

	file, paced := UpdateConfigFor(w), PacedUpdateConfig(w)
	svcPaced := isPaced(svc.Spec.Update)
	stopFirst := w.EffectiveOrder() == spec.OrderStopFirst
	left := slots.left()
	write := func(a Action, u docker.UpdateConfig, why Reason, downtime bool) {
		wp.Steps = append(wp.Steps, sw.write(a, u, why, downtime && stopFirst))
	}
	tmplOK := len(sw.templateDrift()) == 0
	failure, paused := sw.pausedFailure()
	switch {
	case !tmplOK: // S4
		drift := sw.templateDrift()
		if !sw.o.Paced {
			write(ActRollout, file, Reason{Kind: ReasonSwarmRollout, Replicas: w.Replicas, Parallelism: file.Parallelism,
				Order: file.Order, Delay: file.Delay, Drift: drift, Image: w.Image}, true)
			break
		}
		if waits := slots.bootWaits(w, sw.o.Paced); len(waits) > 0 {
			wp.Steps = append(wp.Steps, waits...)
			break
		}
		write(ActRollout, paced, Reason{Kind: ReasonSwarmStep, Done: slots.onSpec(), Replicas: w.Replicas, Drift: drift, Image: w.Image}, true)
	case paused: // S5
		wp.Failures = append(wp.Failures, failure)
		if sw.o.Resume[w.Name] {
			u := file
			if sw.o.Paced {
				u = paced
			}
			write(ActResume, u, Reason{Kind: ReasonSwarmResume, Left: left}, left > 0)
			break
		}
		wp.Steps = append(wp.Steps, Step{Action: ActWait, Wait: WaitPaused, Workload: w.Name, Slot: NoSlot, Container: svc.Spec.Name,
			Why: failure.Why})
		for i := range slots.states {
			if st := &slots.states[i]; st.Desired && !st.Ready {
				st.Wait = WaitPaused
			}
		}
	case sw.o.Paced && left > 0: // S6
		if waits := slots.bootWaits(w, true); len(waits) > 0 {
			wp.Steps = append(wp.Steps, waits...)
			wp.Steps = append(wp.Steps, slots.queueWaits(w, true)...)
			break
		}
		if svcPaced && !slots.placedSince(svc.UpdateState, svc.UpdateStarted) {
			wp.Steps = append(wp.Steps, Step{Action: ActWait, Wait: WaitSwarm, Workload: w.Name, Slot: NoSlot, Container: svc.Spec.Name,
				Why: Reason{Kind: ReasonSwarmPending}})
			wp.Steps = append(wp.Steps, slots.queueWaits(w, true)...)
			break
		}
		write(ActAdvance, paced, Reason{Kind: ReasonSwarmStep, Done: slots.onSpec(), Replicas: w.Replicas, Switch: !svcPaced}, true)
	case !sw.o.Paced && left > 0 && !updateEqual(svc.Spec.Update, file): // S7
		write(ActSettings, file, Reason{Kind: ReasonSwarmSettings, Left: left, Paced: svcPaced, Parallelism: file.Parallelism, Order: file.Order}, true)
	case svc.Spec.Replicas != w.Replicas: // S8
		if waits := sw.overlapWaits(slots, w); len(waits) > 0 {
			wp.Steps = append(wp.Steps, waits...)
			break
		}
		write(ActScale, file, Reason{Kind: ReasonSwarmScale, From: svc.Spec.Replicas, Replicas: w.Replicas}, false)
	case !updateEqual(svc.Spec.Update, file): // S9
		if waits := sw.overlapWaits(slots, w); len(waits) > 0 {
			wp.Steps = append(wp.Steps, waits...)
			break
		}
		write(ActSettings, file, Reason{Kind: ReasonSwarmSettings, Paced: svcPaced, Parallelism: file.Parallelism, Order: file.Order,
			Drift: sw.serviceDrift()}, false)
	case len(sw.serviceDrift()) > 0: // S9: placement, service labels
		if waits := sw.overlapWaits(slots, w); len(waits) > 0 {
			wp.Steps = append(wp.Steps, waits...)
			break
		}
		write(ActSettings, file, Reason{Kind: ReasonSwarmService, Drift: sw.serviceDrift()}, false)
	default: // S10
		wp.Steps = append(wp.Steps, slots.bootWaits(w, false)...)
		wp.Steps = append(wp.Steps, slots.queueWaits(w, false)...)
		if n := slots.retiring(); n > 0 {
			wp.Steps = append(wp.Steps, Step{Action: ActWait, Wait: WaitSwarm, Workload: w.Name, Slot: NoSlot, Container: svc.Spec.Name,
				Why: Reason{Kind: ReasonSwarmRetiring, Left: n}})
		} else if len(wp.Steps) == 0 && svc.UpdateState == docker.UpdateUpdating {
			wp.Steps = append(wp.Steps, Step{Action: ActWait, Wait: WaitSwarm, Workload: w.Name, Slot: NoSlot, Container: svc.Spec.Name,
				Why: Reason{Kind: ReasonSwarmMonitor, Deadline: file.Monitor}})
		}
	}
	if tmplOK && !paused {
		wp.Failures = append(wp.Failures, slots.stuck(w, svc, sw.o.Now)...)
	}
	addWaits(slots.states, wp.Steps)
	return wp, slots.states
}

// overlapWaits are, in paced mode, the waits of slots whose new task is
// not yet RUNNING beside its old one: a write would start a new updater,
// which shuts the old one down at once. Unpaced, Swarm's own roll is
// under way with the file's settings anyway: none.
func (sw *swarmWorkload) overlapWaits(slots swarmSlots, w *spec.Resolved) []Step {
	if !sw.o.Paced {
		return nil
	}
	var out []Step
	for _, s := range slots.bootWaits(w, true) {
		if st, ok := slots.state(s.Slot); ok && st.overlap() {
			out = append(out, s)
		}
	}
	return out
}

// write is a step that writes the desired spec with update settings u, at
// the version read, with the next step counter.
func (sw *swarmWorkload) write(a Action, u docker.UpdateConfig, why Reason, downtime bool) Step {
	want := ServiceSpecFor(sw.prefix, sw.w)
	want.Update = u
	want.Labels[docker.StepLabel(sw.prefix)] = strconv.Itoa(stepCounter(sw.prefix, sw.svc.Spec) + 1)
	return Step{Action: a, Workload: sw.name, Slot: NoSlot, Container: want.Name, Downtime: downtime,
		Service: &ServiceStep{Prefix: sw.prefix, ID: sw.svc.ID, Version: sw.svc.Version, Spec: want}, Why: why}
}

// stepCounter is the step counter a service spec carries; 0 when none.
func stepCounter(prefix string, s docker.ServiceSpec) int {
	n, err := strconv.Atoi(s.Labels[docker.StepLabel(prefix)])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// pausedFailure is the Failure of a service whose update of the desired
// spec Swarm paused: Swarm's message, and the newest failed task of that
// spec with its error.
func (sw *swarmWorkload) pausedFailure() (Failure, bool) {
	svc := sw.svc
	if svc == nil || sw.w == nil || (svc.UpdateState != docker.UpdatePaused && svc.UpdateState != docker.UpdateRollbackPaused) ||
		svc.Spec.Task.Labels[docker.SpecLabel(sw.prefix)] != sw.w.Hash {
		return Failure{}, false
	}
	f := Failure{Workload: sw.name, Slot: NoSlot, Container: svc.Spec.Name, Action: sw.w.Update.FailureAction,
		Why: Reason{Kind: ReasonSwarmPaused, Message: svc.UpdateMessage}}
	var last *docker.Task
	for _, t := range sw.tasks {
		if t.Spec != sw.w.Hash || (t.State != docker.TaskFailed && t.State != docker.TaskRejected) {
			continue
		}
		if last == nil || t.Since.After(last.Since) || (t.Since.Equal(last.Since) && t.ID > last.ID) {
			last = t
		}
	}
	if last != nil {
		// The failure stays the service's (Container): Swarm's restart
		// supervisor keeps replacing the failed task with new ones of the
		// same spec, and one pause is one failure, not one per task.
		f.Slot = last.Slot
		f.Why.TaskState, f.Why.TaskErr, f.Why.Node = last.State, last.Err, sw.nodeName(last.NodeID)
	}
	return f, true
}

// templateDrift is how the service's task template differs from the
// desired one: its image, version, spec hash and endpoint mode; none
// when the template is the desired one.
func (sw *swarmWorkload) templateDrift() []Drift {
	t := sw.svc.Spec.Task
	hash, labelled := t.Labels[docker.SpecLabel(sw.prefix)]
	if !labelled {
		return []Drift{{Field: DriftLegacy}}
	}
	var out []Drift
	if !imageIs(t.Image, sw.w.Image) {
		out = append(out, Drift{DriftImage, t.Image, sw.w.Image})
	}
	if v := t.Labels[docker.VersionLabel(sw.prefix)]; v != sw.w.Version {
		out = append(out, Drift{DriftVersion, quoteEmpty(v), quoteEmpty(sw.w.Version)})
	}
	if hash != sw.w.Hash {
		out = append(out, Drift{DriftSpec, short(hash), short(sw.w.Hash)})
	}
	if want := endpointOf(sw.w); sw.svc.Spec.EndpointMode != want {
		out = append(out, Drift{DriftEndpoint, quoteEmpty(sw.svc.Spec.EndpointMode), want})
	}
	return out
}

// serviceDrift is how the service differs from the desired one outside
// its task template and update settings: its placement and its own
// labels (the step counter aside). Neither is in the spec hash: a write of
// them replaces no task, and Swarm moves only the tasks whose node no
// longer satisfies the placement.
func (sw *swarmWorkload) serviceDrift() []Drift {
	want := ServiceSpecFor(sw.prefix, sw.w)
	var out []Drift
	if have := sw.svc.Spec.Placement; !slices.Equal(have.Constraints, want.Placement.Constraints) ||
		!slices.Equal(have.Preferences, want.Placement.Preferences) || have.MaxReplicas != want.Placement.MaxReplicas {
		out = append(out, Drift{DriftPlacement, PlacementText(have), PlacementText(want.Placement)})
	}
	step := docker.StepLabel(sw.prefix)
	have := maps.Clone(sw.svc.Spec.Labels)
	delete(have, step)
	delete(want.Labels, step)
	if !maps.Equal(have, want.Labels) {
		out = append(out, Drift{DriftServiceLabels, labelsText(have), labelsText(want.Labels)})
	}
	return out
}

// PlacementText is a placement in the plan's words: "node.role==worker,
// spread node.labels.zone, at most 2 per node", "anywhere" for none.
func PlacementText(p docker.Placement) string {
	parts := slices.Clone(p.Constraints)
	for _, d := range p.Preferences {
		parts = append(parts, "spread "+d)
	}
	if p.MaxReplicas > 0 {
		parts = append(parts, fmt.Sprintf("at most %d per node", p.MaxReplicas))
	}
	if len(parts) == 0 {
		return "anywhere"
	}
	return strings.Join(parts, ", ")
}

// labelsText is labels as k=v, sorted; "none" for none.
func labelsText(m map[string]string) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ", ")
}

// DriftPlacement and DriftServiceLabels: a service's placement or own
// labels are not the desired ones; written in place, no task replaced.
const (
	DriftPlacement     DriftField = "placement"
	DriftServiceLabels DriftField = "service labels"
)

// DriftEndpoint: a service's endpoint mode is not the desired one
// (endpointOf); Swarm replaces every task to change it.
const DriftEndpoint DriftField = "endpoint mode"

// changes is the workload's spec diff, desired against the service: its
// template's drift, or once that is written, the drift of the tasks Swarm
// is yet to update; the replicas; the update settings (not while a paced
// roll, which has its own, is under way).
func (sw *swarmWorkload) changes(slots []SlotState) []string {
	switch {
	case sw.w == nil:
		return []string{"- workload removed from the desired state"}
	case sw.svc == nil:
		return []string{fmt.Sprintf("+ new workload: %d %s", sw.w.Replicas, plural(sw.w.Replicas, "replica"))}
	case sw.w.Err != nil:
		return nil
	}
	seen := map[string]bool{}
	var out []string
	note := func(line string) {
		if !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	for _, d := range sw.templateDrift() {
		note(d.Line())
	}
	staleLeft := false
	for _, st := range slots {
		for _, c := range st.Containers {
			if st.Desired && (c.Relation == RelStale || c.Relation == RelLegacy) {
				staleLeft = true
				for _, d := range c.Drift {
					note(d.Line())
				}
			}
		}
	}
	if have := sw.svc.Spec.Replicas; have != sw.w.Replicas {
		note(fmt.Sprintf("~ replicas: %d → %d", have, sw.w.Replicas))
	}
	for _, d := range sw.serviceDrift() {
		note(d.Line())
	}
	have, want := sw.svc.Spec.Update, UpdateConfigFor(sw.w)
	if !updateEqual(have, want) && !(sw.o.Paced && isPaced(have) && staleLeft) {
		note("~ update: " + UpdateText(have) + " → " + UpdateText(want))
	}
	slices.Sort(out)
	return out
}

// UpdateText is update settings in the plan's words: "parallelism 1,
// start-first, delay 0s, monitor 1m0s, on failure pause".
func UpdateText(u docker.UpdateConfig) string {
	return fmt.Sprintf("%s, %s, delay %s, monitor %s, on failure %s", parallelText(u.Parallelism),
		cmp.Or(u.Order, spec.OrderStopFirst), u.Delay, u.Monitor, cmp.Or(u.FailureAction, spec.FailurePause))
}

func parallelText(n int) string {
	if n == 0 {
		return "every slot at once"
	}
	return "parallelism " + strconv.Itoa(n)
}

// sortSwarmSteps orders a workload's steps: the service's first (its
// write, create or remove), then each slot's, by slot; within, by action,
// then container.
func sortSwarmSteps(steps []Step) {
	slices.SortStableFunc(steps, func(a, b Step) int {
		return cmp.Or(cmp.Compare(a.Slot, b.Slot), cmp.Compare(actionOrder[a.Action], actionOrder[b.Action]),
			cmp.Compare(a.Container, b.Container))
	})
}

func (sw *swarmWorkload) nodeName(id string) string {
	if n := sw.nodes[id]; n != nil && n.Hostname != "" {
		return n.Hostname
	}
	return id
}
