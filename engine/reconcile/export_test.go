package reconcile

// For the external tests (package reconcile_test) that converge the fake
// engine through reconciletest.Converge, which imports this package: they
// build their workloads with the helpers the tests in here use.

// Prefix is the prefix of every workload the helpers build.
const Prefix = pfx

var (
	// T0 is the helpers' now.
	T0 = t0
	// WorkloadNames are the workloads the property tests draw from; the
	// last is never desired.
	WorkloadNames = workloadNames
	// TestWorkload is a workload with every default filled in, as Load
	// would: image <name>:v2, version 2.
	TestWorkload = workload
	// V1 sets a workload's image and version to v1.
	V1 = v1
)
