package main

// This file holds the pull of several hosts (issue 27): -configs
// pullfleetN pulls the pull configuration's image (pull.go: demoapp v2 and
// 20 MiB of random bytes, only in a registry the bench serves on
// 127.0.0.1) on one host and on N hosts at once, the hosts being engines
// of the run's own (fleet.go). Each engine reaches the registry at the
// same address inside its network namespace, through a forwarder of the
// bench's (dockertest's Dockerd.Forward), which notes when each engine
// first asks; the engine's own image event says when its pull is done.
// The trials, in a rotating order each round:
//
//   - rollcall, 1 host and N hosts: `rollcall apply` of a file with hosts:
//     (the first host, or all of them, in one wave) over v1, rolling
//     pullConfig's replicas on each host to the registry's image: every
//     host of the rollout pulls before any host rolls (DESIGN §5 rule 0
//     across hosts), MaxPulls at once;
//   - docker pull, 1 host and N hosts at once: `docker -H HOST pull` of the
//     image, on each host at once, over the same v1 replicas (set up in
//     bare API calls): what the engines and the machine allow.
//
// Each trial's pull phase runs from the first request any of its engines
// makes to the registry to the last of its engines' pull events. The
// pulled image is removed from every engine after each trial.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/demo"
)

// parsePullFleet reads "pullfleetN" (2 ≤ N ≤ 10); false when s is not of
// that form.
func parsePullFleet(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "pullfleet")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 2 || n > 10 {
		return 0, false
	}
	return n, true
}

// pullFleetTimes are what one trial of the pull of several hosts measured.
type pullFleetTimes struct {
	total   time.Duration   // the process's start to its exit: apply, or the last docker pull
	pulled  time.Duration   // the trial's start to the last host's pull event
	phase   time.Duration   // the first request to the registry to the last host's pull event
	perHost []time.Duration // each host's first request to its own pull event
}

// pullFleetResult is what the pull of several hosts measured.
type pullFleetResult struct {
	hosts  int
	image  string
	size   int64
	rounds []map[string]pullFleetTimes // by trial key
	fails  map[string]int
}

// pullFleetTrial is one trial: a tool on the first hosts engines.
type pullFleetTrial struct {
	tool  string // "rollcall" or "docker"
	hosts int
}

func (t pullFleetTrial) key() string { return t.tool + "/" + strconv.Itoa(t.hosts) }

func (t pullFleetTrial) label() string {
	what := map[string]string{"rollcall": "rollcall `apply`", "docker": "`docker pull`"}[t.tool]
	if t.hosts == 1 {
		return what + ", 1 host"
	}
	return fmt.Sprintf("%s, %d hosts at once", what, t.hosts)
}

func pullFleetTrials(n int) []pullFleetTrial {
	return []pullFleetTrial{{"rollcall", 1}, {"rollcall", n}, {"docker", 1}, {"docker", n}}
}

// asked notes when each engine of a trial first asks the registry.
type asked struct {
	mu    sync.Mutex
	since time.Time
	first []time.Time // by engine; zero until it asks
}

func (a *asked) reset(n int) {
	a.mu.Lock()
	a.since, a.first = time.Now(), make([]time.Time, n)
	a.mu.Unlock()
}

func (a *asked) accepted(i int) func() {
	return func() {
		now := time.Now()
		a.mu.Lock()
		if i < len(a.first) && a.first[i].IsZero() && !now.Before(a.since) {
			a.first[i] = now
		}
		a.mu.Unlock()
	}
}

func (a *asked) get() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.first)
}

// measurePullFleet runs the pull of several hosts' rounds.
func (r *results) measurePullFleet(ctx context.Context, b *bench, o options) error {
	n := o.pullFleet
	fe, err := b.fleetEngines(ctx, max(n, maxHosts(o.fleets)))
	if err != nil {
		return err
	}
	r.fleetEngines = fe.version
	reg, err := demo.StartRegistry()
	if err != nil {
		return err
	}
	defer reg.Close()
	a := &asked{}
	for i, e := range fe.engines[:n] {
		stop, err := e.Forward(reg.Host, a.accepted(i))
		if err != nil {
			return fmt.Errorf("the registry inside %s's namespace: %w", e.Name, err)
		}
		defer stop()
	}
	ref, size, err := b.buildForRegistry(ctx, reg.Host)
	if err != nil {
		return err
	}
	p := &pullFleetResult{hosts: n, image: ref, size: size, fails: map[string]int{}}
	r.pullFleet = p
	trials := pullFleetTrials(n)
	for round := range o.rounds {
		got := map[string]pullFleetTimes{}
		for _, t := range rotate(trials, round) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			x, err := b.pullFleetTrial(ctx, fe, a, t, ref)
			// The next trial pulls again: the image goes from every engine, whatever this one did.
			if rerr := fe.removeImage(ref, n); rerr != nil {
				return rerr
			}
			if err != nil {
				p.fails[t.key()]++
				b.log("pullfleet round %d · %s: FAILED: %v", round+1, t.label(), err)
				continue
			}
			got[t.key()] = x
			var per []string
			for _, d := range x.perHost {
				per = append(per, seconds(d))
			}
			b.log("pullfleet round %d · %s: pull phase %s (per host %s), pulled %s after the start, done %s",
				round+1, t.label(), seconds(x.phase), strings.Join(per, ", "), seconds(x.pulled), seconds(x.total))
		}
		p.rounds = append(p.rounds, got)
	}
	return nil
}

// pullFleetTrial runs one trial on the first t.hosts engines.
func (b *bench) pullFleetTrial(ctx context.Context, fe *fleetEngines, a *asked, t pullFleetTrial, ref string) (pullFleetTimes, error) {
	views := fe.views[:t.hosts]
	for i, v := range views {
		if _, err := v.cli.ImageInspect(ctx, ref); err == nil {
			return pullFleetTimes{}, fmt.Errorf("%s has %s before the trial: no pull to time", fe.engines[i].Name, ref)
		}
	}
	// timed is the trial's timed part, once what it rolls from is set up.
	var timed func() (time.Duration, error)
	prefix := ""
	switch t.tool {
	case "rollcall":
		prefix = b.name("pfrc")
		defer fe.teardown(prefix, t.hosts)
		var err error
		if timed, err = b.pullFleetRollcall(ctx, fe, prefix, t.hosts, ref); err != nil {
			return pullFleetTimes{}, err
		}
	default:
		// The same v1 replicas run on each host as under rollcall: their
		// probes load the engines and the machine alike.
		base := b.name("pfdp")
		defer fe.teardown(base, t.hosts)
		errs := make([]error, t.hosts)
		var wg sync.WaitGroup
		for i, v := range views {
			wg.Go(func() { _, errs[i] = v.limitSetUp(ctx, base, pullConfig) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return pullFleetTimes{}, fmt.Errorf("set up v1: %w", err)
		}
		timed = func() (time.Duration, error) {
			t0 := time.Now()
			errs := make([]error, t.hosts)
			var wg sync.WaitGroup
			for i, e := range fe.engines[:t.hosts] {
				wg.Go(func() { _, errs[i] = e.CLI(ctx, "pull", "--quiet", ref) })
			}
			wg.Wait()
			return time.Since(t0), errors.Join(errs...)
		}
	}
	// Each engine's pull event, watched from before the trial's start.
	ectx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	pulled := make([]chan time.Time, t.hosts)
	for i, v := range views {
		pulled[i] = make(chan time.Time, 1)
		f := client.Filters{}
		f.Add("type", "image")
		f.Add("event", "pull")
		ev := v.cli.Events(ectx, client.EventsListOptions{Filters: f})
		go func() {
			for {
				select {
				case m := <-ev.Messages:
					if m.Actor.ID == ref || m.Actor.Attributes["name"] == ref {
						pulled[i] <- time.Unix(0, m.TimeNano)
						return
					}
				case <-ev.Err:
					return
				case <-ectx.Done():
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // the event streams are open
	a.reset(len(fe.engines))
	t0 := time.Now()
	total, err := timed()
	if err != nil {
		return pullFleetTimes{}, err
	}
	if prefix != "" {
		for i, v := range views {
			if n, _, err := v.healthyCount(ctx, prefix+".managed=true"); err != nil || n != pullConfig.replicas {
				return pullFleetTimes{}, fmt.Errorf("after apply: %d healthy containers on %s, want %d (%v)", n, fe.engines[i].Name, pullConfig.replicas, err)
			}
		}
	}
	x := pullFleetTimes{total: total}
	first := a.get()
	var start, end time.Time
	for i := range views {
		var at time.Time
		select {
		case at = <-pulled[i]:
		case <-time.After(10 * time.Second):
			return pullFleetTimes{}, fmt.Errorf("no pull event of %s from %s", ref, fe.engines[i].Name)
		}
		if first[i].IsZero() {
			return pullFleetTimes{}, fmt.Errorf("%s pulled %s without asking the bench's registry", fe.engines[i].Name, ref)
		}
		x.perHost = append(x.perHost, at.Sub(first[i]))
		if start.IsZero() || first[i].Before(start) {
			start = first[i]
		}
		end = later(end, at)
	}
	x.phase, x.pulled = end.Sub(start), end.Sub(t0)
	return x, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// pullFleetRollcall sets pullConfig's v1 up on the first n hosts with
// `rollcall apply` (untimed) and returns the timed apply of the registry's
// image on them, in one wave.
func (b *bench) pullFleetRollcall(ctx context.Context, fe *fleetEngines, prefix string, n int, ref string) (func() (time.Duration, error), error) {
	dir := filepath.Join(b.dir, prefix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	journal := filepath.Join(dir, "state", "journal.jsonl")
	hosts, eps := fe.hostNames(n), fe.endpoints(n)
	c := fleetConfig{hosts: n, replicas: pullConfig.replicas, parallelism: pullConfig.parallelism}
	policy := "  canary: [" + strings.Join(hosts, ", ") + "]\n"
	var files [2]string
	for i, image := range []string{b.tag("v1", false), ref} {
		files[i] = filepath.Join(dir, fmt.Sprintf("%d.yaml", i))
		if err := os.WriteFile(files[i], []byte(fleetFile(prefix, image, c, b.interval, hosts, eps, policy)), 0o644); err != nil {
			return nil, err
		}
	}
	if _, err := b.apply(ctx, journal, files[0]); err != nil {
		return nil, fmt.Errorf("set up v1: %w", err)
	}
	return func() (time.Duration, error) {
		d, err := b.apply(ctx, journal, files[1])
		if err != nil {
			return 0, fmt.Errorf("roll to %s: %w", ref, err)
		}
		return d, nil
	}, nil
}

// removeImage removes ref from the first n engines (no error where it is
// not), once the trial's containers are gone.
func (fe *fleetEngines) removeImage(ref string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, e := range fe.engines[:n] {
		wg.Go(func() {
			if _, err := e.CLI(ctx, "rmi", ref); err != nil && !strings.Contains(err.Error(), "No such image") {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pullFleetMarkdown writes the pull of several hosts' table.
func (r *results) pullFleetMarkdown(s *strings.Builder) {
	p := r.pullFleet
	if p == nil {
		return
	}
	one, all := strconv.Itoa(1), strconv.Itoa(p.hosts)
	col := func(key string, f func(pullFleetTimes) time.Duration) string {
		var ds []time.Duration
		for _, round := range p.rounds {
			if x, ok := round[key]; ok {
				ds = append(ds, f(x))
			}
		}
		return durations(ds, seconds)
	}
	ratio := func(a, b string, f func(pullFleetTimes) time.Duration) string {
		var q []float64
		for _, round := range p.rounds {
			x, okA := round[a]
			y, okB := round[b]
			if okA && okB && f(y) > 0 {
				q = append(q, f(x).Seconds()/f(y).Seconds())
			}
		}
		return floats(q)
	}
	phase := func(x pullFleetTimes) time.Duration { return x.phase }
	pulled := func(x pullFleetTimes) time.Duration { return x.pulled }
	total := func(x pullFleetTimes) time.Duration { return x.total }
	perHost := func(x pullFleetTimes) time.Duration { return slices.Max(x.perHost) }
	fmt.Fprintf(s, "Pulls on several hosts: engines of the run's own (as above; separate dockerd %s processes), the image %.1f MB on the engine, "+
		"from the bench's registry on 127.0.0.1, forwarded into each engine's namespace.\n\n", r.fleetEngines, float64(p.size)/1e6)
	fmt.Fprintf(s, "| pull of an image only in a registry | 1 host | %s hosts at once | %s hosts ÷ 1 host |\n|---|---|---|---|\n", all, all)
	rows := []struct {
		label, tool string
		f           func(pullFleetTimes) time.Duration
	}{
		{"rollcall `apply`: pull phase (first registry request → last host pulled)", "rollcall", phase},
		{"rollcall `apply`: slowest host's own pull", "rollcall", perHost},
		{"rollcall `apply`: its start → last host pulled", "rollcall", pulled},
		{"rollcall `apply`: its start → its exit (the roll included)", "rollcall", total},
		{"`docker pull`: pull phase (first registry request → last host pulled)", "docker", phase},
		{"`docker pull`: slowest host's own pull", "docker", perHost},
		{"`docker pull`: the commands' time", "docker", total},
	}
	for _, row := range rows {
		a, b := row.tool+"/"+one, row.tool+"/"+all
		fmt.Fprintf(s, "| %s | %s | %s | %s |\n", row.label, col(a, row.f)+failed(p.fails[a]), col(b, row.f)+failed(p.fails[b]), ratio(b, a, row.f))
	}
	fmt.Fprintf(s, "\nrollcall ÷ `docker pull`, pull phase: 1 host %s, %s hosts at once %s.\n\n",
		ratio("rollcall/"+one, "docker/"+one, phase), all, ratio("rollcall/"+all, "docker/"+all, phase))
	fmt.Fprintf(s, "rollcall: `rollcall apply` of a file with `hosts:` (the first host, or all %s, in one wave: `canary:` names them all) over v1, "+
		"%d replicas a host rolled to the registry's image (`pull: missing`); every host pulls before any host rolls. "+
		"`docker pull`: `docker -H HOST pull --quiet` on each host at once, over the same %d replicas of v1 a host (their probes load the machine alike). A host's pull runs from its engine's first request to the registry "+
		"(as the bench's forwarder accepts it) to the engine's image pull event. Trials in a rotating order each round; the image is removed from every engine after each. "+
		"Ratios: median (min–max) of the per-round ratios.\n\n", all, pullConfig.replicas, pullConfig.replicas)
}
