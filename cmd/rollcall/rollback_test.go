package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// revisionsYAML is web on demo:<version>, healthy at once.
const revisionsYAML = `prefix: rctest
workloads:
  web:
    image: demo:%s
    replicas: 2
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
`

// decisionsOf are the journal's decisions of action.
func decisionsOf(t *testing.T, h *harness, action string) []journal.Entry {
	t.Helper()
	es, err := journal.Read(h.journal, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []journal.Entry
	for _, e := range es {
		if e.Result == journal.ResultDecision && e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

// revisionLines are `history --revisions --json`'s lines.
func revisionLines(t *testing.T, h *harness, args ...string) []revisionDoc {
	t.Helper()
	res := h.run("", append([]string{"history", "--revisions", "--json"}, args...)...)
	if res.code != exitOK {
		t.Fatalf("history --revisions --json: exit %d\n%s", res.code, res.stderr)
	}
	var out []revisionDoc
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		if line == "" {
			continue
		}
		var d revisionDoc
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, d)
	}
	return out
}

// runningImages counts web's running containers by image.
func runningImages(t *testing.T, h *harness) map[string]int {
	t.Helper()
	cs, err := h.fake.List(t.Context(), "rctest")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, c := range cs {
		if c.State == docker.StateRunning {
			out[c.Image]++
		}
	}
	return out
}

// TestRollbackPinsARevision (§9, §12): each apply that reaches every slot
// keeps a revision, which history --revisions lists newest first; rollback
// --to refuses the desired spec and a revision not kept; rollback pins the
// one before, journaled; plan then exits 2, shows the pin and rolls v1 in;
// apply rolls it in (and fails: the desired spec is not reached); retry
// lifts the pin, journaled, and v2 rolls back in.
func TestRollbackPinsARevision(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "sha256:d1", fake.Behaviour{})
	h.fake.AddImage("demo:v2", "sha256:d2", fake.Behaviour{})
	path := h.file("rollcall.yaml", strings.Replace(revisionsYAML, "%s", "v1", 1))
	if res := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path); res.code != exitOK {
		t.Fatalf("v1: exit %d\n%s", res.code, res.stderr)
	}
	v1 := heldHash(t, h, path)
	h.file("rollcall.yaml", strings.Replace(revisionsYAML, "%s", "v2", 1))
	if res := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path); res.code != exitOK {
		t.Fatalf("v2: exit %d\n%s", res.code, res.stderr)
	}
	v2 := heldHash(t, h, path)

	revs := revisionLines(t, h, "-f", path)
	if len(revs) != 2 || revs[0].Revision != 2 || revs[0].Image != "demo:v2" || revs[0].Hash != v2 || revs[0].ImageID != "sha256:d2" ||
		revs[1].Revision != 1 || revs[1].Hash != v1 || revs[0].At.Before(revs[1].At) || revs[0].Pinned {
		t.Fatalf("revisions %+v, want v2 (2) then v1 (1), newest first", revs)
	}
	table := h.run("", "history", "--revisions", "web", "-f", path)
	if table.code != exitOK {
		t.Fatalf("history --revisions web: exit %d\n%s", table.code, table.stderr)
	}
	lines := strings.Split(strings.TrimSpace(table.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "WORKLOAD") || !strings.Contains(lines[1], "demo:v2") || !strings.Contains(lines[2], v1[:8]) {
		t.Errorf("history --revisions web:\n%s", table.stdout)
	}
	if none := h.run("", "history", "--revisions", "api", "-f", path); none.code != exitOK || !strings.Contains(none.stderr, "no revisions kept for api") {
		t.Errorf("history --revisions api: exit %d\n%s", none.code, none.stderr)
	}
	if bad := h.run("", "history", "web"); bad.code != exitFailed || !strings.Contains(bad.stderr, "a workload only with --revisions") {
		t.Errorf("history web without --revisions: exit %d\n%s", bad.code, bad.stderr)
	}

	for to, want := range map[string]string{"2": "revision 2 of web is the desired spec", "9": "no revision 9 of web is kept (kept: 1, 2)"} {
		res := h.run("", "rollback", "web", "--to", to, "-f", path)
		if res.code != exitFailed || !strings.Contains(res.stderr, want) {
			t.Errorf("rollback --to %s: exit %d, want 1 and %q\n%s", to, res.code, want, res.stderr)
		}
	}
	if res := h.run("", "rollback", "api", "-f", path); res.code != exitFailed || !strings.Contains(res.stderr, `no workload "api"`) {
		t.Errorf("rollback api: exit %d\n%s", res.code, res.stderr)
	}
	// A name with a control sequence in it is no workload, and the error
	// shows it as given, escaped, never the workload it looks like once
	// the sequence is dropped.
	for _, cmd := range []string{"rollback", "retry"} {
		res := h.run("", cmd, "we\x1b[2Jb", "-f", path)
		if res.code != exitFailed || !strings.Contains(res.stderr, `no workload "we\x1b[2Jb"`) ||
			strings.Contains(res.stderr, `"web"`) || strings.ContainsRune(res.stderr, 0x1b) {
			t.Errorf("%s of a name with an escape sequence: exit %d\n%q", cmd, res.code, res.stderr)
		}
	}
	if ds := decisionsOf(t, h, "pin"); len(ds) != 0 {
		t.Fatalf("refused rollbacks were journaled: %+v", ds)
	}

	res := h.run("", "rollback", "web", "-f", path)
	if res.code != exitOK {
		t.Fatalf("rollback web: exit %d\n%s", res.code, res.stderr)
	}
	mustContain(t, "rollback", res.stdout, "pinned web to revision 1 (spec "+v1[:8]+", demo:v1)", "the desired spec "+v2[:8]+" is held", "rollcall retry web")
	if ds := decisionsOf(t, h, "pin"); len(ds) != 1 || ds[0].Workload != "web" || ds[0].Mode != "rollback" || ds[0].Prefix != "rctest" ||
		ds[0].Engine == "" || !strings.Contains(ds[0].Reason, "revision 1") {
		t.Errorf("pin decisions %+v, want the rollback's", ds)
	}

	plan := h.run("", "plan", "-f", path)
	if plan.code != exitPending {
		t.Fatalf("plan while pinned: exit %d, want 2\n%s%s", plan.code, plan.stdout, plan.stderr)
	}
	mustContain(t, "plan", plan.stdout, "pinned to revision 1 (spec "+v1[:8]+", demo:v1) by "+journal.CurrentUser(), "the desired spec "+v2[:8]+" is held", "UTC")
	var doc planDoc
	res = h.run("", "plan", "--json", "-f", path)
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || res.code != exitPending || doc.Converged {
		t.Fatalf("plan --json while pinned: exit %d converged %v %v\n%s", res.code, doc.Converged, err, res.stdout)
	}
	if len(doc.Pins) != 1 || doc.Pins[0].Workload != "web" || doc.Pins[0].Revision != 1 || doc.Pins[0].Hash != v1 || doc.Pins[0].Against != v2 || doc.Pins[0].Since == nil {
		t.Errorf("plan --json pins %+v, want web pinned to revision 1 (%s) against %s", doc.Pins, v1, v2)
	}
	starts := 0
	for _, w := range doc.Workloads {
		for _, s := range append(w.Steps, w.Then...) { // one slot at a time: the second once the first is healthy
			if s.Action == "start" && s.Container == reconcile.ContainerName("rctest", "web", s.slot(), v1) {
				starts++
			}
		}
	}
	if starts != 2 {
		t.Errorf("plan --json starts %d v1 containers, now and then, want 2:\n%s", starts, res.stdout)
	}

	apply := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path)
	// The pin reached is what the operator asked for: success (issue 29).
	if apply.code != exitOK || !strings.Contains(apply.stderr+apply.stdout, "web pinned to revision 1, as asked") {
		t.Errorf("apply while pinned: exit %d, want 0 naming the pin reached\n%s%s", apply.code, apply.stdout, apply.stderr)
	}
	if got := runningImages(t, h); got["demo:v1"] != 2 || got["demo:v2"] != 0 {
		t.Fatalf("running %v after apply, want 2 demo:v1 and no demo:v2", got)
	}
	// Rolled in, the pin still keeps web off its desired spec: plan exits 2
	// with nothing to do.
	plan = h.run("", "plan", "-f", path)
	if plan.code != exitPending || !strings.Contains(plan.stdout, "pinned to revision 1") || !strings.Contains(plan.stdout, "nothing to do") {
		t.Errorf("plan with the pinned revision rolled in: exit %d, want 2 with the pin and nothing to do\n%s", plan.code, plan.stdout)
	}
	revs = revisionLines(t, h, "-f", path)
	// The number plan shows for the pin is the one history --revisions
	// shows: a pinned spec recorded again keeps its number.
	if len(revs) != 2 || revs[0].Revision != 1 || revs[0].Hash != v1 || !revs[0].Pinned {
		t.Errorf("revisions %+v, want v1 the newest again, still revision 1, pinned", revs)
	}

	retry := h.run("", "retry", "web", "-f", path)
	if retry.code != exitOK {
		t.Fatalf("retry: exit %d\n%s", retry.code, retry.stderr)
	}
	mustContain(t, "retry", retry.stdout, "lifted the pin of web to revision 1")
	if strings.Contains(retry.stdout, "nothing to lift") {
		t.Errorf("retry that lifted a pin says nothing was lifted:\n%s", retry.stdout)
	}
	if ds := decisionsOf(t, h, "unpin"); len(ds) != 1 || ds[0].Mode != "retry" || ds[0].Workload != "web" {
		t.Errorf("unpin decisions %+v, want the retry's", ds)
	}
	if res := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path); res.code != exitOK {
		t.Fatalf("apply after retry: exit %d\n%s", res.code, res.stderr)
	}
	if got := runningImages(t, h); got["demo:v2"] != 2 || got["demo:v1"] != 0 {
		t.Errorf("running %v after the retry, want 2 demo:v2", got)
	}
	if plan := h.run("", "plan", "-f", path); plan.code != exitOK {
		t.Errorf("plan after the retry: exit %d, want 0\n%s", plan.code, plan.stdout)
	}
}

// slot is a step doc's slot, NoSlot for none.
func (s stepDoc) slot() int {
	if s.Slot == nil {
		return reconcile.NoSlot
	}
	return *s.Slot
}

// TestRollbackToZeroIsRefused: --to 0 names no revision (they are numbered
// from 1); it is refused like --to -1, not taken as "the previous one", and
// nothing is pinned or journaled.
func TestRollbackToZeroIsRefused(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "sha256:d1", fake.Behaviour{})
	h.fake.AddImage("demo:v2", "sha256:d2", fake.Behaviour{})
	path := h.file("rollcall.yaml", strings.Replace(revisionsYAML, "%s", "v1", 1))
	for _, v := range []string{"v1", "v2"} {
		h.file("rollcall.yaml", strings.Replace(revisionsYAML, "%s", v, 1))
		if res := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path); res.code != exitOK {
			t.Fatalf("%s: exit %d\n%s", v, res.code, res.stderr)
		}
	}
	for _, to := range []string{"0", "-1"} {
		res := h.run("", "rollback", "web", "--to", to, "-f", path)
		if res.code != exitFailed || !strings.Contains(res.stderr, "--to "+to+": revisions are numbered from 1") {
			t.Errorf("rollback --to %s: exit %d, want 1 and numbered from 1\n%s%s", to, res.code, res.stdout, res.stderr)
		}
	}
	if ds := decisionsOf(t, h, "pin"); len(ds) != 0 {
		t.Errorf("a refused --to was journaled as a pin: %+v", ds)
	}
	if plan := h.run("", "plan", "-f", path); plan.code != exitOK {
		t.Errorf("plan after refused rollbacks: exit %d, want 0 (nothing pinned)\n%s", plan.code, plan.stdout)
	}
}

// TestHistoryRevisionsTakesN: history --revisions -n N lists the newest N
// revisions only; without -n, every one kept (the journal's default of 20
// lines does not apply).
func TestHistoryRevisionsTakesN(t *testing.T) {
	h := newHarness(t, nil)
	path := h.file("rollcall.yaml", strings.Replace(revisionsYAML, "%s", "v1", 1))
	for _, v := range []string{"v1", "v2", "v3"} {
		h.fake.AddImage("demo:"+v, "sha256:d"+v, fake.Behaviour{})
		h.file("rollcall.yaml", strings.Replace(revisionsYAML, "%s", v, 1))
		if res := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path); res.code != exitOK {
			t.Fatalf("%s: exit %d\n%s", v, res.code, res.stderr)
		}
	}
	if all := revisionLines(t, h, "-f", path); len(all) != 3 {
		t.Fatalf("revisions %+v, want 3", all)
	}
	two := revisionLines(t, h, "-n", "2", "-f", path)
	if len(two) != 2 || two[0].Image != "demo:v3" || two[1].Image != "demo:v2" {
		t.Errorf("history --revisions -n 2: %+v, want v3 then v2", two)
	}
	table := h.run("", "history", "--revisions", "-n", "1", "-f", path)
	if lines := strings.Split(strings.TrimSpace(table.stdout), "\n"); table.code != exitOK || len(lines) != 2 || !strings.Contains(lines[1], "demo:v3") {
		t.Errorf("history --revisions -n 1: exit %d, want the heading and v3\n%s%s", table.code, table.stdout, table.stderr)
	}
}
