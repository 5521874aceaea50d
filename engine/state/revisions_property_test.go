package state

import (
	"testing"

	"pgregory.net/rapid"
)

// Revision numbers never change once shown (a property, over any sequence
// of records, pins and lifts): a spec kept keeps its number while it stays
// kept, recorded again or not; the pinned revision reached (the pin keeps
// it whole, number and all, though the file may have dropped it since; a
// session records the pin's revision, as recordRevisions does) is kept
// under the number the pin shows; a number is never given to two specs;
// the newest recorded is last; at most MaxRevisions are kept.
func TestRevisionNumbersNeverChange(t *testing.T) {
	specs := make([]Revision, 14) // more than MaxRevisions: some are dropped
	for i := range specs {
		specs[i] = rev(i + 1)
	}
	key := func(r Revision) string { return r.Hash + " " + r.ImageID }
	rapid.Check(t, func(t *rapid.T) {
		revs := Revisions{}
		owner := map[int]string{} // number -> the spec it was given to
		var pin *Revision         // the revision pinned (one pin per workload), as the pins file keeps it
		ops := rapid.IntRange(1, 60).Draw(t, "ops")
		for range ops {
			before := map[string]int{}
			for _, r := range revs["web"] {
				before[key(r)] = r.Number
			}
			var in Revision
			pinned := false
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
			case op == 1 && len(revs["web"]) > 0: // pin a kept revision
				list := revs["web"]
				p := list[rapid.IntRange(0, len(list)-1).Draw(t, "pin")]
				pin = &p
				continue
			case op == 2: // the pin lifted
				pin = nil
				continue
			case op == 3 && pin != nil: // the pinned revision reached
				in, pinned = *pin, true
			default: // a spec of the desired state reached: the pin's, if it is the pinned one
				in = specs[rapid.IntRange(0, len(specs)-1).Draw(t, "spec")]
				if pin != nil && pin.Same(in) {
					in, pinned = *pin, true
				}
			}
			kept, _ := revs.Record(in)
			if n, ok := before[key(in)]; ok && kept.Number != n {
				t.Fatalf("%s recorded again: number %d, it was shown as %d", in.Image, kept.Number, n)
			}
			if pinned && kept.Number != in.Number {
				t.Fatalf("pinned revision %d (%s) recorded again as %d", in.Number, in.Image, kept.Number)
			}
			list := revs["web"]
			if len(list) > MaxRevisions || !list[len(list)-1].Same(in) {
				t.Fatalf("%d revisions kept, the last %s; want at most %d, the last %s", len(list), list[len(list)-1].Image, MaxRevisions, in.Image)
			}
			for _, r := range list {
				if n, ok := before[key(r)]; ok && r.Number != n {
					t.Fatalf("%s renumbered %d -> %d by a record of %s", r.Image, n, r.Number, in.Image)
				}
				if o, ok := owner[r.Number]; ok && o != key(r) {
					t.Fatalf("number %d given to %s, and before to another spec", r.Number, r.Image)
				}
				owner[r.Number] = key(r)
			}
		}
	})
}

// The revision of the highest number is never the one dropped, though it
// is the oldest recorded: the next spec's number is after it, so number
// 11 is not given again to another spec.
func TestRevisionsKeepTheHighestNumber(t *testing.T) {
	revs := Revisions{}
	for i := 1; i <= 10; i++ {
		revs.Record(rev(i))
	}
	pinned := revs["web"][0] // number 1, as a pin keeps it
	if kept, _ := revs.Record(rev(11)); kept.Number != 11 {
		t.Fatalf("v11: number %d, want 11", kept.Number)
	}
	for i := 2; i <= 10; i++ { // 11 is now the oldest recorded
		revs.Record(rev(i))
	}
	if kept, _ := revs.Record(pinned); kept.Number != 1 {
		t.Fatalf("the pinned revision reached: number %d, want 1 (its own)", kept.Number)
	}
	if r, ok := revs.Find("web", 11); !ok || r.Image != "web:v11" {
		t.Fatalf("number 11 dropped: %+v", revs["web"])
	}
	if kept, _ := revs.Record(rev(12)); kept.Number != 12 {
		t.Errorf("v12: number %d, want 12 (11 was given to v11)", kept.Number)
	}
}
