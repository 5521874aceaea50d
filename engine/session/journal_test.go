package session

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/journal"
)

// The journal is made from the facts: each line on disk is the line
// lineOf makes of a fact the session recorded, and each fact that has a
// line is on disk, whoever decided it (the operator's keys, the session
// itself) and whichever way it is written (as it is recorded, or before
// it is: a step's start and end, a retry's lifted hold).
func TestJournalIsMadeFromTheFacts(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 2), ModeStep)
	var facts eventLog
	h.opts.Facts = facts.add
	path := h.withJournal()
	f.FailNext("Create", errors.New("no space left on device")) // a failed step's line
	h.start()
	snap := h.waitFor("the plan", func(s Snapshot) bool { return s.Fresh && s.Lock.Held && s.Next != "" })
	next := snap.Next
	for _, i := range []Intent{Emergency{On: true}, Emergency{On: false}, Skip{Key: next}, Unskip{Key: next},
		Pause{}, Resume{}, ApproveStep{Key: next}, Confirm{Yes: true}, Rollback{Workload: "nope"}} {
		h.s.Do(i)
	}
	h.waitFor("the approved step's end", func(s Snapshot) bool { return len(s.Recent) > 0 })
	h.s.Do(ApproveRollout{})
	h.drive("web on v2", func(s Snapshot) bool { return s.Steady && running(s, "web:v2") == 2 && running(s, "web:v1") == 0 })
	h.s.Do(Rollback{Workload: "web"}) // every slot rolled: its hold, and nothing to stop
	h.waitFor("the rollback's hold", func(s Snapshot) bool { return len(s.Holds["web"]) == 1 })
	h.s.Do(Retry{Workload: "web"})
	h.waitFor("the hold lifted", func(s Snapshot) bool { return len(s.Holds) == 0 })
	h.settle()

	// lines are the journal's, once it has every line the facts have.
	var lines []journal.Entry
	deadline := time.Now().Add(waitLimit)
	for {
		es, err := journal.Read(path, 0)
		if err != nil {
			t.Fatal(err)
		}
		lines = es
		want := 0
		for _, x := range facts.all() {
			if _, when := lineOf(x, func() journal.Entry { return journal.Entry{} }); when != lineNone {
				want++
			}
		}
		if len(lines) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Each line is the line of one fact, in who, how and where as the line
	// says them; times aside (a step's lines are at its start).
	strip := func(e journal.Entry) string {
		e.Time = time.Time{}
		b, _ := json.Marshal(e)
		return string(b)
	}
	all := facts.all()
	used := make([]bool, len(all))
	actions := map[string]bool{}
	for _, line := range lines {
		from := journal.Entry{Time: line.Time, User: line.User, Mode: line.Mode, Slot: -1,
			Engine: line.Engine, Prefix: line.Prefix, Host: line.Host, Rollout: line.Rollout}
		found := false
		for i, x := range all {
			if used[i] {
				continue
			}
			if e, when := lineOf(x, func() journal.Entry { return from }); when != lineNone && strip(e) == strip(line) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("journal line %s %s %q (%s): no fact of the session's makes it", line.Action, line.Workload, line.Reason, line.Result)
		}
		actions[line.Action+" "+line.Result] = true
	}
	for i, x := range all {
		if _, when := lineOf(x, func() journal.Entry { return journal.Entry{} }); when != lineNone && !used[i] {
			t.Errorf("fact %d %s (%s) has a journal line, and the journal lacks it", x.Seq, x.Kind, x.Text())
		}
	}
	for _, want := range []string{"emergency-on decision", "emergency-off decision", "skip decision", "unskip decision",
		"pause decision", "resume decision", "approve decision", "approve-rollout decision", "lock-taken decision",
		"rollback decision", "retry decision", "start started", "start failed", "start ok"} {
		if !actions[want] {
			t.Errorf("no %q line: the test did not journal it", want)
		}
	}
	// The lines the operator's replies stand for are none: "roll back
	// nope" and "nothing to confirm" did nothing.
	for _, line := range lines {
		if strings.Contains(line.Reason, "nope") {
			t.Errorf("journal line %+v for an intent that did nothing", line)
		}
	}
}

func (l *eventLog) all() []Fact {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.es)
}
