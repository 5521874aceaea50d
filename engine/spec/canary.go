package spec

import (
	"time"
)

// Values of update.canary.analysis.on_insufficient_traffic: what a step
// does when the canary saw fewer than min_requests requests in it.
const (
	InsufficientHold = "hold" // the rollout holds at the step, and says so (the default)
	InsufficientFail = "fail" // the step fails, as a threshold crossed would
	InsufficientPass = "pass" // the step passes on what it saw
)

// NotChecked is the value of an Analysis threshold the file leaves out.
const NotChecked = -1

// Defaults of update.canary.analysis.
var (
	DefaultCanaryInterval = 10 * time.Second
	DefaultMinRequests    = 100
)
