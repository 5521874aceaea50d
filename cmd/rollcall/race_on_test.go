//go:build race

package main

// raceDetector: this test binary runs under the race detector.
const raceDetector = true
