package spec

import (
	"time"
)

// The bounds of every number in a desired state that drives memory or
// time (issue 26, row 14). A desired state is read from a file anyone with
// write access may edit, and a typo (replicas: 10000000) must be an error
// at its line and column, never a plan that runs for minutes and takes the
// host's memory (10,000,000 replicas took `plan` 10 min and 16.7 GB).
//
// Each bound is far past any real use and well within what a plan does in
// milliseconds: Diff's cost is linear in the slots (BenchmarkDiff), about
// 2 µs a container.
const (
	// MaxReplicas bounds one workload's replicas, and a host's override
	// of them: a Docker engine runs a few hundred containers in practice,
	// and each replica is a container, a slot in every plan and a step in
	// every roll; past 1000 on one engine the host, not rollcall, is the
	// limit.
	MaxReplicas = 1000
	// MaxWorkloads bounds the workloads of one document.
	MaxWorkloads = 1000
	// MaxContainersPerEngine bounds the replicas of every workload
	// together on one engine (with a host's overrides): the largest plan
	// rollcall makes, 10,000 slots, which Diff plans in about 20 ms.
	MaxContainersPerEngine = 10_000
	// MaxWebhooks bounds notify:: each URL has a queue and a goroutine.
	MaxWebhooks = 20
	// MaxHosts bounds hosts:: each host has a session, a connection and a
	// lock of its own.
	MaxHosts = 200
	// MaxCanarySteps bounds update.canary.steps: each step is a wait and
	// a judgement of its own.
	MaxCanarySteps = 20

	// MaxDuration bounds every duration a step or a wait runs for
	// (health_deadline, min_ready, drain, stop_grace_period, a canary
	// step's for, fleet.wait, a healthcheck's durations): a day. A
	// longer one (a 100-year deadline) would hold a roll, and the host
	// lock, for ever.
	MaxDuration = 24 * time.Hour
	// MinCanaryInterval bounds update.canary.analysis.interval from
	// below: each interval reads the proxy's counters, and 1ns would read
	// them without pause.
	MinCanaryInterval = 100 * time.Millisecond

	// MaxHealthRetries bounds a healthcheck's retries: with the interval
	// they make how long an unhealthy container takes to be said so.
	MaxHealthRetries = 100
)
