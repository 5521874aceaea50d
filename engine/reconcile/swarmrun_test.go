package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
)

// swarmDouble is a swarm manager with versioned services, as uncloud's
// fake: it records every call as a string, in order, and panics on a
// call RunSwarm has no business making. statusWrites is how many of
// Swarm's own status writes land before each of the next writes (each
// bumps the service's version, so a write at the version read is out of
// sequence); counterWrites, how many land that also move the step
// counter (another writer's).
type swarmDouble struct {
	calls         []string
	services      []docker.Service
	statusWrites  []int
	counterWrites int
}

func (f *swarmDouble) SwarmInfo(context.Context) (docker.SwarmInfo, error) {
	panic("unexpected SwarmInfo")
}
func (f *swarmDouble) Tasks(context.Context, string) ([]docker.Task, error) {
	panic("unexpected Tasks")
}
func (f *swarmDouble) Nodes(context.Context) ([]docker.Node, error) { panic("unexpected Nodes") }

func (f *swarmDouble) Services(_ context.Context, prefix string) ([]docker.Service, error) {
	f.calls = append(f.calls, "services:"+prefix)
	return slices.Clone(f.services), nil
}

func (f *swarmDouble) find(id string) *docker.Service {
	for i := range f.services {
		if f.services[i].ID == id {
			return &f.services[i]
		}
	}
	return nil
}

func (f *swarmDouble) CreateService(_ context.Context, s docker.ServiceSpec) (string, error) {
	f.calls = append(f.calls, "create:"+s.Name)
	for _, have := range f.services {
		if have.Spec.Name == s.Name {
			return "", fmt.Errorf("create %s: %w", s.Name, docker.ErrConflict)
		}
	}
	f.services = append(f.services, docker.Service{ID: "svc-new", Version: 1, Spec: s})
	return "svc-new", nil
}

func (f *swarmDouble) UpdateService(_ context.Context, id string, version uint64, s docker.ServiceSpec) error {
	f.calls = append(f.calls, fmt.Sprintf("update:%s@%d step=%s replicas=%d", id, version, s.Labels[docker.StepLabel(pfx)], s.Replicas))
	cur := f.find(id)
	if cur == nil {
		return fmt.Errorf("service %s: %w", id, docker.ErrNotFound)
	}
	if len(f.statusWrites) > 0 {
		cur.Version += uint64(f.statusWrites[0])
		f.statusWrites = f.statusWrites[1:]
	}
	if f.counterWrites > 0 {
		f.counterWrites--
		cur.Version++
		cur.Spec.Labels[docker.StepLabel(pfx)] = fmt.Sprint(stepCounter(pfx, cur.Spec) + 2)
	}
	if version != cur.Version {
		return fmt.Errorf("update %s at %d (now %d): %w", id, version, cur.Version, docker.ErrOutOfSequence)
	}
	cur.Version++
	cur.Spec = s
	return nil
}

func (f *swarmDouble) RemoveService(_ context.Context, id string) error {
	f.calls = append(f.calls, "remove:"+id)
	for i := range f.services {
		if f.services[i].ID == id {
			f.services = slices.Delete(f.services, i, i+1)
			return nil
		}
	}
	return fmt.Errorf("service %s: %w", id, docker.ErrNotFound)
}

var _ docker.Swarm = (*swarmDouble)(nil)

// rollout is the plan's rollout of web v1 → v2, read at version 10
// counter 3.
func rolloutStep(t *testing.T) (Step, docker.Service) {
	d1, d2 := v1d(), v2d()
	old := service(d2, "web", withTemplate(d1, "web"))
	return only(t, DiffSwarm(d2, swarmObserved([]docker.Service{old}, tasks(old, 3, docker.TaskRunning))), ActRollout), old
}

// TestRunSwarmOutOfSequence: a write refused as out of sequence is read
// again and made at the new version, the step counter carried forward:
// refused twice, it lands on the third write.
func TestRunSwarmOutOfSequence(t *testing.T) {
	s, old := rolloutStep(t)
	f := &swarmDouble{services: []docker.Service{old}, statusWrites: []int{1, 1}}
	if err := RunSwarm(context.Background(), f, s); err != nil {
		t.Fatal(err)
	}
	equalStrings(t, f.calls, []string{
		"update:svc-web@10 step=4 replicas=3", "services:rollcall",
		"update:svc-web@11 step=4 replicas=3", "services:rollcall",
		"update:svc-web@12 step=4 replicas=3",
	})
	if got := f.services[0].Spec.Task.Labels[docker.SpecLabel(pfx)]; got != v2d().Workload("web").Hash {
		t.Errorf("template %s after the write", got)
	}
}

// TestRunSwarmCounterForward: another writer moved the step counter
// meanwhile: the write goes past it, so it is still a change Swarm acts
// on (an advance that equals the spec written would advance nothing).
func TestRunSwarmCounterForward(t *testing.T) {
	s, old := rolloutStep(t)
	f := &swarmDouble{services: []docker.Service{old}, counterWrites: 1}
	if err := RunSwarm(context.Background(), f, s); err != nil {
		t.Fatal(err)
	}
	equalStrings(t, f.calls, []string{"update:svc-web@10 step=4 replicas=3", "services:rollcall", "update:svc-web@11 step=6 replicas=3"})
}

// TestRunSwarmBounded: refused every time, the step gives up after
// swarmWriteTries writes, its error the manager's.
func TestRunSwarmBounded(t *testing.T) {
	s, old := rolloutStep(t)
	f := &swarmDouble{services: []docker.Service{old}, statusWrites: []int{1, 1, 1, 1, 1, 1}}
	err := RunSwarm(context.Background(), f, s)
	if !errors.Is(err, docker.ErrOutOfSequence) {
		t.Fatalf("err %v", err)
	}
	if n := len(slices.DeleteFunc(slices.Clone(f.calls), func(c string) bool { return c == "services:rollcall" })); n != swarmWriteTries {
		t.Errorf("%d writes, want %d: %q", n, swarmWriteTries, f.calls)
	}
}

// TestRunSwarmCreateRemove: a create whose name is rollcall's service of
// the workload is done (I6), one of any other service is a conflict; a
// remove of a service gone is done.
func TestRunSwarmCreateRemove(t *testing.T) {
	d := v2d()
	create := only(t, DiffSwarm(d, swarmObserved(nil)), ActCreate)
	f := &swarmDouble{}
	if err := RunSwarm(context.Background(), f, create); err != nil {
		t.Fatal(err)
	}
	if err := RunSwarm(context.Background(), f, create); err != nil {
		t.Fatalf("again: %v", err)
	}
	equalStrings(t, f.calls, []string{"create:rollcall_web", "create:rollcall_web", "services:rollcall"})

	stack := docker.Service{ID: "svc-stack", Spec: docker.ServiceSpec{Name: "rollcall_web", Labels: map[string]string{docker.StackLabel: pfx}}}
	f = &swarmDouble{services: []docker.Service{stack}}
	if err := RunSwarm(context.Background(), f, create); !errors.Is(err, docker.ErrConflict) {
		t.Errorf("a stack's service of the name: %v, want a conflict", err)
	}

	cur := service(d, "web")
	remove := only(t, DiffSwarm(resolved(), swarmObserved([]docker.Service{cur})), ActRemove)
	f = &swarmDouble{services: []docker.Service{cur}}
	for range 2 {
		if err := RunSwarm(context.Background(), f, remove); err != nil {
			t.Fatal(err)
		}
	}
	equalStrings(t, f.calls, []string{"remove:svc-web", "remove:svc-web"})
}

// TestRunSwarmNotRun: a wait calls nothing; a then row and a host's step
// are refused.
func TestRunSwarmNotRun(t *testing.T) {
	f := &swarmDouble{}
	if err := RunSwarm(context.Background(), f, Step{Action: ActWait}); err != nil {
		t.Error(err)
	}
	s, _ := rolloutStep(t)
	s.Then = true
	if err := RunSwarm(context.Background(), f, s); err == nil {
		t.Error("a then row ran")
	}
	if err := RunSwarm(context.Background(), f, Step{Action: ActStart, Workload: "web"}); err == nil {
		t.Error("a host's step ran on a Swarm")
	}
	if len(f.calls) > 0 {
		t.Errorf("calls %q", f.calls)
	}
}
