package loopkit

import (
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/rollcall/rollcall/engine/spec"
)

// within fails the test when f does not return in a second: the rule
// under test is that it never blocks.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatalf("%s blocked", what)
	}
}

func TestSignalNeverBlocksAndKeepsOnePending(t *testing.T) {
	c := NewSignal()
	within(t, "Signal", func() {
		for range 5 {
			Signal(c)
		}
	})
	<-c
	select {
	case <-c:
		t.Fatal("five signals left two pending: a pending signal already says the same")
	default:
	}
}

func TestAlarmChannelIsNilWhileUnarmed(t *testing.T) {
	var a Alarm
	if a.Armed() || a.C() != nil {
		t.Fatal("the zero alarm is armed or has a channel")
	}
	a.Set(time.Hour)
	if !a.Armed() || a.C() == nil {
		t.Fatal("a set alarm is not armed")
	}
	a.Stop()
	if a.Armed() || a.C() != nil {
		t.Fatal("a stopped alarm keeps its channel: a select on it could fire")
	}
	a.Set(time.Hour)
	a.Set(time.Millisecond) // replaces the hour
	select {
	case <-a.C():
	case <-time.After(time.Second):
		t.Fatal("the alarm set again did not fire at its new time")
	}
	if !a.Armed() {
		t.Fatal("an alarm stops being armed only when Fired says it was received")
	}
	a.Fired()
	if a.Armed() || a.C() != nil {
		t.Fatal("a fired alarm keeps its channel")
	}
	select {
	case <-a.C():
		t.Fatal("a nil channel received")
	case <-time.After(20 * time.Millisecond):
	}
}

// The queue keeps everything pushed, in order, whatever pushes and drains
// interleave.
func TestQueueNeverDropsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		q := NewQueue[int]()
		var pushed, got []int
		ops := rapid.SliceOf(rapid.IntRange(-1, 100)).Draw(t, "ops") // -1: drain
		for _, op := range ops {
			if op < 0 {
				got = append(got, q.Drain()...)
				continue
			}
			q.Push(op)
			pushed = append(pushed, op)
		}
		got = append(got, q.Drain()...)
		if !slices.Equal(got, pushed) {
			t.Fatalf("drained %v, pushed %v", got, pushed)
		}
	})
}

// Pushers that never wait on the loop lose nothing while it drains on
// Wake.
func TestQueueConcurrentPushesAllArrive(t *testing.T) {
	q := NewQueue[int]()
	const pushers, each = 8, 500
	var wg sync.WaitGroup
	for p := range pushers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				q.Push(p*each + i)
			}
		}()
	}
	within(t, "Push", wg.Wait) // nobody drains yet: Push still never blocks
	seen := map[int]bool{}
	for len(seen) < pushers*each {
		select {
		case <-q.Wake():
		case <-time.After(time.Second):
			t.Fatalf("%d of %d arrived", len(seen), pushers*each)
		}
		for _, v := range q.Drain() {
			seen[v] = true
		}
	}
}

// A worker reports its jobs in the order they were pushed.
func TestWorkerOrderProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := rapid.SliceOf(rapid.Int()).Draw(t, "jobs")
		w := StartWorker(func(j int) int { return j })
		var got []int
		for _, j := range jobs {
			w.Push(j)
			if rapid.Bool().Draw(t, "take") {
				got = append(got, w.Take()...)
			}
		}
		w.Close()
		<-w.Done()
		got = append(got, w.Take()...)
		if !slices.Equal(got, jobs) {
			t.Fatalf("reports %v, jobs %v", got, jobs)
		}
	})
}

func TestWorkerNeverBlocksOnAHungJob(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	w := StartWorker(func(j int) int {
		if j == 0 {
			started <- struct{}{}
			<-release
		}
		return j
	})
	w.Push(0)
	<-started
	within(t, "Push behind a hung job", func() {
		for j := 1; j <= 1000; j++ {
			w.Push(j)
		}
	})
	within(t, "Take while a job hangs", func() {
		if r := w.Take(); len(r) != 0 {
			t.Errorf("reports %v before the hung job ended", r)
		}
	})
	within(t, "Close while a job hangs", w.Close)
	select {
	case <-w.Done():
		t.Fatal("done while a job still runs")
	default:
	}
	close(release)
	select {
	case <-w.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the worker did not end after its jobs")
	}
	select {
	case <-w.Ready():
	default:
		t.Fatal("reports wait and Ready does not say so")
	}
	got := w.Take()
	if len(got) != 1001 || !slices.IsSorted(got) {
		t.Fatalf("%d reports, in order %v", len(got), slices.IsSorted(got))
	}
}

// nonZero is a value of t that is not its zero value.
func nonZero(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		v.Elem().Set(nonZero(t.Elem()))
	case reflect.Struct:
		v.Field(0).Set(nonZero(t.Field(0).Type))
	case reflect.Slice:
		v.Set(reflect.Append(v, nonZero(t.Elem())))
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(nonZero(t.Key()), nonZero(t.Elem()))
	default:
		panic("nonZero: " + t.String())
	}
	return v
}

// Every field of the desired state but its source is in Fingerprint;
// only the prefix and the workloads are in PlanFingerprint. A field added
// to spec.Desired is covered without a change here.
func TestFingerprintCoversEveryField(t *testing.T) {
	base := &spec.Desired{}
	typ := reflect.TypeFor[spec.Desired]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		d := &spec.Desired{}
		reflect.ValueOf(d).Elem().Field(i).Set(nonZero(f.Type))
		wantAll := f.Name != "Source"
		wantPlan := f.Name == "Prefix" || f.Name == "Workloads"
		if got := Fingerprint(d) != Fingerprint(base); got != wantAll {
			t.Errorf("%s: Fingerprint changed %v, want %v", f.Name, got, wantAll)
		}
		if got := PlanFingerprint(d) != PlanFingerprint(base); got != wantPlan {
			t.Errorf("%s: PlanFingerprint changed %v, want %v", f.Name, got, wantPlan)
		}
	}
	if Fingerprint(nil) != "" || PlanFingerprint(nil) != "" {
		t.Error("nil has a fingerprint")
	}
}
