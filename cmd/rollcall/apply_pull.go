package main

import (
	"fmt"

	"github.com/rollcall/rollcall/engine/reconcile"
)

// pullText is a pull's progress in words: "pulling 40%: 2 of 4 layers,
// 1.6 of 4.0 MiB". The session reports it at each layer and each tenth
// of the bytes, so apply prints a line for each.
func pullText(p reconcile.PullProgress) string {
	s := fmt.Sprintf("pulling %d%%: %d of %d layers", int(100*p.Fraction()), p.LayersDone, p.Layers)
	if p.Bytes > 0 {
		s += fmt.Sprintf(", %.1f of %.1f MiB", float64(p.BytesDone)/(1<<20), float64(p.Bytes)/(1<<20))
	}
	return s
}
