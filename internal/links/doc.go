// Package links holds one test: that the rooms of rollcall link only what
// their layer may. The pure engine (engine/spec, engine/reconcile) links no
// YAML parser and no compose-go, which only engine/source/load reads with;
// and the real-engine harness (engine/docker/dockertest) never links
// engine/demo, the layer above it whose tests use it.
package links
