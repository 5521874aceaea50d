package spec

// Conditions of depends_on: what a dependency must show before the first
// containers of a workload start (a cold start; DESIGN §3, Compose).
const (
	DependStarted   = "started"   // a container of it runs (compose's service_started)
	DependHealthy   = "healthy"   // a container of it is healthy (service_healthy)
	DependCompleted = "completed" // a container of it exited 0 (service_completed_successfully)
)

// Dependency is one entry of depends_on: a workload of the same document,
// and the condition it must meet. Not in the spec hash.
type Dependency struct {
	Workload  string
	Condition string
}
