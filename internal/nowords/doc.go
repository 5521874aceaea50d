// Package nowords holds one test: that no non-test code of rollcall reads
// meaning out of another part's words (DESIGN §2). Data, not text, crosses
// a package boundary: a reason, a note, a message or an error is rendered,
// never matched with strings.Contains, HasPrefix, CutSuffix and the like.
package nowords
