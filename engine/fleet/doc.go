// Package fleet carries one rollout across several Docker hosts (DESIGN
// §11): one session per host, and above them a coordinator that decides,
// as a pure function (Decide), which hosts may act now. It keeps no
// cluster state of its own: what it remembers of a rollout is a Record
// that each decision hands back, and that the caller passes to the next.
//
// What the coordinator decides:
//
//   - The waves (Waves): the canary host(s) first, then the other hosts in
//     file order, fleet.batch at a time (a count, or a share of the hosts
//     rounded down, never less than one).
//   - Preflight: until the first wave starts, every host must answer (its
//     session reached its engine and listed it), name an engine no other
//     host names, and, in an acting mode, hold its lock. A host that fails
//     any of these holds every host: nothing starts anywhere. With
//     SkipUnreachable a host that does not answer is left out instead
//     (reported as an Event, for the journal), unless it is a canary host:
//     a rollout never starts without its canary. LockOrder is the order in
//     which to take the locks, all or nothing.
//   - Waves in order: wave k+1 starts once every host of every earlier wave
//     is converged and healthy (k/N of k/N), and a host of a started wave
//     acts only while that holds too: a canary that turns unhealthy holds
//     the waves after it. After a wave that rolled anything, the next
//     waits fleet.wait (the soak), counted from when every started wave was
//     seen healthy, and counted again if one turns unhealthy meanwhile. In
//     step mode each wave that has work waits for its approval, unless the
//     whole rollout was approved (A). A wave whose hosts are all converged
//     already starts at once, without soak or approval: a rerun skips
//     what is done.
//   - Failure: a host of a started wave whose roll failed, or that no
//     longer answers (lost), is a failed host, for the rest of the
//     rollout. No later wave starts. fleet.on_failure says what the hosts
//     of the started waves do: pause (they hold where they are), continue
//     (they finish their roll, up to max_failed_hosts failed hosts; one
//     more pauses them; a failed host no longer gates the started waves
//     after its own), rollback_all (each rolls back to the revision it
//     ran before the rollout). A lost host pauses the rollout whatever the
//     policy says, unless a rollback_all is already under way, and nothing
//     more runs on it. A failed host that answers acts under its own
//     session (its workloads' failure_action), within the wave gate above.
//   - Watch mode: nothing acts, nothing is recorded.
//
// What it leaves to each host's session: the plan and its steps (§5, unchanged),
// step approvals and stop-first confirmations within a host, a workload's
// failure_action, the lock itself, what a rollback runs (the revision a
// host ran before the rollout), and when a host counts as unreachable (a
// blip of the connection should not be reported as one). Decide says which
// hosts may act; a session told to Hold takes no step.
//
// A new desired state is a new rollout: the caller starts again from a
// zero Record, before any host's session acts on it.
//
// Decide and its types import spec (the fleet policy) and session (the
// mode) and nothing else of rollcall's; it does no I/O and reads no clock
// but Input.Now.
//
// The runtime (Fleet: run.go, host.go, preflight.go, snapshot.go,
// journal.go) carries Decide's verdicts out. Its rules:
//
//   - Preflight: the desired state is loaded (it must name hosts), every
//     host is dialled (DialParallel at a time, DialTimeout each, for the
//     Dial and its engine's Info), and a host that answers with the engine
//     ID of a host named before it is an error at its line in the file
//     (Snapshot.HostErrors); it gets no session. In an acting mode every
//     host's lock is taken in LockOrder, all or nothing: one held
//     elsewhere lets go of those taken, names who holds it (LockErr), and
//     the fleet watches instead; SetMode to step or auto tries again. A
//     lock is one file per engine ID and prefix, never per endpoint. Then
//     one session per host that answered starts, gated
//     (session.Options.Gated): nothing runs on it before the fleet opens
//     its gate. Its Source is the fleet's view for that host (ForHost).
//   - A host that did not answer at preflight gets no session and stays
//     unreachable for the rest of the run: the rollout does not start, and
//     nothing changed anywhere (Blocked says why). With SkipUnreachable it
//     is left out, journaled.
//   - Each host's session snapshot fills its Host: reachable while its
//     session is connected, and for LostGrace after it last was (a blip is
//     not a lost host); its plan state is read from the session's
//     standing (session.Standing: the session alone judges), once the
//     session decided one of the very desired state the fleet handed it,
//     settled: failed when it stands failed by a failure's pause, a
//     blast-radius refusal or a halted journal, or held by a
//     failure_action rollback since; converged when it stands converged;
//     else rolling. A relist keeps the last decision (Pending), and a
//     standing blocked by the engine or the lock does not replace it.
//   - The gate: a host whose verdict is Act (or RollBack) has its gate
//     opened once its session runs the desired state the fleet wants for
//     it; every other host's is closed, with the reason (HostView.Gate).
//     No gate opens while a line of the fleet's own waits for the
//     journal, nor ever after one failed (Halted: no audit, no action).
//   - A new desired state (the workloads of some host changed) is a new
//     rollout: a zero Record, no approvals, no rollout ID, every gate
//     closed before the sessions get it (and each session closes its own
//     again as it loads it). A change of fleet: alone goes on under the
//     new policy. A change of hosts: or of the prefix is refused: the last
//     good desired state stays.
//   - rollback_all: a host told to roll back gets, as its desired state,
//     the last one its session was seen converged and healthy under before
//     this rollout. A process that never saw it converged (apply starts
//     cold) pins, with a state directory, each workload the rollout
//     changes there (its plan's workloads with steps as the rollout
//     began) to its revision before the desired spec (session.Pin, DESIGN
//     §12); with neither it holds, and a note and a journal line say so.
//   - Step mode: a wave approved (or the whole rollout, ApproveAll)
//     approves the rollout of each of its hosts' sessions
//     (session.ApproveRollout) as its gate opens, once per desired state
//     handed to it; within a host the session's own rules go on (a failed
//     step ends that approval, and the operator approves it through
//     ToHost).
//   - Journal: the rollout's ID is made as Decide reports EventBegan, and
//     is on every line of every host's session from then on, with its
//     host (session.Options.Host, Options.Rollout), and on the fleet's own
//     lines (journal.go: began, each host's preflight, left out, waves,
//     failed hosts, phases, rollbacks, approvals). Lines of a preflight
//     that fails (a host that does not answer, a lock held elsewhere, two
//     hosts on one engine) come before any rollout and carry none.
//   - Steady: every host of the rollout stands converged on its desired
//     state, the rollout is done, and its lines are written. Blocked: why
//     it cannot go on by itself. Outcome (what apply ends on): rolling,
//     converged, converged but for hosts left out, blocked, or a host
//     stuck (halted, refused), with each host's standing.
//
// One goroutine (Run) owns the run's state; the sessions' snapshots, the
// desired source's loads, the lock takes and the journal's answers come
// to it on channels.
//
// The runtime reaches engines only through the Dialer it is given: it
// never imports the moby adapter (DESIGN §2).
package fleet
