// Package reconcile decides and carries out what it takes to make the actual
// containers match the desired state.
//
// Diff is pure: from a resolved desired state and an Observed snapshot (the
// containers plus everything time-dependent) it returns a Plan, which is plain
// data: the steps, and the state of every slot (Plan.Slots: each container's
// relation, condition and drift, which one serves, the slot's wait). The
// session and every view read that state; none classifies containers again.
// Plan.Tree is the plan tree as data, which every rendering draws. Apply is
// the only code here that calls the engine. The test helper
// reconciletest.Converge loops observe → Diff → Apply until the plan is
// empty; rollcall's one loop is engine/session.
//
// A step's reason is data too (DESIGN §2): Step.Why is a Reason, its kind
// (ReasonMissing, ReasonQueued, ReasonBooting, ReasonCrashed, …) and the
// facts its words are made of (the slot and replicas, the drift, the
// container that keeps serving, the slots rolling first, the deadline, the
// crash, the limits before and after, the canary step). Diff fills Why at
// every step, a then row's and a Failure's too, and writes Step.Reason (the
// words the journal, the JSON documents and the views print) from
// Why.String() in one place, explain; no site writes words of its own. A
// view that must tell reasons apart reads Why, never the words.
//
// DiffSwarm (swarm.go, whose comment lists its rules) is Diff's twin for a
// Swarm: it plans writes of a workload's service, never of a task, into the
// same Plan, slot states and typed reasons, and RunSwarm executes them.
//
// It imports only engine/spec and the plain data types of engine/docker; never
// session, journal, tui or theme.
//
// The slot rules (DESIGN §5), worked through one slot at a time:
//
//  1. No up-to-date container in the slot: START one. A stale or legacy
//     container in the slot keeps running; one that went down meanwhile
//     (exited or dead: an engine restart, a crash) is RESTARTED while no
//     up-to-date container of its slot is healthy, the one that started
//     last, after rule 4's backoff, so the slot serves while it rolls. Not
//     with stop-first (the old one goes anyway), nor while a stale one is
//     up, draining or being restarted, nor one that never started.
//  2. An up-to-date HEALTHY container: ROLL (drain, stop and remove) the stale and
//     legacy containers and STOP duplicates, keeping the healthy one created
//     first.
//  3. The up-to-date container is booting: WAIT, saying for what and until when.
//  4. The up-to-date container crashed: RESTART it in place. The first
//     restart is immediate; after that the backoff is 1s, 2s, 4s … capped at
//     1m by restart count (the engine's count plus the restarts rollcall
//     issued), counted from when it last stopped. An exited or dead one
//     restarts at once; running ones that turned unhealthy restart at most
//     update.parallelism at a time (a restart in flight, Observed.Restarting,
//     and a restarted container still booting use the budget), so a health
//     failure across the workload never takes it down together: the rest
//     wait, "workload-wide health failure: restarting one at a time".
//  5. Only the limits differ (CPU, memory, restart policy, as the engine
//     applies them): UPDATE in place, never restart.
//  6. Slot index >= replicas: STOP (surplus). replicas 0: STOP all (cold).
//     Workload gone: STOP (extra).
//  7. Orphans (no readable slot label) are drained only once every slot of
//     their workload has a healthy up-to-date container.
//  8. At most update.parallelism slots are mid-roll at once. With start-first a
//     slot is mid-roll when it holds a stale container and its new one is not
//     yet healthy; with stop-first, when it has no healthy container and no
//     stale one left (it is down). First starts are not limited. Blue-green
//     starts every slot's new container at once and drains no old one until
//     all are healthy.
//     8a. Stop-first (chosen, or forced by a fixed host port) rolls the old
//     container before the new one starts; such steps carry Downtime.
//  9. A spec on hold (rolled back) is not started again until the desired spec
//     changes.
//  10. A forced recreate counts every container created before the request as
//     stale. The new container's name then takes a suffix of the old one's ID,
//     so the two live side by side in the slot.
//
// A CPU or memory limit that the desired state removes cannot be lifted in
// place (Docker ignores an update to 0), so that container counts as stale
// and rolls like one, instead of an UPDATE that would never take.
//  11. Emergency mode (SkipHealth) counts every up-to-date running container as
//     healthy at once.
//  12. A container the engine is restarting (restart policy) is waited for.
//  13. A revert (an up-to-date container older than every stale container
//     of its slot: the desired spec went back to what it runs) is never
//     new: it never misses a deadline or fails a rollout; unhealthy (drained
//     by an interrupted roll, say) it is crashed and restarted.
//
// Booting or crashed (DESIGN §1): a running container that has not been
// healthy since it last started (docker.Container.HealthySinceStart) is
// booting until health_deadline after that start, whatever the engine's
// health says: docker reads a slow starter "unhealthy" once its probes fail
// past their retries, long before the app is due. It is crashed when it
// turns unhealthy after it had been healthy since its start, when it is
// still unhealthy at that deadline, or when it exited or died. The wait
// says the retries and start period, and its Until is the deadline.
//
// Then rows (DESIGN §8): each WorkloadPlan's Then holds the steps that
// follow once its waits end (the roll of an old container once its
// replacement is healthy, the next slot's start and roll, a restart once its
// backoff ends), found by diffing a projection in which every step succeeds
// and every wait ends well. A then row has Then set, is never Executable,
// and has the Key of the step it becomes, so an approval given to it
// matches that step when a plan holds it. Then rows are not in Steps: Empty,
// Counts and Summary are about what to do or wait for now (ThenSummary
// counts the rest). A container that missed its deadline or is paused on
// the engine ends the projection of its slot.
//
// SpecDiff is the field-by-field diff of a desired workload with a
// container as inspected; environment values show only when asked.
//
// Health deadline (DESIGN §6): a new container, one created after an old one
// still in its slot that it replaces, that is not healthy health_deadline after it was created
// is a Failure. One that never started (Created, no start in flight, none
// on record, no start error: its start was lost when the engine or
// rollcall went away between its create and its start) ran nothing and
// cannot fail: it is STOPPED (removed) and the next plan creates it
// again, so its deadline counts from a creation that is its start. It is
// never started late, as its deadline would then count from a creation
// long past. A start that failed (an engine error on the container) is a
// failure of its version like any other. (A long-settled container that crashes is rule 4, and a first
// start with nothing to fall back on keeps waiting.) With failure_action
// rollback the plan stops the new container and marks the step Hold, so the
// caller puts the spec on hold. With pause the caller stops acting; with continue the slot stops
// counting as mid-roll, so the other slots go on.
//
// Operator rollback (DESIGN §6): Observed.RollingBack names a workload and
// the spec hash the operator rolled back. While any is left to stop, that
// workload's plan is only the stops of its containers of that spec (by
// spec label) in each slot where an older container still runs, Hold set,
// drained as every stop; a slot that finished its roll keeps its new
// container, and nothing of the spec starts. With none left, the plan is
// as without the rollback, and the caller ends it.
//
// Drain before stop (DESIGN §3 pre_stop, update.drain). Every stop and roll
// of a running container drains it first; Diff puts the data on the step
// (PreStop, Drain) and RunWith does it:
//
//   - PreStop is the command the container was created with, read from its
//     pre-stop label, never the desired state's: an old container may be
//     another version that drains another way. It is exec'd in the
//     container (bounded by 30s).
//   - Then the stop waits up to Drain (the workload's update.drain; 0 for a
//     workload no longer desired), cut short once the engine reports the
//     container unhealthy (its healthcheck now fails, so a proxy with
//     active health checks has let it go), once it no longer runs, or once
//     RunOptions.Released says the proxy no longer routes to it.
//   - A pre_stop that fails (it cannot run, or exits nonzero) never blocks
//     the stop: the step still waits the drain, which the healthcheck may
//     cut short, then stops and removes the container, and returns an
//     error wrapping ErrPreStop that says so. The effect is in place, so
//     the next plan no longer holds the step; the error is for the plan
//     view and the journal. A failing pre_stop cannot keep an old
//     container alive, and a stop was only ever planned once its
//     replacement served, so it never touches the container that serves.
//   - A container that is gone when the drain starts or looks makes the
//     step a no-op (I6).
//
// A workload whose image the engine lacks gets an Error and no steps at all:
// nothing of it is started or stopped. Managed containers without a workload
// label are reported in Notes and never touched.
package reconcile
