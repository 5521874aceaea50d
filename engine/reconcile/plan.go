package reconcile

import (
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// Action is what a step does.
type Action string

const (
	ActStart   Action = "start"   // create and start a new container
	ActStop    Action = "stop"    // stop and remove: surplus, extra, cold, duplicate
	ActRoll    Action = "roll"    // stop and remove an old container whose replacement serves
	ActRestart Action = "restart" // restart a crashed container in place
	ActUpdate  Action = "update"  // change limits in place
	ActWait    Action = "wait"    // nothing to do yet; Until says how long
	ActCanary  Action = "canary"  // a canary step: a share of the traffic, measured against the stable cohort (Canary)
	ActPull    Action = "pull"    // pull the workload's image through the engine (Container holds the reference), before anything of it starts or stops

	// A Swarm's (swarm.go): each writes, creates or removes a workload's
	// service (Step.Service); Swarm places and replaces the tasks.
	ActCreate   Action = "create"   // create the service: its slots start on the desired spec
	ActRemove   Action = "remove"   // remove the service (extra, duplicate) and, through Swarm, its tasks
	ActScale    Action = "scale"    // write the replicas in place: no task is replaced
	ActRollout  Action = "rollout"  // write a new task template: Swarm rolls every slot, or (paced) one
	ActAdvance  Action = "advance"  // paced: a write outside the task template: Swarm updates the next slot
	ActSettings Action = "settings" // write the file's update settings: no task is replaced, or Swarm rolls the slots left with them
	ActResume   Action = "resume"   // send again the update Swarm paused on a failure (the operator's retry)
)

// actionOrder sorts steps within a slot: new containers first, waits last.
var actionOrder = map[Action]int{ActPull: -1, ActStart: 0, ActRestart: 1, ActUpdate: 2, ActCanary: 3, ActRoll: 3, ActStop: 4, ActWait: 5,
	ActCreate: 0, ActRollout: 0, ActAdvance: 0, ActResume: 0, ActSettings: 1, ActScale: 2, ActRemove: 4}

// summaryOrder is the order of the one-line summary.
var summaryOrder = []Action{ActPull, ActCreate, ActStart, ActRollout, ActAdvance, ActResume, ActCanary, ActRoll, ActRestart,
	ActUpdate, ActSettings, ActScale, ActStop, ActRemove, ActWait}

// NoSlot is the Slot of a step on a container without a readable slot index.
const NoSlot = -1

// Step is one thing to do. Steps are plain data: they render, log and compare.
type Step struct {
	Action      Action
	Workload    string
	Slot        int    // NoSlot for orphans and unreadable slots
	Container   string // container name (for start: the name it will get; for pull: the image reference)
	ContainerID string // "" for start
	// Why is why the step is in the plan, as data: its kind and the facts
	// its words are made of. Reason is its words (Why.String()), written
	// once by Diff, for the journal, the JSON documents and the views to
	// print; whoever must tell steps apart reads Why, never Reason.
	Why    Reason
	Reason string

	Until    time.Time // wait: when the situation is next looked at, zero if open-ended
	Wait     WaitKind  // wait: what it waits for
	Downtime bool      // stop-first: the slot is down until the new container is healthy
	Hold     string    // rollback: put this spec hash on hold once the step succeeds
	// Replacement is, for a roll, the up-to-date container that serves
	// the slot once this one goes.
	Replacement string

	Create *docker.CreateSpec // start
	Grace  time.Duration      // stop, roll, restart
	Limits docker.Limits      // update
	Canary *CanaryStep        // canary: which step, its share, length and analysis

	// SplitFirst is, for the start of a container of a canary's spec,
	// that spec: its split (share 0) must be set in the proxy before the
	// container is created (RunOptions.Split), so that it serves nothing
	// until a canary step's share sends it requests (DESIGN §12).
	SplitFirst string

	// Stop and roll of a running container drain it first: PreStop (from
	// its label: the command it was created with) is exec'd in it, then
	// the stop waits up to Drain, less once the proxy in front lets go of
	// it (or, with no proxy that answers, once it is unhealthy).
	PreStop []string
	Drain   time.Duration

	// Then marks a step that follows once the plan's waits end (a "then"
	// row, in WorkloadPlan.Then): shown, never run. It has the Key of the
	// step it will become, so an approval given to it matches that step
	// when a later plan holds it.
	Then bool

	// Service is, for a step on a Swarm (swarm.go), the service it
	// creates, writes or removes; nil for every other step.
	Service *ServiceStep
}

// WaitKind is what a wait step waits for (DESIGN §5), so that a view says
// it from the step's fields, never from its reason's words.
type WaitKind string

const (
	// WaitBoot: an up-to-date container not yet healthy since its start;
	// Until is its health deadline (zero once a new one missed it).
	WaitBoot WaitKind = "boot"
	// WaitReady: a container without a healthcheck; Until is when it
	// counts healthy (unverified), at min_ready.
	WaitReady WaitKind = "ready"
	// WaitBackoff: a crashed container's restart backoff; Until is its end.
	WaitBackoff WaitKind = "backoff"
	// WaitQueue: other slots go first: update.parallelism (rule 8), or
	// running containers restarting at most that many at once (rule 4).
	WaitQueue WaitKind = "queue"
	// WaitBlueGreen: an old container drains once every slot is healthy.
	WaitBlueGreen WaitKind = "blue-green"
	// WaitRestarting: the engine is restarting the container (rule 12).
	WaitRestarting WaitKind = "restarting"
	// WaitPaused: the container is paused on the engine, left alone.
	WaitPaused WaitKind = "paused"
	// WaitCanary: the slot's old container drains only once the canary
	// of its workload's spec passed every step, or a canary step ended
	// with too little traffic and holds (on_insufficient_traffic hold).
	WaitCanary WaitKind = "canary"
	// WaitDelay: the slot starts rolling update.delay after the last slot
	// of its workload finished; Until is then.
	WaitDelay WaitKind = "delay"
	// WaitDependency: the slot's first container starts once a workload
	// it depends on (depends_on) meets its condition; open-ended.
	WaitDependency WaitKind = "dependency"
	// WaitHold: the slot is not started while its workload's desired spec
	// is on hold (rule 9); only in a SlotState, never a step.
	WaitHold WaitKind = "hold"
	// WaitSwarm: on a Swarm, Swarm is at work (swarm.go): its updater is
	// to take the slot, a task is to be placed, old or surplus tasks are
	// being retired, or Swarm watches the new tasks for its monitor
	// period. Open-ended: Swarm says nothing of when.
	WaitSwarm WaitKind = "swarm"
)

// Executable reports whether the step calls the engine: every action but
// wait, and never a then row.
func (s Step) Executable() bool { return s.Action != ActWait && !s.Then }

// Key identifies a step across plans: an approved step is run only while a
// fresh plan still holds a step with the same key.
func (s Step) Key() string {
	if s.Canary != nil {
		// Each canary step is approved on its own.
		return fmt.Sprintf("%s/%s/%d/%s/%d", s.Action, s.Workload, s.Slot, s.Container, s.Canary.Index)
	}
	if s.Service != nil {
		// Each write to a service is approved on its own: every write
		// carries the next step counter (a paced roll's advances share
		// everything else).
		return fmt.Sprintf("%s/%s/%d/%s/%s", s.Action, s.Workload, s.Slot, s.Container, s.Service.Counter())
	}
	return fmt.Sprintf("%s/%s/%d/%s", s.Action, s.Workload, s.Slot, s.Container)
}

// Target is the step's object for humans: "web/2" or "web/orphan".
func (s Step) Target() string {
	if s.Slot == NoSlot {
		return s.Workload + "/-"
	}
	return fmt.Sprintf("%s/%d", s.Workload, s.Slot)
}

func (s Step) String() string {
	return fmt.Sprintf("%-7s %-10s %s  %s", s.Action, s.Target(), s.Container, s.Reason)
}

// Failure is a new container that missed its health deadline.
type Failure struct {
	Workload  string
	Slot      int
	Container string
	Action    string // the workload's failure_action
	Why       Reason // ReasonHealthDeadline: what it was at its deadline
	Reason    string // Why's words
}

// Text is the failure as one line, without the plan's "! ": "web/0
// rollcall-web-0-2222bbbb: booting, not healthy within health_deadline 1m
// (failure_action pause)".
func (f Failure) Text() string {
	return fmt.Sprintf("%s/%d %s: %s (failure_action %s)", f.Workload, f.Slot, f.Container, f.Reason, f.Action)
}

// WorkloadPlan is one workload's block of the plan tree.
type WorkloadPlan struct {
	Name    string
	Changes []string // spec diff lines: "~ image: web:v1 → web:v2"
	Steps   []Step
	// Then are the steps that follow once the waits end, in the order they
	// would come (each with Then set): the stop or roll of an old container
	// once its replacement is healthy, the next slot's start and its roll,
	// a restart once its backoff runs out. They are not in Steps, so they
	// never run and never count in Steps, Executable, Empty, Counts or
	// Summary: the plan is empty exactly when there is nothing to do or
	// wait for now, and a then row only ever follows a step or a wait.
	Then     []Step
	Failures []Failure
	Error    string // the workload cannot be acted on (image missing); it has no steps
	Notes    []string
	// Held are the slots, in order, that are not started because the
	// workload's desired spec, HeldSpec (its hash), is on hold (rule 9):
	// the desired state is not reached while there are any, though nothing
	// runs or waits.
	Held     []int
	HeldSpec string
	// Privileged is set when the workload's containers run privileged
	// (spec.Options.Privileged) and the plan acts on it: the tree says so.
	Privileged bool
}

// Plan is the whole reconcile plan, ordered deterministically.
type Plan struct {
	Workloads []WorkloadPlan // only workloads with something to say, sorted by name
	Notes     []string       // about containers that belong to no workload
	// Slots is the state of every slot, as Diff classified it (DESIGN §5):
	// every workload's, converged or not, by workload name then slot.
	Slots []SlotState
}

// Steps returns every step in plan order.
func (p Plan) Steps() []Step {
	var out []Step
	for _, w := range p.Workloads {
		out = append(out, w.Steps...)
	}
	return out
}

// Executable returns the steps that call the engine, in plan order.
func (p Plan) Executable() []Step {
	var out []Step
	for _, w := range p.Workloads {
		for _, s := range w.Steps {
			if s.Executable() {
				out = append(out, s)
			}
		}
	}
	return out
}

// Empty reports whether there is nothing to do or wait for: the converged state.
func (p Plan) Empty() bool {
	for _, w := range p.Workloads {
		if len(w.Steps) > 0 {
			return false
		}
	}
	return true
}

// Then returns every then row in plan order: what follows once the waits end.
func (p Plan) Then() []Step {
	var out []Step
	for _, w := range p.Workloads {
		out = append(out, w.Then...)
	}
	return out
}

// ThenSummary is the one-line summary of the then rows, e.g. "2 start · 3
// roll", or "" when there are none.
func (p Plan) ThenSummary() string {
	n := map[Action]int{}
	for _, w := range p.Workloads {
		for _, s := range w.Then {
			n[s.Action]++
		}
	}
	if len(n) == 0 {
		return ""
	}
	return summarize(n)
}

// SummaryLine is the summary with what follows once the waits end:
// "1 roll · 2 wait · then 2 start · 2 roll".
func (p Plan) SummaryLine() string {
	if t := p.ThenSummary(); t != "" {
		return p.Summary() + " · then " + t
	}
	return p.Summary()
}

// Failures returns every failure in plan order.
func (p Plan) Failures() []Failure {
	var out []Failure
	for _, w := range p.Workloads {
		out = append(out, w.Failures...)
	}
	return out
}

// Errors returns "workload: error" for every workload that cannot be acted on.
func (p Plan) Errors() []string {
	var out []string
	for _, w := range p.Workloads {
		if w.Error != "" {
			out = append(out, w.Name+": "+w.Error)
		}
	}
	return out
}

// Counts returns how many steps of each action the plan holds.
func (p Plan) Counts() map[Action]int {
	n := map[Action]int{}
	for _, w := range p.Workloads {
		for _, s := range w.Steps {
			n[s.Action]++
		}
	}
	return n
}

// Summary is the one-line summary, e.g. "2 start · 1 roll · 1 restart · 1
// stop". A plan with no step but a workload that cannot be acted on says
// so, never "nothing to do" beside an error.
func (p Plan) Summary() string {
	n := p.Counts()
	if errs := p.Errors(); len(n) == 0 && len(errs) > 0 {
		return fmt.Sprintf("nothing can be done: %d %s in error", len(errs), plural(len(errs), "workload"))
	}
	return summarize(n)
}

// SummaryOf is the one-line summary of steps in the plan's words, "2
// start · 1 roll", or "nothing to do" for none: what ran, as apply and
// the fleet's apply end on it.
func SummaryOf(steps []Step) string {
	n := map[Action]int{}
	for _, s := range steps {
		n[s.Action]++
	}
	return summarize(n)
}

func summarize(n map[Action]int) string {
	var parts []string
	for _, a := range summaryOrder {
		if n[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[a], a))
		}
	}
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, " · ")
}

// Tone is how a piece of a tree line stands out where it is styled; a
// plain rendering ignores it.
type Tone int

const (
	TonePlain   Tone = iota
	ToneHeading      // a workload's name
	ToneMuted        // a container, a countdown, a then row's "then"
	ToneChange       // a spec diff line
	ToneBad          // a failure, a workload in error
	ToneWarn         // a downtime step's reason
	ToneNote         // a note
	ToneSummary      // the summary line
	ToneAction       // a step's action: styled by Span.Action
)

// Span is one piece of a tree line.
type Span struct {
	Text   string
	Tone   Tone
	Action Action // ToneAction: which
}

// TreeLine is one line of the plan tree: a top-level line, or, Nested, a
// line under the workload before it, drawn with a branch glyph.
type TreeLine struct {
	Spans  []Span
	Nested bool
}

// Text is the line's words, without its branch glyph.
func (l TreeLine) Text() string {
	var b strings.Builder
	for _, s := range l.Spans {
		b.WriteString(s.Text)
	}
	return b.String()
}

// Tree is the plan as a tree, as data: one block per workload with its
// spec diff, failures, steps, then rows and notes nested under it, the
// plan's notes, and the summary line. Every rendering of a plan, plain
// or styled, draws this tree.
func (p Plan) Tree() []TreeLine {
	var out []TreeLine
	top := func(spans ...Span) { out = append(out, TreeLine{Spans: spans}) }
	nest := func(spans ...Span) { out = append(out, TreeLine{Spans: spans, Nested: true}) }
	for _, w := range p.Workloads {
		if w.Error != "" {
			top(Span{Text: w.Name, Tone: ToneHeading}, Span{Text: "  ! " + w.Error, Tone: ToneBad})
		} else {
			top(Span{Text: w.Name, Tone: ToneHeading})
		}
		for _, c := range w.Changes {
			nest(Span{Text: c, Tone: ToneChange})
		}
		if w.Privileged {
			nest(Span{Text: PrivilegedNote, Tone: ToneNote})
		}
		for _, f := range w.Failures {
			nest(Span{Text: "! " + f.Text(), Tone: ToneBad})
		}
		for _, s := range w.Steps {
			nest(s.spans()...)
		}
		for _, s := range w.Then {
			nest(s.spans()...)
		}
		for _, n := range w.Notes {
			nest(Span{Text: n, Tone: ToneNote})
		}
	}
	for _, n := range p.Notes {
		top(Span{Text: "note: " + n, Tone: ToneNote})
	}
	top(Span{Text: p.SummaryLine(), Tone: ToneSummary})
	return out
}

// spans is the step's line in the tree: "roll    0   web-0-…  reason
// (pre_stop …, drain ≤5s)"; a then row reads "then roll …", a wait says
// until when.
func (s Step) spans() []Span {
	var out []Span
	if s.Then {
		out = append(out, Span{Text: "then ", Tone: ToneMuted})
	}
	reason := Span{Text: s.Reason}
	if s.Downtime {
		reason.Tone = ToneWarn
	}
	out = append(out,
		Span{Text: fmt.Sprintf("%-7s", s.Action), Tone: ToneAction, Action: s.Action},
		Span{Text: fmt.Sprintf(" %-3s ", slotText(s.Slot))},
		Span{Text: s.Container, Tone: ToneMuted},
		Span{Text: "  "}, reason)
	if s.Action == ActWait && !s.Until.IsZero() {
		out = append(out, Span{Text: " (until " + s.Until.UTC().Format(time.TimeOnly) + ")", Tone: ToneMuted})
	}
	if d := s.DrainText(); d != "" {
		out = append(out, Span{Text: " (" + d + ")", Tone: ToneMuted})
	}
	return out
}

// String renders the plan's tree plain, for logs and tests.
func (p Plan) String() string {
	lines := p.Tree()
	var b strings.Builder
	for i, l := range lines {
		if l.Nested {
			glyph := "├─ "
			if i == len(lines)-1 || !lines[i+1].Nested {
				glyph = "└─ "
			}
			b.WriteString("  " + glyph)
		}
		b.WriteString(l.Text() + "\n")
	}
	return b.String()
}

func slotText(slot int) string {
	if slot == NoSlot {
		return "-"
	}
	return fmt.Sprint(slot)
}
