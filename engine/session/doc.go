// Package session is rollcall's live loop (DESIGN §7): it observes the
// engine, watches the desired source, diffs the two, streams snapshots to the
// console and the headless commands, and runs steps according to the mode.
//
// One goroutine (Run) owns all state. Everything slow happens beside it, in
// goroutines that report back on channels: listing the engine, loading the
// desired source, running a step, fetching a failed container's health output
// and logs. So a hung engine call never keeps the loop from handling events,
// intents or ctx.
//
// The loop's state is kept in parts (parts.go), each a struct with the
// methods that keep to what it owns: the observer (the engine, its events
// and lists, the plan), desire (the desired source and state, the
// settle), freshness (whether the plan may be acted on, by one rule),
// guards (lock, holds, halt, gate, pause, questions), marks (approved,
// skipped, confirmed, the rollout), runner (the steps in flight, their
// results, retries and restarts) and disk (the workers beside the loop).
// The loop's own methods coordinate them. Time is read off two named
// clocks: the wall clock, which timers, the settle and the journal run on,
// and the engine's (Options.Now), whose reading as a list starts is the
// Now the plan is diffed at: health deadlines and waits are judged by it.
//
// The rules it keeps:
//
//   - Observe: the event stream is subscribed before the first list. Events
//     are coalesced: the first of a quiet period relists at once, and the
//     rest relist at most once per Options.Coalesce. A resync relists every
//     Options.Resync regardless: a list alone. The desired images are
//     resolved once per desired state and again after an image event (a
//     tag that may point elsewhere now) or a broken stream. A broken stream is re-subscribed with
//     backoff (100ms doubling to 5s) and followed by a relist; while the
//     engine does not answer the snapshot says Connected=false and nothing
//     runs, and the session keeps trying rather than exit.
//   - Desired source: Options.Source, a source.Source (engine/source: a
//     file, a compose file, a URL), is loaded beside the loop whenever
//     it signals a change. A load that fails (a parse or validation error, a
//     half-written file) keeps the last good desired state and shows the
//     error. With no good desired state yet, there is no plan at all: a
//     missing file never reads as "stop everything". A later desired state
//     with another label prefix is refused the same way, since the
//     observer, the lock and the containers all hang on the prefix; only
//     the first good one after a broken start may set it.
//   - Modes: watch runs on docker.ReadOnly, so it cannot act even by mistake;
//     step runs only the steps the operator approved; auto runs each plan as
//     it appears. A Paused flag, set by the operator or by a failure with
//     failure_action pause, stops every step in every mode until Resume.
//   - Fresh diff: a step runs only from a plan diffed from a list taken after
//     the last step started, after the last step of its own slot ended, and
//     after the last intent, desired change, mode change, failed step or
//     hold. Steps of one plan run together, one per slot; a slot's step that
//     ends well leaves the other slots' steps of the plan in hand good. An
//     approved step whose key is not in such a plan is dropped
//     (FactApprovalDropped).
//   - Confirmations: a stop-first step (Step.Downtime) needs Confirm(yes) in
//     every mode; Confirm(no) skips it until approved again. After a desired
//     change (the first desired state counts as one) whose plan would stop or
//     roll more than half of the running managed containers, no step runs in
//     any mode until Confirm(yes); Confirm(no) keeps waiting.
//   - Failures (§6): pause pauses with the reason, the container's last
//     health output and a few log lines; rollback is the plan's own stop step
//     with Hold, and once it succeeds the spec goes on hold; continue needs
//     nothing here. A step that fails at the engine is shown with its error;
//     auto tries it again after a backoff (1s doubling to 1m).
//   - Operator rollback (Rollback intent): the workload's current spec goes
//     on hold at once, and the rollback is an input to Diff
//     (Observed.RollingBack: the workload and the held spec), so its stops
//     are Diff's stops, each with its container's pre_stop and the
//     workload's drain, never a bare stop. Diff stops the containers of that
//     spec in every slot that still has a running older container to serve;
//     a slot that already finished its roll keeps its new container. The
//     stops run one at a time, at once, in step mode and auto, even while
//     paused or held by the blast radius; the workload's other steps wait.
//     The rollback ends on the first fresh plan with no stop of it left.
//   - Revisions and pins (revisions.go, revisions_pin.go, §12): an acting
//     session keeps, as a revision, each spec that reached every slot of a
//     workload healthy. A pin (the Pin intent, `rollcall rollback`) puts
//     the revision in place of the workload's desired spec before Diff, so
//     it rolls in under every rule here, drains included, while the
//     desired spec is held; it lasts until the desired spec changes (then
//     ended, journaled) or Retry lifts it (journaled).
//   - Crash restarts rollcall issued count towards the backoff of rule 4
//     until the container has run healthy for 10s, as docker's own restart
//     manager resets.
//   - Host lock: step and auto hold an exclusive flock on one file per engine
//     endpoint and prefix, holding "user pid since". A session that cannot
//     get it drops to watch and shows the holder. Watch releases it.
//   - Gate (gate.go): a fleet's hold on one host (engine/fleet). While
//     closed no step starts in any mode (an operator rollback's stops still
//     run, as through a pause); the step in flight finishes. It is not the
//     pause: opening it never lifts a pause. With Options.Gated it starts
//     closed and every new desired state closes it again as it loads.
//   - Journal (journal.go): its lines are made from the facts, in one
//     place (lineOf): every executed step, with the wall-clock time, and
//     in a fleet with its host and the rollout's ID (Options.Host,
//     Options.Rollout), and the operator's decisions. A fact an action
//     hangs on (a step's start and end, a retry's lifted hold) is written
//     before it is recorded, and the action waits for it: no audit, no
//     action; the others as they are recorded. The pins file's changes
//     (a pin, its end) are journaled as decisions before the file is
//     written: their facts are what the file is later read to hold.
//   - Words: what happened is a fact, put into words at the edge
//     (Fact.Text for apply and the console, the agent's log lines); the
//     snapshot's Notes are only the replies to intents the session did
//     not act on.
//   - Disk: the loop goroutine never waits on the disk. Journal lines,
//     holds writes and the lock (take, release, the holder's record) run
//     on workers beside it and report back as messages. A step's engine
//     call starts only once its journal line is written; while a line or a
//     holds write is pending no new step starts, and Waiting says so.
//   - Slots: the snapshot's slot views are Diff's slot states
//     (reconcile.Plan.Slots) beside the containers; nothing here judges a
//     container's relation or health again.
//   - Notifications (notify.go): an acting session posts its rollouts'
//     start and end, failed steps, health failures, rollbacks, holds and
//     the engine going and coming back to the webhooks of notify:,
//     through engine/notify, which never blocks the loop; a post that
//     failed or was dropped is a fact (shown, logged, journaled).
//
// It imports engine/docker, spec, reconcile, journal, state and notify;
// never tui or theme.
package session
