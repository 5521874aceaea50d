// Package reconciletest is a helper of tests and benchmarks: Converge loops
// observe → reconcile.Diff → reconcile.Apply until the plan is empty.
//
// It is not a loop of rollcall's: the commands converge through
// engine/session, the only loop, which keeps the guards (lock, settle, blast
// radius, journal, holds) that this does not. Tests use it to seed an
// engine and to check I4 (repeated converges reach the fixpoint).
package reconciletest
