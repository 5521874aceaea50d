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
//     more pauses them), rollback_all (each rolls back to the revision it
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
package fleet
