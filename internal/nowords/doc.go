// Package nowords holds the tests that no non-test code of rollcall reads
// meaning out of another part's words (DESIGN §2). Data, not text, crosses
// a package boundary: a reason, a note, a message or an error is rendered,
// never matched with strings.Contains, HasPrefix, CutSuffix and the like
// (in any argument, and a phrase such as "failed: " is words whatever it
// is looked for in); and a package does not compare another package's
// string field with a word of its vocabulary: the field has a type and
// constants (reconcile.Check, reconcile.Verdict).
package nowords
