package load

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

// amplification is the document of issue 10: keys environment keys behind
// one anchor, aliased by users workloads.
func amplification(keys, users int) string {
	var b strings.Builder
	b.WriteString("workloads:\n  w0:\n    image: app\n    environment: &env\n")
	for i := range keys {
		fmt.Fprintf(&b, "      K%d: v%d\n", i, i)
	}
	for i := 1; i < users; i++ {
		fmt.Fprintf(&b, "  w%d:\n    image: app\n    environment: *env\n", i)
	}
	return b.String()
}

// laughs is the nested form: each level aliases the one before ten times.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("workloads: {}\n")
	return b.String()
}

// TestAliasExpansionIsCapped checks that a small document cannot grow to
// gigabytes through aliases: it fails fast, at the alias that goes over,
// in bounded time and memory; while anchors used for sharing still work.
func TestAliasExpansionIsCapped(t *testing.T) {
	tests := []struct {
		rule string
		src  string
		pos  string // "" for a document that parses
		msg  string
	}{
		{"5,000 keys behind one anchor, aliased by 2,000 workloads, is refused",
			amplification(5000, 2000), "5037:18", "aliases expand the document by more than 100000 nodes"},
		{"nested aliases (a billion laughs) are refused", laughs(9), "5:45", "aliases expand the document"},
		{"an alias inside its own anchor is refused", "a: &a [x, *a]\nworkloads: {}\n", "1:11", "alias *a refers to a node that contains it"},
		{"an anchor shared by a few workloads is fine", amplification(50, 40), "", ""},
		{"merge keys count as aliases and are fine when small",
			"workloads:\n  a: &base {image: x, replicas: 2}\n  b: {<<: *base, replicas: 4}\n", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := Parse("test.yaml", []byte(tt.src))
			took := time.Since(start)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			// The bound is on memory, which the machine's load does not
			// move; the time is logged, never asserted (a loaded machine
			// took 2.1s for what takes 0.1s alone).
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
				t.Errorf("took %v and allocated %d MiB, want a bounded parse", took, alloc>>20)
			}
			t.Logf("parsed in %v", took)
			if tt.pos == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			var list spec.ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("error %v, want an ErrorList of one", err)
			}
			if e := list[0]; fmt.Sprintf("%d:%d", e.Line, e.Col) != tt.pos || !strings.Contains(e.Msg, tt.msg) || e.Hint == "" {
				t.Errorf("got %v, want an error at %s with %q and a hint", e, tt.pos, tt.msg)
			}
		})
	}
}

func TestComposeAliasExpansionIsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-env: &env\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "  K%d: v%d\n", i, i)
	}
	b.WriteString("services:\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "  w%d:\n    image: app\n    environment: *env\n", i)
	}
	start := time.Now()
	_, err := ParseCompose("compose.yaml", []byte(b.String()), nil)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %v, want a bounded parse", took)
	}
	if err == nil || !strings.Contains(err.Error(), "aliases expand the document") {
		t.Errorf("error %v, want the alias cap", err)
	}
}
