package session

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// The slots pane: each desired slot beside its containers, classified as
// DESIGN §1 names them, the serving one first; surplus, orphans and extra
// workloads on rows of their own.
func TestSlotViews(t *testing.T) {
	f, _ := newEngine()
	d, err := load.Parse("v2.yaml", []byte(desiredYAML("web:v2", 3)))
	if err != nil {
		t.Fatal(err)
	}
	r := spec.Resolve(context.Background(), d, f)
	w := r.Workload("web")
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	limits := docker.Limits{Restart: "unless-stopped"}
	mk := func(name string, slot string, hash, imageID string, mods ...func(*docker.Container)) docker.Container {
		c := docker.Container{ID: "id-" + name, Name: name, Image: "web:v2", ImageID: imageID,
			Labels: map[string]string{docker.ManagedLabel(pfx): "true", docker.WorkloadLabel(pfx): "web"},
			State:  docker.StateRunning, HasHealthcheck: true, Health: docker.HealthHealthy,
			Created: now.Add(-time.Minute), StartedAt: now.Add(-time.Minute), Limits: limits}
		if slot != "" {
			c.Labels[docker.SlotLabel(pfx)] = slot
		}
		if hash != "" {
			c.Labels[docker.SpecLabel(pfx)] = hash
		}
		for _, m := range mods {
			m(&c)
		}
		return c
	}
	old := func(c *docker.Container) { c.Image, c.Created = "web:v1", now.Add(-time.Hour) }
	booting := func(c *docker.Container) { c.Health = docker.HealthStarting }
	cs := []docker.Container{
		mk("new-0", "0", w.Hash, w.ImageID),
		mk("old-0", "0", "0123", "sha256:1111", old),
		mk("boot-1", "1", w.Hash, w.ImageID, booting, func(c *docker.Container) { c.Created = now.Add(-2 * time.Minute) }),
		mk("new-1", "1", w.Hash, w.ImageID),
		mk("legacy-1", "1", "", "sha256:1111", old),
		mk("limits-2", "2", w.Hash, w.ImageID, booting, func(c *docker.Container) { c.Limits.Restart = "no" }),
		mk("surplus-3", "3", w.Hash, w.ImageID),
		mk("orphan", "", w.Hash, w.ImageID),
		mk("gone-0", "0", "4567", "sha256:1111", func(c *docker.Container) { c.Labels[docker.WorkloadLabel(pfx)] = "api" }),
		mk("nolabel", "0", "", "", func(c *docker.Container) { delete(c.Labels, docker.WorkloadLabel(pfx)) }),
	}
	views, progress := diffedViews(r, cs, now, false, nil)

	var got []string
	for _, v := range views {
		row := fmt.Sprintf("%s/%d desired=%v ready=%v:", v.Workload, v.Slot, v.Desired != nil, v.Ready)
		for _, c := range v.Containers {
			row += " " + c.Name + "=" + string(c.Relation)
		}
		got = append(got, row)
	}
	want := []string{
		"api/0 desired=false ready=false: gone-0=extra",
		"web/0 desired=true ready=true: new-0=up-to-date old-0=stale",
		"web/1 desired=true ready=true: new-1=up-to-date boot-1=duplicate legacy-1=legacy",
		"web/2 desired=true ready=false: limits-2=needs-update",
		"web/3 desired=false ready=false: surplus-3=surplus",
		fmt.Sprintf("web/%d desired=false ready=false: orphan=orphan", reconcile.NoSlot),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("slots:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if progress != (Progress{Ready: 2, Total: 3}) || progress.String() != "2/3" || progress.Done() {
		t.Errorf("progress %+v", progress)
	}
	d0 := views[1].Desired
	if d0.Image != "web:v2" || d0.Hash != w.Hash || d0.Limits.Restart != "unless-stopped" {
		t.Errorf("desired slot %+v", d0)
	}
	if c := views[1].Containers[0]; !c.Condition.Healthy() || c.Condition == reconcile.ConditionUnverified {
		t.Errorf("serving container %+v", c)
	}

	// A forced recreate makes everything created before it stale.
	views, progress = diffedViews(r, cs[:2], now, false, map[string]time.Time{"web": now.Add(-time.Second)})
	if views[0].Containers[0].Relation != reconcile.RelStale || progress.Ready != 0 {
		t.Errorf("after a recreate request: %+v, %+v", views[0], progress)
	}
	// Emergency counts the booting healthy, unverified.
	views, _ = diffedViews(r, cs[5:6], now, true, nil)
	if c := views[2].Containers[0]; c.Condition != reconcile.ConditionUnverified {
		t.Errorf("emergency: %+v", c)
	}
}

// A forced recreate rolls every slot, one at a time.
func TestRecreateRollsEverySlot(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 2), ModeAuto).start()
	first := h.waitFor("a converged plan", func(s Snapshot) bool { return s.Connected && s.Plan.Empty() && s.Progress.Total == 2 })
	h.s.Do(Recreate{})
	h.drive("the rolling restart", func(s Snapshot) bool {
		if !s.Plan.Empty() || len(s.Containers) != 2 || !s.Progress.Done() {
			return false
		}
		for _, c := range s.Containers {
			if c.Created.Before(first.At) {
				return false
			}
		}
		return true
	})
	if m := f.Mutations(); countPrefix(m, "create:") != 2 || countPrefix(m, "stop:") != 2 {
		t.Errorf("mutations %q, want 2 creates and 2 stops", m)
	}
}

// Emergency mode rolls without waiting for health, and says so.
func TestEmergencySkipsHealth(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	f.AddImage("web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Hour})
	h := newHarness(t, f, clock, desiredYAML("web:v3", 2), ModeAuto).start()
	h.s.Do(Emergency{On: true})
	snap := h.waitFor("the roll, clock standing", func(s Snapshot) bool {
		return running(s, "web:v3") == 2 && running(s, "web:v1") == 0 && s.Plan.Empty()
	})
	if !snap.SkipHealth || !hasNote(snap, "emergency") {
		t.Errorf("skip-health %v, notes %+v", snap.SkipHealth, snap.Notes)
	}
	for _, v := range snap.Slots {
		if v.Containers[0].Condition != reconcile.ConditionUnverified {
			t.Errorf("%s/%d counts as verified healthy in emergency mode", v.Workload, v.Slot)
		}
	}
}

// Skip keeps a step from running in auto; approving it again lets it run.
func TestSkipAndApproveAgain(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeStep).start()
	snap := h.waitFor("a start", func(s Snapshot) bool { return len(s.Plan.Executable()) == 1 })
	key := snap.Plan.Executable()[0].Key()
	h.s.Do(Skip{Key: key})
	h.s.Do(SetMode{Mode: ModeAuto})
	snap = h.settle()
	if m := f.Mutations(); len(m) != 0 || snap.Steps[key].State != StepSkipped || snap.Next != "" {
		t.Fatalf("skipped step: mutations %q, status %+v, next %q", m, snap.Steps[key], snap.Next)
	}
	h.s.Do(ApproveStep{Key: key})
	h.waitFor("the start", func(s Snapshot) bool { return running(s, "web:v1") == 1 })
}

func TestRunRefusesBadOptions(t *testing.T) {
	f, _ := newEngine()
	for name, opts := range map[string]Options{
		"no client": {Source: newMemSource("")},
		"no source": {Client: f},
		"bad mode":  {Client: f, Source: newMemSource(""), Mode: "turbo"},
	} {
		s := New(opts)
		if err := s.Run(context.Background()); err == nil {
			t.Errorf("%s: Run succeeded", name)
		}
		if _, open := <-s.Snapshots(); open {
			t.Errorf("%s: Snapshots not closed", name)
		}
		if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Errorf("%s: second Run: %v", name, err)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{ModeWatch, ModeStep, ModeAuto} {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if _, err := ParseMode("paused"); err == nil {
		t.Error("ParseMode(paused) succeeded: paused is a flag, not a mode")
	}
	if ModeWatch.Acting() || !ModeStep.Acting() || !ModeAuto.Acting() {
		t.Error("Acting")
	}
}

// The slot view names as serving the container Diff keeps: with no healthy
// one, a booting container ranks above a crashed one that was created first.
func TestSlotViewPrimaryIsDiffs(t *testing.T) {
	f, _ := newEngine()
	d, err := load.Parse("v2.yaml", []byte(desiredYAML("web:v2", 1)))
	if err != nil {
		t.Fatal(err)
	}
	r := spec.Resolve(context.Background(), d, f)
	w := r.Workload("web")
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	mk := func(name string, created time.Duration, state docker.State, health docker.Health) docker.Container {
		return docker.Container{ID: "id-" + name, Name: name, Image: "web:v2", ImageID: w.ImageID,
			Labels: map[string]string{docker.ManagedLabel(pfx): "true", docker.WorkloadLabel(pfx): "web",
				docker.SlotLabel(pfx): "0", docker.SpecLabel(pfx): w.Hash},
			State: state, HasHealthcheck: true, Health: health, Created: now.Add(-created), StartedAt: now.Add(-created),
			Limits: reconcile.DesiredLimits(w.Workload)}
	}
	cs := []docker.Container{mk("crashed", time.Hour, docker.StateExited, docker.HealthNone), mk("booting", time.Second, docker.StateRunning, docker.HealthStarting)}
	views, _ := diffedViews(r, cs, now, false, nil)
	if len(views) != 1 || len(views[0].Containers) != 2 {
		t.Fatalf("views %+v", views)
	}
	if first, second := views[0].Containers[0], views[0].Containers[1]; first.Name != "booting" || second.Relation != reconcile.RelDuplicate {
		t.Fatalf("serving %s, then %s %s: want booting first, crashed as the duplicate", first.Name, second.Name, second.Relation)
	}
	if p := reconcile.Diff(r, &reconcile.Observed{Now: now, Containers: cs}); len(p.Steps()) != 1 || p.Steps()[0].Container != "booting" {
		t.Fatalf("Diff keeps another container:\n%s", p)
	}
}

// diffedViews are the slot views of cs as the session makes them: from
// Diff's slot states.
func diffedViews(r *spec.ResolvedDesired, cs []docker.Container, now time.Time, skipHealth bool, recreate map[string]time.Time) ([]SlotView, Progress) {
	plan := reconcile.Diff(r, &reconcile.Observed{Now: now, Containers: cs, SkipHealth: skipHealth, RecreateBefore: recreate})
	return SlotViews(r, &plan, cs)
}
