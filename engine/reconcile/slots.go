package reconcile

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// Relation is what a container is to its slot (DESIGN §1), as Diff
// classified it. Views render it; none works it out again.
type Relation string

const (
	RelUpToDate    Relation = "up-to-date"
	RelNeedsUpdate Relation = "needs-update" // up-to-date but for limits changed in place
	RelRevert      Relation = "revert"       // up-to-date, older than every stale container of its slot
	RelStale       Relation = "stale"
	RelLegacy      Relation = "legacy" // no spec label: treated like stale
	RelDuplicate   Relation = "duplicate"
	RelSurplus     Relation = "surplus" // slot index ≥ replicas
	RelOrphan      Relation = "orphan"  // no readable slot index
	RelExtra       Relation = "extra"   // its workload is not desired
	RelUnknown     Relation = "unknown" // its workload cannot be judged: the desired image is not resolved
)

// Fresh reports whether the relation is one of an up-to-date container:
// up-to-date, needs-update or revert.
func (r Relation) Fresh() bool { return r == RelUpToDate || r == RelNeedsUpdate || r == RelRevert }

// ContainerState is Diff's judgement of one container of a slot.
type ContainerState struct {
	ID        string
	Name      string
	Relation  Relation
	Condition Condition
	// Serves: this container serves its slot: the healthy up-to-date one,
	// or while there is none, the healthy old one that keeps serving.
	Serves bool
	// Drift is how a stale, legacy or needs-update container differs
	// from its desired spec.
	Drift []Drift
	// EngineReplaced: on a Swarm, this task is Swarm's own replacement of
	// its slot's last task, which failed or lost its node (DiffSwarm): the
	// engine's step, never an approval.
	EngineReplaced bool
}

// SlotState is one slot of a workload as Diff sees it. Plan.Slots holds
// one for every desired slot and for every other slot a container sits in
// (surplus indexes, orphans with Slot NoSlot, slots of extra workloads).
type SlotState struct {
	Workload string
	Slot     int  // NoSlot for orphans
	Desired  bool // a slot 0..replicas-1 of a desired workload
	// Containers: the up-to-date ones first, in the order Diff ranks them
	// (the first serves the slot, the rest are duplicates), then the
	// others, oldest first.
	Containers []ContainerState
	// Ready: a desired slot served by an up-to-date container that is
	// healthy (or counted healthy, unverified). A needs-update one is not
	// ready: its update is still to do.
	Ready bool
	// Wait is what the slot waits for, and Until until when (zero if
	// open-ended), when its plan holds a wait, or its spec is on hold.
	Wait  WaitKind
	Until time.Time
}

// Serving returns the container that serves the slot, if any.
func (s *SlotState) Serving() (ContainerState, bool) {
	for _, c := range s.Containers {
		if c.Serves {
			return c, true
		}
	}
	return ContainerState{}, false
}

// Container returns the state of the container with id, if the slot holds it.
func (s *SlotState) Container(id string) (ContainerState, bool) {
	for _, c := range s.Containers {
		if c.ID == id {
			return c, true
		}
	}
	return ContainerState{}, false
}

// Progress counts the desired slots, and those that are ready.
func (p Plan) Progress() (ready, total int) {
	for i := range p.Slots {
		if p.Slots[i].Desired {
			total++
			if p.Slots[i].Ready {
				ready++
			}
		}
	}
	return ready, total
}

// Container returns Diff's judgement of the container with id, if a slot
// holds it.
func (p Plan) Container(id string) (ContainerState, bool) {
	for i := range p.Slots {
		if c, ok := p.Slots[i].Container(id); ok {
			return c, true
		}
	}
	return ContainerState{}, false
}

// Slot returns the state of a workload's slot, if Diff saw it.
func (p Plan) Slot(workload string, slot int) (SlotState, bool) {
	for _, s := range p.Slots {
		if s.Workload == workload && s.Slot == slot {
			return s, true
		}
	}
	return SlotState{}, false
}

// serve marks the container that serves a desired slot, and whether the
// slot is ready: the first up-to-date one when it is healthy; else, while
// there is none, the first healthy old one keeps serving.
func (s *SlotState) serve() {
	s.Ready = false
	for k := range s.Containers {
		s.Containers[k].Serves = false
	}
	if len(s.Containers) == 0 {
		return
	}
	if p := &s.Containers[0]; p.Relation.Fresh() && p.Condition.Healthy() {
		p.Serves = true
		s.Ready = p.Relation != RelNeedsUpdate
		return
	}
	for k := range s.Containers {
		if c := &s.Containers[k]; (c.Relation == RelStale || c.Relation == RelLegacy) && c.Condition.Healthy() {
			c.Serves = true // the old one keeps serving
			return
		}
	}
}

// WithDrained is the plan with container id drained (its drain began in a
// step in flight): a copy, as snapshots share the plan.
func (p Plan) WithDrained(id string) Plan {
	for i := range p.Slots {
		for k, c := range p.Slots[i].Containers {
			if c.ID != id || c.Condition == ConditionDrained {
				continue
			}
			p.Slots = slices.Clone(p.Slots)
			st := &p.Slots[i]
			st.Containers = slices.Clone(st.Containers)
			st.Containers[k].Condition = ConditionDrained
			if st.Desired {
				st.serve()
			} else {
				st.Containers[k].Serves = false
			}
			return p
		}
	}
	return p
}

// judge is what Diff needs to judge any container of a workload.
type judge struct {
	minReady, deadline time.Duration
	job                bool
	o                  *Observed
}

func judgeFor(w *spec.Resolved, o *Observed) judge {
	j := judge{minReady: spec.DefaultMinReady, deadline: spec.DefaultHealthDeadline, o: o}
	if w != nil {
		j.minReady, j.deadline, j.job = w.Update.MinReady, w.Update.HealthDeadline, w.Job
	}
	return j
}

// of is the exported condition of c: drained while its pre_stop ran,
// unverified when counted healthy without a healthcheck's word.
func (j judge) of(c *docker.Container) Condition {
	if j.o.Draining[c.ID] {
		return ConditionDrained
	}
	cond, _ := conditionOf(c, j.minReady, j.deadline, j.o.Now, j.o.SkipHealth)
	cond = jobCondition(j.job, c, cond)
	if cond == condHealthy && (j.o.SkipHealth || !c.HasHealthcheck) {
		return ConditionUnverified
	}
	return Condition(cond)
}

// slotStates lays out a desired workload's slots as Diff classified them.
// steps are the workload's steps, for each slot's wait.
// They are appended to out; n is how many containers the workload has,
// so that their states share one allocation.
func slotStates(out []SlotState, n int, prefix string, w *spec.Resolved, slots []slot, surplus map[int][]*docker.Container, orphans []*docker.Container, held []int, steps []Step, o *Observed) []SlotState {
	j := judgeFor(w, o)
	specKey := docker.SpecLabel(prefix)
	want := DesiredLimits(w.Workload)
	first := len(out)
	all := make([]ContainerState, 0, n)
	take := func(k int) []ContainerState {
		c := all[len(all) : len(all) : len(all)+k]
		all = all[:len(all)+k]
		return c
	}
	for i := range slots {
		s := &slots[i]
		st := SlotState{Workload: w.Name, Slot: i, Desired: true, Containers: take(len(s.fresh) + len(s.stale))}
		for k, c := range s.fresh {
			cs := ContainerState{ID: c.ID, Name: c.Name, Relation: RelDuplicate, Condition: j.of(c)}
			if k == 0 {
				switch {
				case len(s.stale) > 0 && !isNew(c, s.stale):
					cs.Relation = RelRevert
				case !LimitsEqual(c.Limits, want):
					cs.Relation = RelNeedsUpdate
					cs.Drift = driftOf(prefix, w, c, time.Time{})
				default:
					cs.Relation = RelUpToDate
				}
			}
			st.Containers = append(st.Containers, cs)
		}
		for _, k := range oldestFirst(s.stale) {
			c := s.stale[k]
			cs := ContainerState{ID: c.ID, Name: c.Name, Relation: RelStale, Condition: j.of(c), Drift: s.drift[k]}
			if _, ok := c.Labels[specKey]; !ok {
				cs.Relation = RelLegacy
			}
			st.Containers = append(st.Containers, cs)
		}
		st.serve()
		out = append(out, st)
	}
	for _, idx := range sortedIdx(surplus) {
		out = append(out, SlotState{Workload: w.Name, Slot: idx, Containers: states(take(len(surplus[idx])), surplus[idx], RelSurplus, j)})
	}
	if len(orphans) > 0 {
		out = append(out, SlotState{Workload: w.Name, Slot: NoSlot, Containers: states(take(len(orphans)), orphans, RelOrphan, j)})
	}
	for _, i := range held {
		out[first+i].Wait = WaitHold
	}
	addWaits(out[first:], steps)
	return out
}

// unjudgedStates lays out the containers of a workload Diff cannot judge
// (w nil: not desired, so extra; else its image is not resolved) by the
// slot label they carry.
func unjudgedStates(out []SlotState, prefix, name string, w *spec.Resolved, cs []*docker.Container, o *Observed) []SlotState {
	j := judgeFor(w, o)
	rel := RelExtra
	if w != nil {
		rel = RelUnknown
	}
	bySlot := map[int][]*docker.Container{}
	if w != nil {
		for i := range w.Replicas {
			bySlot[i] = nil
		}
	}
	for _, c := range cs {
		idx, ok := slotOf(c, prefix)
		if !ok {
			idx = NoSlot
		}
		bySlot[idx] = append(bySlot[idx], c)
	}
	idxs := sortedIdx(bySlot)
	if len(bySlot[NoSlot]) > 0 { // orphans last
		idxs = append(slices.DeleteFunc(idxs, func(i int) bool { return i == NoSlot }), NoSlot)
	}
	for _, idx := range idxs {
		r := rel
		desired := w != nil && idx >= 0 && idx < w.Replicas
		if w != nil && !desired {
			r = RelSurplus
			if idx == NoSlot {
				r = RelOrphan
			}
		}
		out = append(out, SlotState{Workload: name, Slot: idx, Desired: desired, Containers: states(make([]ContainerState, 0, len(bySlot[idx])), bySlot[idx], r, j)})
	}
	return out
}

// addWaits copies each slot's wait step onto its state.
func addWaits(out []SlotState, steps []Step) {
	for _, st := range steps {
		if st.Action != ActWait || st.Slot == NoSlot {
			continue
		}
		for k := range out {
			if out[k].Slot == st.Slot {
				out[k].Wait, out[k].Until = st.Wait, st.Until
				break
			}
		}
	}
}

// states appends cs to out, judged, oldest first, all of one relation.
func states(out []ContainerState, cs []*docker.Container, rel Relation, j judge) []ContainerState {
	for _, k := range oldestFirst(cs) {
		out = append(out, ContainerState{ID: cs[k].ID, Name: cs[k].Name, Relation: rel, Condition: j.of(cs[k])})
	}
	return out
}

// oldestFirst returns the indexes of cs by creation, then name.
func oldestFirst(cs []*docker.Container) []int {
	if len(cs) < 2 {
		return single[:len(cs)]
	}
	out := make([]int, len(cs))
	for i := range out {
		out[i] = i
	}
	slices.SortStableFunc(out, func(a, b int) int {
		if c := cs[a].Created.Compare(cs[b].Created); c != 0 {
			return c
		}
		return cmp.Compare(cs[a].Name, cs[b].Name)
	})
	return out
}

// single is oldestFirst's answer for one container (or none).
var single = []int{0}

func sortedIdx[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Unresolved is the plan while no desired state is known: no steps, and
// the slots of every managed container by the labels it carries, each
// relation unknown.
func Unresolved(prefix string, o *Observed) Plan {
	managed, workloadKey := docker.ManagedLabel(prefix), docker.WorkloadLabel(prefix)
	byWorkload := map[string][]*docker.Container{}
	for i := range o.Containers {
		c := &o.Containers[i]
		if c.Labels[managed] != "true" || c.Labels[workloadKey] == "" {
			continue
		}
		byWorkload[c.Labels[workloadKey]] = append(byWorkload[c.Labels[workloadKey]], c)
	}
	var p Plan
	for _, name := range slices.Sorted(maps.Keys(byWorkload)) {
		p.Slots = unjudgedStates(p.Slots, prefix, name, nil, byWorkload[name], o)
	}
	for _, st := range p.Slots {
		for k := range st.Containers {
			st.Containers[k].Relation = RelUnknown
		}
	}
	return p
}
