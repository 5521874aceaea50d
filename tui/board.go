package tui

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/theme"
)

// board is what the console draws, made from one session.Snapshot when it
// arrives. Every string from the engine or the desired state is sanitized
// here, once, so no component ever sees a raw one: the fields that stay raw
// (workload, key, id) are only ever sent back to the session, never drawn.
type board struct {
	seq  uint64
	at   time.Time
	mode session.Mode

	header headerInfo

	slots   []slotRow
	blocks  []planBlock
	notes   []string // plan notes about containers of no workload
	summary string
	running *stepRow // the running step when it has left the plan
	next    string   // raw key of the step enter approves
	busy    bool     // a step is running: the spinner turns
	doing   string   // the running step, "restart worker/0"

	pause   *pauseInfo
	confirm *confirmInfo
	events  []eventRow

	needs slotNeeds // the widths the slots pane's texts need whole
	gen   uint64    // this board's number (cache.go): each snapshot makes a new one
	// planTicks: a step shows a countdown, so the plan pane moves with
	// the clock
	planTicks bool

	standing session.Standing // where the session stands, as it decided (Snapshot.Standing)
	skipped  int              // steps skipped: the plan is not done while one is
	waiting  string           // why nothing runs
	settling time.Duration    // the changed desired state settles this much longer
	rollout  *rolloutRow      // the operator approved the whole rollout
	refusal  string
	halted   string          // the journal broke: nothing runs
	rolled   []rolledBackRow // automatic rollbacks, oldest first
}

type rolloutRow struct {
	by   string
	left int
}

type rolledBackRow struct {
	target    string // "web/0"
	container string // the new container stopped
	serving   string // what keeps serving the slot, "" if unknown
	hash      string
	reason    string
	at        time.Time
}

type headerInfo struct {
	// canaries are the canary steps under way or just ended (canary.go).
	canaries   []canaryRow
	engine     string // endpoint and version, or "simulated"
	simulated  bool
	connected  bool
	engineErr  string
	source     string
	loaded     bool // a desired state has loaded
	sourceErr  string
	sourceHint string // the hint of the first error, as plan prints it
	stateAge   string // how old the last good desired state of a polled source is
	lockHeld   bool
	lockHolder string // another session holds the lock
	lockErr    string
	lockFree   bool // the lock this console wanted came free
	progress   session.Progress
	skipHealth bool
	holds      []string // "web 3f2a1b2c"
	proxy      bool     // the desired state names a proxy: the slots show what it routes
	proxyErr   string   // the proxy does not answer: "dial tcp 127.0.0.1:2019: connect: connection refused"

	held map[string][]string // raw workload -> the spec hashes it has on hold (t lifts them)
	// pins are the standing pins (rollcall rollback, u): "web rev 1 by
	// alice 15:04"; pinned by raw workload, its revision (t lifts it).
	pins   []string
	pinned map[string]int
}

type slotRow struct {
	workload string // raw: sent back in Rollback and Recreate
	slot     int
	target   string // "web/0", "web/-"
	desired  *desiredInfo
	cs       []containerRow
	changes  []string // the workload's spec diff lines from the plan
	ready    bool     // Diff's: a desired slot served up to date and healthy
	hay      string   // lower-case text the filter searches
}

type desiredInfo struct {
	image, version, hash, limits, err string
	rawLimits                         docker.Limits
}

type containerRow struct {
	id       string // raw: what the log tail asks for; drawn only through shortID(sanitize)
	shortID  string
	name     string
	short    string // name without "<prefix>-": the tables' column
	image    string
	state    string
	health   theme.Status
	relation reconcile.Relation // what it is to its slot, as Diff classified it
	serves   bool               // it serves its slot (Diff's)
	age      time.Duration      // since created
	running  bool
	up       time.Duration // running: since its last start; else since it stopped
	restarts int
	exitCode int
	oom      bool
	exit     string // "exit 137 (OOM)" for a container that stopped
	lastExit string // "137 OOM": the last exit of one that runs again, "" if clean
	ports    string
	node     string              // on a swarm, the node the task runs on; "" on a host
	diff     []string            // desired vs this container: "~ image: web:v1 → web:v2"
	proxy    *session.ProxyRoute // what the proxy holds for it; nil: no proxy, no answer, or no address
}

// undesired reports whether workload w is no longer desired: it has slots
// (its containers), and none of them has a desired spec.
func (b *board) undesired(w string) bool {
	seen := false
	for i := range b.slots {
		if b.slots[i].workload == w {
			if b.slots[i].desired != nil {
				return false
			}
			seen = true
		}
	}
	return seen
}

// upOrDown is how long c has been up ("up 36s") or, stopped, down ("down
// 9s"): one figure with one word, in the slots pane and the detail pane.
func (c *containerRow) upOrDown() string {
	if c.running {
		return "up " + age(c.up)
	}
	return "down " + age(c.up)
}

type planBlock struct {
	workload string
	name     string
	err      string
	changes  []string
	failures []string
	notes    []string
	summary  string
	steps    []stepRow
	hay      string
}

type stepRow struct {
	key        string // raw: sent back in ApproveStep and Skip
	workload   string // raw: sent back in Rollback and Recreate
	slot       int
	executable bool
	action     string
	target     string
	container  string
	reason     string
	status     theme.Status
	err        string
	confirm    bool // stop-first: runs only after Confirm(yes)
	then       bool // a step to come once a wait ends: shown, not yet executable
	until      time.Time
	wait       reconcile.WaitKind // a wait's kind: what its countdown is
	retryAt    time.Time          // failed in auto mode: tried again then
	pull       *pullRow           // a pull step: its progress or its failure's kind; nil for any other step
	hay        string
}

type pauseInfo struct {
	reason    string
	operator  bool
	workload  string // raw
	container string
	health    []string
	logs      []string
	detailErr string
}

type confirmInfo struct {
	id       string // identifies the question across snapshots
	title    string
	prompt   string
	declined bool
}

type eventRow struct {
	at   time.Time
	kind eventKind
	text string
}

type eventKind int

const (
	kindEvent eventKind = iota
	kindNote
	kindDone
	kindFailed
)

// maxEventRows bounds the events pane's history.
const maxEventRows = 200

func newBoard(s session.Snapshot) board {
	b := board{seq: s.Seq, gen: boardGen.Add(1), at: s.At, mode: s.Mode, next: s.Next, busy: s.Running != nil}
	b.header = headerOf(s)

	changes := map[string][]string{}
	inPlan := map[string]bool{}
	for _, w := range s.Plan.Workloads {
		blk := planBlock{workload: w.Name, name: sanitize(w.Name), err: sanitize(w.Error)}
		for _, c := range w.Changes {
			blk.changes = append(blk.changes, sanitize(c))
		}
		changes[w.Name] = blk.changes
		for _, f := range w.Failures {
			blk.failures = append(blk.failures, sanitize(f.Text()))
		}
		for _, n := range w.Notes {
			blk.notes = append(blk.notes, sanitize(n))
		}
		counts := map[reconcile.Action]int{}
		for _, st := range w.Steps {
			counts[st.Action]++
			row := stepOf(st, s)
			inPlan[row.key] = true
			blk.steps = append(blk.steps, row)
		}
		// The then rows: what follows once the waits end, so the whole roll
		// shows from its first step. They carry the key of the step they
		// will become; they are shown, never approved.
		for _, st := range w.Then {
			row := stepOf(st, s)
			row.then, row.executable, row.status = true, false, theme.Waiting
			blk.steps = append(blk.steps, row)
		}
		one := reconcile.Plan{Workloads: []reconcile.WorkloadPlan{{Steps: w.Steps, Then: w.Then}}}
		blk.summary = one.SummaryLine()
		blk.hay = strings.ToLower(blk.name + " " + blk.err + " " + strings.Join(blk.changes, " ") + " " + strings.Join(blk.failures, " "))
		b.blocks = append(b.blocks, blk)
	}
	for _, n := range s.Plan.Notes {
		b.notes = append(b.notes, sanitize(n))
	}
	b.summary = s.Plan.SummaryLine()
	if r := s.Running; r != nil {
		b.doing = sanitize(string(r.Step.Action) + " " + r.Step.Target())
		if r.Drain != nil { // "draining web-0-73f3 (pre_stop ran, 3s left)"
			b.doing += " · " + sanitize(r.Drain.Text(s.At))
		}
		if r.Step.Action == reconcile.ActPull && r.Pull != nil { // "pull web · 40% · 2/4 layers · 1.6/4.0 MiB"
			p := r.Pull.PullProgress
			b.doing += " · " + pullFigures(&p)
		}
	}
	if r := s.Running; r != nil && !inPlan[r.Step.Key()] {
		row := stepOf(r.Step, s)
		row.status = theme.Running
		b.running = &row
	}

	ticks := func(r *stepRow) bool { return !r.until.IsZero() || !r.retryAt.IsZero() }
	for bi := range b.blocks {
		for si := range b.blocks[bi].steps {
			b.planTicks = b.planTicks || ticks(&b.blocks[bi].steps[si])
		}
	}
	if b.running != nil {
		b.planTicks = b.planTicks || ticks(b.running)
	}

	b.slots = make([]slotRow, 0, len(s.Slots))
	lt := limitTexts{}
	// A standing pin runs its revision; when the revision's tag names
	// another image now its containers come from the image ID, but the
	// operator reads the revision's image reference (the header says it
	// is pinned).
	pinnedRef := map[string]string{}
	for _, p := range s.Pins {
		if p.Standing && p.Err == "" && p.Revision.Image != "" {
			pinnedRef[p.Workload] = p.Revision.Image
		}
	}
	for _, v := range s.Slots {
		r := slotOf(v, s.Prefix, s.At, changes[v.Workload], lt, s.Proxy)
		if ref, ok := pinnedRef[v.Workload]; ok && r.desired != nil && r.desired.err == "" {
			r.desired.image = sanitize(ref)
		}
		b.slots = append(b.slots, r)
	}
	b.header.progress = progressOf(b.slots)
	b.needs = needsOf(b.slots)

	if p := s.Pause; p != nil {
		b.pause = &pauseInfo{reason: sanitize(p.Reason), operator: p.ByOperator, workload: p.Workload,
			container: sanitize(p.Container), health: sanitizeLines(p.Health), detailErr: firstLine(p.DetailErr)}
		for _, l := range p.Logs {
			b.pause.logs = append(b.pause.logs, sanitizeLines(l)...)
		}
	}
	if c := s.Confirm; c != nil {
		ci := &confirmInfo{id: string(c.Kind) + "\x00" + c.Key + "\x00" + c.Prompt, prompt: sanitize(c.Prompt), declined: c.Declined}
		switch c.Kind {
		case session.ConfirmDowntime:
			ci.title = "Downtime: " + sanitize(c.Step.Target())
		default:
			ci.title = "Blast radius"
		}
		b.confirm = ci
	}
	b.events = eventsOf(s)

	b.standing, b.waiting, b.settling, b.halted = s.Standing, sanitize(s.Waiting), s.Settling, firstLine(s.Halted)
	for _, st := range s.Steps {
		if st.State == session.StepSkipped {
			b.skipped++
		}
	}
	if r := s.Rollout; r != nil {
		b.rollout = &rolloutRow{by: sanitize(r.By), left: r.Left}
	}
	if r := s.Refusal; r != nil {
		b.refusal = sanitize(fmt.Sprintf("refused: would stop %d of %d running containers: %s", r.Stops, r.Running, r.Reason))
	}
	for _, rb := range s.RolledBack {
		b.rolled = append(b.rolled, rolledBackOf(rb, s))
	}
	return b
}

// rolledBackOf is an automatic rollback, with the container that keeps
// serving its slot (the first of the slot's containers, by the session's
// order), if one does.
func rolledBackOf(rb session.RollbackInfo, s session.Snapshot) rolledBackRow {
	r := rolledBackRow{target: sanitize(fmt.Sprintf("%s/%d", rb.Workload, rb.Slot)), container: sanitize(rb.Container),
		hash: sanitize(shortHash(rb.Hash)), reason: firstLine(rb.Reason), at: rb.At}
	for _, v := range s.Slots {
		if v.Workload != rb.Workload || v.Slot != rb.Slot {
			continue
		}
		for _, c := range v.Containers {
			if c.Name != rb.Container && c.State == docker.StateRunning {
				r.serving = sanitize(strings.TrimPrefix(c.Name, s.Prefix+"-"))
				break
			}
		}
	}
	return r
}

// converged: the session decided the desired state is reached.
func (b *board) converged() bool { return b.standing.Kind == session.StandingConverged }

// settled: nothing more runs by itself: converged, held or failed.
func (b *board) settled() bool {
	switch b.standing.Kind {
	case session.StandingConverged, session.StandingHeld, session.StandingFailed:
		return true
	}
	return false
}

func headerOf(s session.Snapshot) headerInfo {
	h := headerInfo{
		simulated: s.Engine.Simulated, connected: s.Connected, engineErr: firstLine(s.EngineErr),
		source: sanitize(s.Source), loaded: s.Desired != nil,
		lockHeld: s.Lock.Held, lockErr: firstLine(s.Lock.Err), lockFree: s.Lock.Free,
		progress: s.Progress, skipHealth: s.SkipHealth,
	}
	if px := s.Proxy; px != nil {
		h.proxy = true
		if px.Err != "" {
			h.proxyErr = firstLine(px.Cause)
		}
	}
	switch {
	case s.Engine.Simulated:
		h.engine = "simulated"
	case s.Engine.Swarm:
		// The backend: a swarm, by its cluster ID, through this manager.
		h.engine = sanitize(strings.TrimSpace("swarm " + shortID(s.Engine.ID) + " via " + s.Engine.Endpoint + " " + s.Engine.Version))
	case s.Engine.Endpoint != "":
		h.engine = sanitize(strings.TrimSpace(s.Engine.Endpoint + " " + s.Engine.Version))
	}
	if s.SourceErr != nil {
		h.sourceErr = firstLine(s.SourceErr.Error())
		var se *spec.Error
		if errors.As(s.SourceErr, &se) && se.Hint != "" {
			h.sourceHint = firstLine(se.Hint)
		}
		// A polled source (a URL) says when it last confirmed the state.
		var stale *session.StaleError
		if errors.As(s.SourceErr, &stale) && !stale.LastGood.IsZero() {
			h.stateAge = age(s.At.Sub(stale.LastGood))
		}
	}
	if lh := s.Lock.Holder; lh != nil {
		h.lockHolder = sanitize(fmt.Sprintf("%s (pid %d) since %s", lh.User, lh.PID, lh.Since.Local().Format("Jan 2 15:04:05")))
	}
	// Holds are compact: a workload with one spec on hold names it, one
	// with more counts them (the plan's tree has them all).
	for _, w := range slices.Sorted(maps.Keys(s.Holds)) {
		if len(s.Holds[w]) > 0 {
			if h.held == nil {
				h.held = map[string][]string{}
			}
			h.held[w] = s.Holds[w]
		}
		switch hs := s.Holds[w]; len(hs) {
		case 0:
		case 1:
			h.holds = append(h.holds, sanitize(w+" "+shortHash(hs[0])))
		default:
			h.holds = append(h.holds, sanitize(fmt.Sprintf("%s ×%d", w, len(hs))))
		}
	}
	for _, v := range s.Canaries {
		r := canaryRow{name: v.Workload, workload: sanitize(v.Workload), step: v.Step, ends: v.Ends, ended: v.Ended, judgement: v.Judgement}
		if v.Err != nil {
			r.err = sanitize(firstLine(v.Err.Error()))
		}
		h.canaries = append(h.canaries, r)
	}
	for _, p := range s.Pins {
		if !p.Standing {
			continue
		}
		if h.pinned == nil {
			h.pinned = map[string]int{}
		}
		h.pinned[p.Workload] = p.Revision.Number
		text := fmt.Sprintf("%s rev %d by %s %s", p.Workload, p.Revision.Number, p.By, p.Since.Local().Format("15:04"))
		if p.Err != "" {
			text += " ✗ cannot roll in"
		}
		h.pins = append(h.pins, sanitize(text))
	}
	return h
}

func stepOf(st reconcile.Step, s session.Snapshot) stepRow {
	row := stepRow{key: st.Key(), workload: st.Workload, slot: st.Slot, executable: st.Executable(), action: sanitize(string(st.Action)),
		target: sanitize(st.Target()), container: sanitize(st.Container), reason: sanitize(st.Reason), until: st.Until, wait: st.Wait}
	if !st.Executable() {
		row.status = theme.Waiting
	} else {
		ss := s.Steps[row.key]
		row.confirm = ss.NeedsConfirm
		row.err = firstLine(ss.Err)
		row.retryAt = ss.RetryAt
		switch ss.State {
		case session.StepRunning:
			row.status = theme.Running
		case session.StepDone:
			row.status = theme.Done
		case session.StepFailed:
			row.status = theme.Failed
		case session.StepSkipped:
			row.status = theme.Skipped
		default: // queued
			switch {
			case s.Mode == session.ModeWatch:
				row.status = theme.Planned // this console runs nothing: the step is Diff's, not queued here
			case ss.Approved:
				row.status = theme.Approved
			default:
				row.status = theme.Queued
			}
		}
	}
	row.pull = pullOf(st, s)
	row.hay = strings.ToLower(row.action + " " + row.target + " " + row.container + " " + row.reason)
	return row
}

// upToDate is Diff's word on a slot's row: a desired slot served by an
// up-to-date container, healthy (or counted healthy, unverified). The
// header's count and the slots title count these rows, so they never
// disagree with them.
func (r *slotRow) upToDate() bool { return r.ready }

// progressOf counts the desired slots and the rows of them up to date.
func progressOf(rows []slotRow) session.Progress {
	var p session.Progress
	for i := range rows {
		if rows[i].desired != nil {
			p.Total++
		}
		if rows[i].upToDate() {
			p.Ready++
		}
	}
	return p
}

func slotOf(v session.SlotView, prefix string, at time.Time, changes []string, lt limitTexts, px *session.ProxyView) slotRow {
	r := slotRow{workload: v.Workload, slot: v.Slot, changes: changes, ready: v.Ready && v.Desired != nil}
	if v.Slot == reconcile.NoSlot {
		r.target = sanitize(v.Workload) + "/-"
	} else {
		r.target = sanitize(fmt.Sprintf("%s/%d", v.Workload, v.Slot))
	}
	var hay strings.Builder
	hay.WriteString(r.target)
	if d := v.Desired; d != nil {
		r.desired = &desiredInfo{image: sanitize(d.Image), version: sanitize(d.Version), hash: sanitize(shortHash(d.Hash)),
			limits: lt.text(d.Limits), err: firstLine(d.Err), rawLimits: d.Limits}
		hay.WriteString(" " + r.desired.image + " " + r.desired.version)
	}
	for _, c := range v.Containers {
		cr := containerOf(c, prefix, at)
		cr.health = healthOf(c)
		if r, ok := px.Route(c.ID); ok {
			cr.proxy = &r
		}
		hay.WriteString(" " + cr.name + " " + cr.image + " " + string(cr.relation) + " " + string(cr.health))
		r.cs = append(r.cs, cr)
	}
	r.hay = strings.ToLower(hay.String())
	return r
}

// whole is t to the second before it. Ages are measured from whole
// seconds, so every "36s" on screen becomes "37s" at the same moment (a
// whole second of the console's clock): one frame a second for them all,
// not one per container and figure, each at its own fraction of a second
// (issue 26 row 19). A figure in seconds is coarse anyway.
func whole(t time.Time) time.Time { return t.Truncate(time.Second) }

func containerOf(c session.ContainerView, prefix string, at time.Time) containerRow {
	cr := containerRow{id: c.ID, shortID: sanitize(shortID(c.ID)), name: sanitize(c.Name), short: sanitize(strings.TrimPrefix(c.Name, prefix+"-")), image: sanitize(c.Image), node: sanitize(c.Node),
		state: sanitize(string(c.State)), relation: c.Relation, serves: c.Serves, age: at.Sub(whole(c.Created)),
		restarts: c.RestartCount, exitCode: c.ExitCode, oom: c.OOMKilled, running: c.State == docker.StateRunning}
	switch {
	case cr.running && !c.StartedAt.IsZero():
		cr.up = at.Sub(whole(c.StartedAt))
	case !cr.running && !c.FinishedAt.IsZero():
		cr.up = at.Sub(whole(c.FinishedAt))
	default:
		cr.up = cr.age
	}
	if c.State != docker.StateExited && c.State != docker.StateDead && (c.ExitCode != 0 || c.OOMKilled) {
		cr.lastExit = fmt.Sprintf("%d", c.ExitCode)
		if c.OOMKilled {
			cr.lastExit += " OOM"
		}
	}
	switch c.State {
	case docker.StateExited, docker.StateDead:
		cr.exit = fmt.Sprintf("exit %d", c.ExitCode)
		if c.OOMKilled {
			cr.exit += " (OOM)"
		}
		if c.Error != "" {
			cr.exit += ": " + firstLine(c.Error)
		}
	}
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, sanitize(fmt.Sprintf("%s:%d→%d/%s", cmp.Or(p.HostIP, "0.0.0.0"), p.HostPort, p.ContainerPort, p.Proto)))
	}
	cr.ports = strings.Join(ports, " ")
	for _, d := range c.Drift { // Diff's: how it differs from its desired spec
		cr.diff = append(cr.diff, sanitize(d.Line()))
	}
	return cr
}

// healthOf is a container's status as the slots pane shows it: Diff's
// condition of it (a slow starter is booting until its health_deadline,
// DESIGN §1), in the console's words. Only what the condition leaves
// open is told apart here: a clean exit or a removal is stopped.
func healthOf(c session.ContainerView) theme.Status {
	switch c.Condition {
	case reconcile.ConditionHealthy:
		return theme.Healthy
	case reconcile.ConditionUnverified:
		return theme.Unverified
	case reconcile.ConditionBooting:
		return theme.Booting
	case reconcile.ConditionPaused:
		return theme.Paused
	case reconcile.ConditionDrained:
		return theme.Drained
	case reconcile.ConditionRestarting:
		if c.State == docker.StateRemoving {
			return theme.Stopped
		}
		return theme.Restarting
	default: // crashed
		if (c.State == docker.StateExited || c.State == docker.StateDead) && c.ExitCode == 0 && !c.OOMKilled {
			return theme.Stopped
		}
		return theme.Crashed
	}
}

// eventsOf merges engine events, the session's facts in its words, its
// replies to the operator and the finished steps into one timeline,
// oldest first.
func eventsOf(s session.Snapshot) []eventRow {
	facts := listedFacts(s.Facts)
	rows := make([]eventRow, 0, len(s.Events)+len(facts)+len(s.Notes)+len(s.Recent))
	for _, e := range s.Events {
		text := e.Action + " " + e.Name
		if text == e.Action+" " {
			text += shortID(e.ContainerID)
		}
		for _, k := range slices.Sorted(maps.Keys(e.Attributes)) {
			if k == "name" || k == "image" || strings.Contains(k, ".") {
				continue // the name is shown; image and labels are noise here
			}
			text += " " + k + "=" + e.Attributes[k]
		}
		rows = append(rows, eventRow{at: e.Time, kind: kindEvent, text: sanitize(text)})
	}
	for _, f := range facts {
		rows = append(rows, eventRow{at: f.EngineAt, kind: kindNote, text: sanitize(f.Text())})
	}
	for _, n := range s.Notes {
		rows = append(rows, eventRow{at: n.At, kind: kindNote, text: sanitize(n.Text)})
	}
	for _, r := range s.Recent {
		text := fmt.Sprintf("%s %s %s (%s)", r.Step.Action, r.Step.Target(), r.Step.Container, r.Duration.Round(time.Millisecond))
		kind := kindDone
		if r.Err != "" {
			kind = kindFailed
			text += ": " + firstLine(r.Err)
		}
		rows = append(rows, eventRow{at: r.Began, kind: kind, text: sanitize(text)})
	}
	slices.SortStableFunc(rows, func(a, b eventRow) int { return a.at.Compare(b.at) })
	if len(rows) > maxEventRows {
		rows = rows[len(rows)-maxEventRows:]
	}
	return rows
}

// listedFacts are the last maxEventRows facts the timeline lists, oldest
// first: what happened, in the session's words (Fact.Text). A step's
// start and progress are not listed (the slots pane and the plan show
// them), nor its end (the finished steps list it, its error whole) but
// a canary step's verdict: passed, held or failed.
func listedFacts(facts []session.Fact) []session.Fact {
	listed := func(f session.Fact) bool {
		var verdict *reconcile.CanaryError
		switch f.Kind {
		case session.FactStepStarted, session.FactWaiting, session.FactDraining, session.FactDrained,
			session.FactCanary, session.FactPulling:
			return false
		case session.FactStepDone:
			return f.Step.Action == reconcile.ActCanary
		case session.FactStepFailed:
			return errors.As(f.Err, &verdict)
		}
		return true
	}
	first, n := len(facts), 0
	for first > 0 && n < maxEventRows {
		first--
		if listed(facts[first]) {
			n++
		}
	}
	out := make([]session.Fact, 0, n)
	for _, f := range facts[first:] {
		if listed(f) {
			out = append(out, f)
		}
	}
	return out
}

// limitTexts remembers reconcile.LimitsText per value: a host has few distinct
// limits and many containers.
type limitTexts map[docker.Limits]string

func (lt limitTexts) text(l docker.Limits) string {
	t, ok := lt[l]
	if !ok {
		t = sanitize(reconcile.LimitsText(l))
		lt[l] = t
	}
	return t
}

func shortHash(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return h
}
