package fleet

import (
	"reflect"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

func toPull(h *Host)     { h.Pull = PullState{Pending: true} }
func pullingNow(h *Host) { h.Pull = PullState{Pending: true, Running: true} }
func pullFailed(kind docker.PullKind) func(*Host) {
	return func(h *Host) { h.Pull = PullState{Pending: true, Failed: true, Kind: kind} }
}

func actions(d Decision) map[string]Action {
	out := map[string]Action{}
	for _, v := range d.Hosts {
		out[v.Host] = v.Action
	}
	return out
}

// Every host of the rollout pulls before wave 0 touches anything: while
// a host has a pull left (failed or not), no wave starts and no host runs
// anything but its pulls; the hosts with a pull left pull at once, up to
// MaxPulls, those pulling now first and those whose pull failed last; the
// rollout starts once every pull is done.
func TestDecidePullsBeforeTheFirstWave(t *testing.T) {
	policy := spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Count: 2}, OnFailure: spec.OnFailurePause}
	decide := func(rec Record, mode session.Mode, set map[string]func(*Host), approved ...int) Decision {
		hosts := fiveHosts()
		for i := range hosts {
			if f := set[hosts[i].Name]; f != nil {
				f(&hosts[i])
			}
		}
		in := Input{Hosts: hosts, Policy: policy, Mode: mode, Now: now, Record: rec, Approved: map[int]bool{}}
		for _, k := range approved {
			in.Approved[k] = true
		}
		return Decide(in)
	}

	// b's pull failed (unreachable registry), a c and d pull: nothing
	// starts, every one of them pulls, e (nothing to pull) holds.
	d := decide(Record{}, session.ModeAuto, map[string]func(*Host){
		"a": toPull, "b": pullFailed(docker.PullUnreachable), "c": toPull, "d": pullingNow})
	if d.Phase != PhasePreflight || d.Record.Started() || len(d.Events) != 0 {
		t.Fatalf("a pull left: phase %d, record %+v, events %+v", d.Phase, d.Record, d.Events)
	}
	want := map[string]Action{"a": Pull, "b": Pull, "c": Pull, "d": Pull, "e": Hold}
	if got := actions(d); !reflect.DeepEqual(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	wantWaits := []Wait{
		{Kind: WaitPull, Host: "a", Pull: PullState{Pending: true}},
		{Kind: WaitPull, Host: "b", Pull: PullState{Pending: true, Failed: true, Kind: docker.PullUnreachable}},
		{Kind: WaitPull, Host: "c", Pull: PullState{Pending: true}},
		{Kind: WaitPull, Host: "d", Pull: PullState{Pending: true, Running: true}},
	}
	if !reflect.DeepEqual(d.Waves[0].Waits, wantWaits) {
		t.Errorf("wave 0 waits %+v, want %+v", d.Waves[0].Waits, wantWaits)
	}

	// Five hosts to pull: MaxPulls (4) at once, the running one first,
	// the failed one last.
	d = decide(Record{}, session.ModeAuto, map[string]func(*Host){
		"a": pullFailed(docker.PullRateLimited), "b": toPull, "c": toPull, "d": toPull, "e": pullingNow})
	want = map[string]Action{"a": Hold, "b": Pull, "c": Pull, "d": Pull, "e": Pull}
	if got := actions(d); !reflect.DeepEqual(got, want) {
		t.Errorf("five to pull: actions %v, want %v", got, want)
	}

	// Every pull done: the canary starts.
	d = decide(Record{}, session.ModeAuto, nil)
	if want := (map[string]Action{"a": Act, "b": Hold, "c": Hold, "d": Hold, "e": Hold}); !reflect.DeepEqual(actions(d), want) || d.Record.Waves != 1 {
		t.Errorf("pulls done: actions %v, %d waves, want %v and 1", actions(d), d.Record.Waves, want)
	}

	// A started rollout whose later host has a pull left (its image went
	// away): the canary holds too, and no later wave starts.
	d = decide(started(1), session.ModeAuto, map[string]func(*Host){"a": done, "c": toPull})
	if want := (map[string]Action{"a": Hold, "b": Hold, "c": Pull, "d": Hold, "e": Hold}); !reflect.DeepEqual(actions(d), want) || d.Record.Waves != 1 {
		t.Errorf("started, c to pull: actions %v, %d waves, want %v and 1", actions(d), d.Record.Waves, want)
	}

	// Step mode: the pulls wait for the first wave's approval.
	d = decide(Record{}, session.ModeStep, map[string]func(*Host){"b": toPull})
	if want := (map[string]Action{"a": Hold, "b": Hold, "c": Hold, "d": Hold, "e": Hold}); !reflect.DeepEqual(actions(d), want) {
		t.Errorf("step, unapproved: actions %v, want %v", actions(d), want)
	}
	d = decide(Record{}, session.ModeStep, map[string]func(*Host){"b": toPull}, 0)
	if want := (map[string]Action{"a": Hold, "b": Pull, "c": Hold, "d": Hold, "e": Hold}); !reflect.DeepEqual(actions(d), want) || d.Record.Started() {
		t.Errorf("step, approved: actions %v, record %+v, want %v and not started", actions(d), d.Record, want)
	}
}

// With --skip-unreachable a host whose pull failed is left out as one
// that does not answer, and the event says the pull's kind; the canary
// never is: its failed pull holds the rollout.
func TestDecideSkipsAHostWhosePullFailed(t *testing.T) {
	policy := spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Count: 2}, OnFailure: spec.OnFailurePause}
	hosts := fiveHosts()
	pullFailed(docker.PullNotFound)(&hosts[2])
	d := Decide(Input{Hosts: hosts, Policy: policy, Mode: session.ModeAuto, SkipUnreachable: true, Now: now})
	if !reflect.DeepEqual(d.Record.Left, []string{"c"}) || d.Record.Waves != 1 {
		t.Fatalf("left out %v, %d waves; want [c] and the canary started", d.Record.Left, d.Record.Waves)
	}
	wantEv := []Event{{Kind: EventBegan}, {Kind: EventLeftOut, Host: "c", PullKind: docker.PullNotFound}, {Kind: EventWaveStarted, Wave: 0}}
	if !reflect.DeepEqual(d.Events, wantEv) {
		t.Errorf("events %+v, want %+v", d.Events, wantEv)
	}

	hosts = fiveHosts()
	pullFailed(docker.PullUnauthorized)(&hosts[0])
	d = Decide(Input{Hosts: hosts, Policy: policy, Mode: session.ModeAuto, SkipUnreachable: true, Now: now})
	if len(d.Record.Left) != 0 || d.Record.Started() {
		t.Fatalf("the canary's pull failed: left out %v, %d waves; want none and held", d.Record.Left, d.Record.Waves)
	}
	if want := (map[string]Action{"a": Pull, "b": Hold, "c": Hold, "d": Hold, "e": Hold}); !reflect.DeepEqual(actions(d), want) {
		t.Errorf("actions %v, want %v", actions(d), want)
	}
}
