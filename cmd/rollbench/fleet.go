package main

// This file holds the bench of several hosts (issue 20): -configs
// fleetHxR rolls R replicas on each of H engines of the bench's own, with
// `rollcall apply` of a file with hosts: at several fleet policies, beside
// the bare-API limit of the same engines with the hosts' rolls run in
// waves: every host at once, one host after another, and the waves of
// each policy. Its idle part compares the agent and the console of the
// fleet with those of one host, engine calls counted per host.
//
// The engines are dockertest's (StartEnginesFor): separate dockerd
// processes, each in a network namespace of its own with its own default
// bridge, its own socket, roots and engine ID, stopped and removed at the
// end of the run, also on SIGINT or SIGTERM.

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

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/fleet"
)

// fleetConfig is a roll of several hosts: replicas on each of hosts
// engines, at parallelism slots per host.
type fleetConfig struct{ hosts, replicas, parallelism int }

func (c fleetConfig) String() string {
	return fmt.Sprintf("%d hosts × %d replicas, parallelism %d per host", c.hosts, c.replicas, c.parallelism)
}

func (c fleetConfig) perHost() rollConfig { return rollConfig{c.replicas, c.parallelism} }

// parseFleetConfig reads "fleetHxR" or "fleetHxRxP" (P, the parallelism per
// host, is 1 when left out); false when s is not of that form.
func parseFleetConfig(s string) (fleetConfig, bool) {
	rest, ok := strings.CutPrefix(s, "fleet")
	if !ok {
		return fleetConfig{}, false
	}
	parts := strings.Split(rest, "x")
	if len(parts) < 2 || len(parts) > 3 {
		return fleetConfig{}, false
	}
	n := make([]int, 3)
	n[2] = 1
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return fleetConfig{}, false
		}
		n[i] = v
	}
	c := fleetConfig{n[0], n[1], n[2]}
	if c.hosts < 2 || c.hosts > 10 || c.replicas < 1 || c.replicas > 20 || c.parallelism < 1 || c.parallelism > c.replicas {
		return fleetConfig{}, false
	}
	return c, true
}

// fleetEngines are the engines of the run's own, started at the first
// part that needs them.
type fleetEngines struct {
	engines []*dockertest.Dockerd
	views   []*bench // copies of the bench whose bare API calls go to each engine; they never name a trial (name is the bench's)
	version string   // the engines' dockerd version
	stop    func() error
}

// fleetEngines starts n engines (once; a later call with a larger n is an
// error), each with the default bridge, and loads v1 and v2 of the
// demoapp image (without a baked-in healthcheck) into each.
func (b *bench) fleetEngines(ctx context.Context, n int) (*fleetEngines, error) {
	if b.fleet != nil {
		if len(b.fleet.engines) < n {
			return nil, fmt.Errorf("%d engines running, %d wanted", len(b.fleet.engines), n)
		}
		return b.fleet, nil
	}
	b.log("starting %d engines of the run's own", n)
	engines, stop, err := dockertest.StartEnginesFor(ctx, n, dockertest.DefaultBridge())
	if err != nil {
		return nil, err
	}
	fe := &fleetEngines{engines: engines, stop: stop}
	b.fleet = fe // from here on the cleanup stops them
	for _, e := range engines {
		c, err := client.New(client.WithHost(e.Host))
		if err != nil {
			return nil, fmt.Errorf("engine %s: %w", e.Name, err)
		}
		v := *b
		v.cli, v.moby, v.fleet = c, nil, nil
		fe.views = append(fe.views, &v)
		ping, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		if err != nil {
			return nil, fmt.Errorf("engine %s: %w", e.Name, err)
		}
		if fe.version == "" {
			fe.version = "API " + ping.APIVersion
			if sv, err := c.ServerVersion(ctx, client.ServerVersionOptions{}); err == nil {
				fe.version = sv.Version + " (API " + sv.APIVersion + ")"
			}
		}
	}
	b.log("loading the demoapp images into %d engines", n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, e := range engines {
		wg.Go(func() {
			for _, v := range []string{"v1", "v2"} {
				if err := e.LoadImage(ctx, b.tag(v, false)); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return fe, nil
}

// close stops the engines and removes all they left.
func (fe *fleetEngines) close(logf func(string, ...any)) {
	for _, v := range fe.views {
		v.cli.Close()
	}
	if err := fe.stop(); err != nil {
		logf("cleanup of the engines: %v", err)
	}
}

// hostNames are the names of the first n engines: e0, e1, …
func (fe *fleetEngines) hostNames(n int) []string {
	names := make([]string, n)
	for i, e := range fe.engines[:n] {
		names[i] = e.Name
	}
	return names
}

// teardown removes every container of prefix from the first n engines.
func (fe *fleetEngines) teardown(prefix string, n int) {
	var wg sync.WaitGroup
	for _, v := range fe.views[:n] {
		wg.Go(func() { v.teardown(prefix) })
	}
	wg.Wait()
}

// A fleetPolicy is a fleet: block a rollcall trial rolls under.
type fleetPolicy struct {
	label string // as the table names it
	yaml  string // the fleet: block's lines, indented by two
}

// fleetPolicies are the policies of a roll of hosts: a batch of 100% (the
// canary host, by default the first, then all the others at once), every
// host in the first wave, and a batch of 1 with no soak.
func fleetPolicies(hosts []string) []fleetPolicy {
	return []fleetPolicy{
		{"`batch: 100%`", "  batch: \"100%\"\n"},
		{"`canary: [" + strings.Join(hosts, ", ") + "]`", "  canary: [" + strings.Join(hosts, ", ") + "]\n"},
		{"`batch: 1`, `wait: 0s`", "  batch: 1\n  wait: 0s\n"},
	}
}

// fleetFile is the desired file of a roll of hosts: rollcallFile's
// workload, on each of hosts (by name, at its endpoint), under policy.
func fleetFile(prefix, image string, c fleetConfig, interval time.Duration, hosts, endpoints []string, policy string) string {
	var s strings.Builder
	s.WriteString(rollcallFile(prefix, image, c.perHost(), interval, "no"))
	s.WriteString("hosts:\n")
	for i, h := range hosts {
		fmt.Fprintf(&s, "  %s: {endpoint: %q}\n", h, endpoints[i])
	}
	if policy != "" {
		s.WriteString("fleet:\n" + policy)
	}
	return s.String()
}

// endpoints are the unix:// endpoints of the first n engines.
func (fe *fleetEngines) endpoints(n int) []string {
	eps := make([]string, n)
	for i, e := range fe.engines[:n] {
		eps[i] = e.Host
	}
	return eps
}

// policyWaves are the waves rollcall's fleet makes of hosts under policy,
// read back from a file that has it, as host indexes.
func policyWaves(hosts []string, policy string) ([][]int, error) {
	eps := make([]string, len(hosts))
	for i := range hosts {
		eps[i] = "unix:///run/" + hosts[i] + ".sock"
	}
	d, err := load.Parse("waves.yaml", []byte(fleetFile("waves", "demoapp:v1", fleetConfig{len(hosts), 1, 1}, time.Second, hosts, eps, policy)))
	if err != nil {
		return nil, err
	}
	if d.Fleet == nil {
		return nil, errors.New("the file has no fleet policy")
	}
	var waves [][]int
	for _, w := range fleet.Waves(d.HostNames(), *d.Fleet) {
		var idx []int
		for _, h := range w {
			idx = append(idx, slices.Index(hosts, h))
		}
		waves = append(waves, idx)
	}
	return waves, nil
}

// wavesString is "e0 → e1+e2": waves in order, the hosts of one wave at once.
func wavesString(hosts []string, waves [][]int) string {
	ws := make([]string, len(waves))
	for i, w := range waves {
		hs := make([]string, len(w))
		for j, h := range w {
			hs[j] = hosts[h]
		}
		ws[i] = strings.Join(hs, "+")
	}
	return strings.Join(ws, " → ")
}

// A fleetTrial is one row of the roll of hosts: rollcall under a policy,
// or the limit in waves.
type fleetTrial struct {
	key    string
	label  string
	limit  bool
	waves  [][]int
	policy string // rollcall's: as the table names it
	yaml   string // rollcall's fleet: block
}

// fleetTrials are the rows of c: rollcall under each policy (with tools
// rollcall), and the limit (with tools limit) every host at once, one host
// after another, and in the waves of each policy.
func fleetTrials(c fleetConfig, hosts []string, tools []string) ([]fleetTrial, error) {
	var trials []fleetTrial
	var shapes [][][]int
	all := make([]int, c.hosts)
	var seq [][]int
	for i := range all {
		all[i] = i
		seq = append(seq, []int{i})
	}
	shapes = append(shapes, [][]int{all}, seq)
	for i, p := range fleetPolicies(hosts) {
		w, err := policyWaves(hosts, p.yaml)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.label, err)
		}
		if slices.Contains(tools, "rollcall") {
			trials = append(trials, fleetTrial{key: "rollcall/" + strconv.Itoa(i), label: "rollcall `apply`, " + p.label, waves: w, policy: p.label, yaml: p.yaml})
		}
		if !slices.ContainsFunc(shapes, func(s [][]int) bool { return wavesString(hosts, s) == wavesString(hosts, w) }) {
			shapes = append(shapes, w)
		}
	}
	if slices.Contains(tools, "limit") {
		for i, w := range shapes {
			label := "limit, in waves"
			switch i {
			case 0:
				label = "limit, every host at once"
			case 1:
				label = "limit, one host after another"
			}
			trials = append(trials, fleetTrial{key: "limit/" + wavesString(hosts, w), label: label, limit: true, waves: w})
		}
	}
	return trials, nil
}

// fleetResult is what the roll of hosts of one configuration measured.
type fleetResult struct {
	config fleetConfig
	hosts  []string
	trials []fleetTrial
	times  map[string][]time.Duration
	rounds []map[string]time.Duration
	fails  map[string]int
}

// measureFleet times each trial of each fleet configuration, interleaved
// as the roll part does: every round runs every trial, in a rotating order.
func (r *results) measureFleet(ctx context.Context, b *bench, o options) error {
	fe, err := b.fleetEngines(ctx, maxHosts(o.fleets))
	if err != nil {
		return err
	}
	r.fleetEngines = fe.version
	for _, c := range o.fleets {
		hosts := fe.hostNames(c.hosts)
		trials, err := fleetTrials(c, hosts, o.tools)
		if err != nil {
			return err
		}
		fr := &fleetResult{config: c, hosts: hosts, trials: trials, times: map[string][]time.Duration{}, fails: map[string]int{}}
		r.fleets = append(r.fleets, fr)
		byKey := map[string]fleetTrial{}
		var keys []string
		for _, t := range trials {
			byKey[t.key] = t
			keys = append(keys, t.key)
		}
		for round := range o.rounds {
			got := map[string]time.Duration{}
			for _, k := range rotate(keys, round) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				t := byKey[k]
				var d time.Duration
				if t.limit {
					d, err = rollFleetLimit(ctx, b, fe, c, t.waves)
				} else {
					d, err = rollFleetRollcall(ctx, b, fe, c, t.yaml)
				}
				if err != nil {
					fr.fails[k]++
					b.log("round %d · %s · %s: FAILED: %v", round+1, c, t.label, err)
					continue
				}
				got[k] = d
				fr.times[k] = append(fr.times[k], d)
				b.log("round %d · %s · %s (%s): %s", round+1, c, t.label, wavesString(hosts, t.waves), seconds(d))
			}
			fr.rounds = append(fr.rounds, got)
		}
	}
	return nil
}

func maxHosts(cs []fleetConfig) int {
	n := 0
	for _, c := range cs {
		n = max(n, c.hosts)
	}
	return n
}

// rollFleetRollcall times `rollcall apply --yes --allow-mass-stop` of v2
// over v1 on every host under policy, from the start of the process to its
// exit (apply exits 0 once every host has converged), and checks that
// every host then runs its replicas healthy.
func rollFleetRollcall(ctx context.Context, b *bench, fe *fleetEngines, c fleetConfig, policy string) (time.Duration, error) {
	prefix := b.name("frc")
	dir := filepath.Join(b.dir, prefix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	defer fe.teardown(prefix, c.hosts)
	journal := filepath.Join(dir, "state", "journal.jsonl")
	hosts, eps := fe.hostNames(c.hosts), fe.endpoints(c.hosts)
	var files [2]string
	for i, v := range []string{"v1", "v2"} {
		files[i] = filepath.Join(dir, v+".yaml")
		if err := os.WriteFile(files[i], []byte(fleetFile(prefix, b.tag(v, false), c, b.interval, hosts, eps, policy)), 0o644); err != nil {
			return 0, err
		}
	}
	if _, err := b.apply(ctx, journal, files[0]); err != nil {
		return 0, fmt.Errorf("set up v1: %w", err)
	}
	t0 := time.Now()
	d, err := b.apply(ctx, journal, files[1])
	if b.trace {
		t := &trace{}
		t.add(t0, "apply v2 starts")
		t.add(t0.Add(d), "apply v2 exits")
		t.addJournal(journal) // print leaves v1's lines out
		t.print(b, fmt.Sprintf("rollcall apply, %s, fleet: %s", c, strings.ReplaceAll(strings.TrimSpace(policy), "\n ", ",")), t0)
	}
	if err != nil {
		return 0, fmt.Errorf("roll to v2: %w", err)
	}
	for i, v := range fe.views[:c.hosts] {
		if n, _, err := v.healthyCount(ctx, prefix+".managed=true"); err != nil || n != c.replicas {
			return 0, fmt.Errorf("after apply: %d healthy containers on %s, want %d (%v)", n, hosts[i], c.replicas, err)
		}
	}
	return d, nil
}

// rollFleetLimit sets v1 up on every host (untimed), then times the limit's
// roll (rollLimit) of the hosts in waves: the hosts of a wave at once, a
// wave once the one before it is done.
func rollFleetLimit(ctx context.Context, b *bench, fe *fleetEngines, c fleetConfig, waves [][]int) (time.Duration, error) {
	base := b.name("flim")
	defer fe.teardown(base, c.hosts)
	rolls := make([]*limitRoll, c.hosts)
	errs := make([]error, c.hosts)
	var wg sync.WaitGroup
	for i, v := range fe.views[:c.hosts] {
		wg.Go(func() { rolls[i], errs[i] = v.limitSetUp(ctx, base, c.perHost()) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("set up v1: %w", err)
	}
	t0 := time.Now()
	for k, wave := range waves {
		errs := make([]error, len(wave))
		for j, h := range wave {
			wg.Go(func() { errs[j] = rolls[h].roll(ctx) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, fmt.Errorf("wave %d: %w", k+1, err)
		}
	}
	return time.Since(t0), nil
}

// fleetIdle is one row of the idle part of several hosts.
type fleetIdle struct {
	what  string // "agent" or "console"
	hosts int    // 1: a file without hosts:, on the first engine
}

func (x fleetIdle) key() string { return x.what + "/" + strconv.Itoa(x.hosts) }

// measureFleetIdle measures the agent and the console over c.replicas
// healthy replicas on one host (the first engine, a file without hosts:)
// and on c.hosts hosts (a file with hosts:), each engine behind a counting
// proxy of its own, for the first fleet configuration.
func (r *results) measureFleetIdle(ctx context.Context, b *bench, o options) error {
	c := o.fleets[0]
	fe, err := b.fleetEngines(ctx, maxHosts(o.fleets))
	if err != nil {
		return err
	}
	r.fleetEngines = fe.version
	r.fleetIdleConfig = c
	for _, what := range []string{"agent", "console"} {
		for _, n := range []int{1, c.hosts} {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			x := fleetIdle{what, n}
			b.log("idle · %s on %d host(s): %s warm-up, %s window", what, n, o.idleWarmUp, o.idleWindow)
			res, err := idleHosts(ctx, b, fe, c, x, o.idleWarmUp, o.idleWindow)
			if err != nil {
				r.fleetIdleErr[x.key()] = err.Error()
				b.log("idle · %s on %d host(s): FAILED: %v", what, n, err)
				continue
			}
			r.fleetIdle[x.key()] = res
			per := []string{}
			for i, h := range res.hosts {
				per = append(per, fmt.Sprintf("%s %.1f", fe.engines[i].Name, res.perMinute(h.nCalls)))
			}
			b.log("idle · %s on %d host(s): %.1f calls/min %v (per host: %s), CPU %s (%.3f%%), RSS %d kB", what, n,
				res.perMinute(res.calls.nCalls), res.calls.calls, strings.Join(per, ", "),
				res.cpu, 100*res.cpu.Seconds()/res.window.Seconds(), res.rssKB)
		}
	}
	return nil
}

// idleHosts converges c.replicas replicas on x.hosts engines through
// counting proxies, one per engine, then measures rollcall as x.what over
// them (idleRun). With one host the file has no hosts: and rollcall
// reaches the proxy with --docker-host; with more, the file names each
// host at its proxy.
func idleHosts(ctx context.Context, b *bench, fe *fleetEngines, c fleetConfig, x fleetIdle, warmUp, window time.Duration) (idleResult, error) {
	prefix := b.name("fidle")
	dir := filepath.Join(b.dir, prefix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return idleResult{}, err
	}
	defer fe.teardown(prefix, x.hosts)
	var pxs []*proxy
	defer func() {
		for _, px := range pxs {
			px.close()
		}
	}()
	hosts := fe.hostNames(x.hosts)
	var eps []string
	for i, v := range fe.views[:x.hosts] {
		sock := filepath.Join(dir, hosts[i]+".sock")
		if x.hosts == 1 {
			sock = filepath.Join(dir, "docker.sock")
		}
		px, err := startProxy(sock, v.socket())
		if err != nil {
			return idleResult{}, err
		}
		pxs = append(pxs, px)
		eps = append(eps, "unix://"+sock)
	}
	file := filepath.Join(dir, "rollcall.yaml")
	content := rollcallFile(prefix, b.tag("v1", false), c.perHost(), b.interval, "no")
	var extra []string
	if x.hosts == 1 {
		extra = []string{"--docker-host", eps[0]}
	} else {
		content = fleetFile(prefix, b.tag("v1", false), c, b.interval, hosts, eps, "")
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		return idleResult{}, err
	}
	if _, err := b.apply(ctx, filepath.Join(dir, "state", "journal.jsonl"), file, extra...); err != nil {
		return idleResult{}, err
	}
	return b.idleRun(ctx, x.what, dir, file, pxs, warmUp, window)
}

// fleetMarkdown renders the roll part of several hosts: per configuration,
// each trial's time and waves, then rollcall's per-round ratio to each
// limit.
func (r *results) fleetMarkdown(s *strings.Builder) {
	if len(r.fleets) == 0 {
		return
	}
	fmt.Fprintf(s, "Several hosts: engines of the run's own on this machine (separate dockerd %s processes, each in a network namespace of its own "+
		"with its own default bridge, socket, data root and engine ID; vfs storage), reached on their unix sockets.\n\n", r.fleetEngines)
	for _, fr := range r.fleets {
		fmt.Fprintf(s, "| %s, v1 → v2 | waves | time |\n|---|---|---|\n", fr.config)
		for _, t := range fr.trials {
			fmt.Fprintf(s, "| %s | %s | %s |\n", t.label, wavesString(fr.hosts, t.waves), durations(fr.times[t.key], seconds)+failed(fr.fails[t.key]))
		}
		var rc, lim []fleetTrial
		for _, t := range fr.trials {
			if t.limit {
				lim = append(lim, t)
			} else {
				rc = append(rc, t)
			}
		}
		if len(rc) > 0 && len(lim) > 0 {
			s.WriteString("\n| rollcall ÷ limit |")
			for _, l := range lim {
				fmt.Fprintf(s, " limit %s |", wavesString(fr.hosts, l.waves))
			}
			s.WriteString("\n|---|" + strings.Repeat("---|", len(lim)) + "\n")
			for _, t := range rc {
				fmt.Fprintf(s, "| %s (%s) |", t.policy, wavesString(fr.hosts, t.waves))
				for _, l := range lim {
					var q []float64
					for _, round := range fr.rounds {
						a, okA := round[t.key]
						b, okB := round[l.key]
						if okA && okB && b > 0 {
							q = append(q, a.Seconds()/b.Seconds())
						}
					}
					fmt.Fprintf(s, " %s |", floats(q))
				}
				s.WriteString("\n")
			}
		}
		s.WriteString("\n")
	}
	s.WriteString("rollcall: `rollcall apply --yes --allow-mass-stop -f FILE` of a file with `hosts:` (the hosts' unix:// endpoints) and the `fleet:` policy of the row, " +
		"start of the process to its exit, which comes once every host has converged; every host then runs its replicas healthy (checked). " +
		"The canary wave is the first host unless `canary:` says otherwise, so `batch: 100%` rolls it alone first. " +
		"Limit: on each host, bare API calls: per slot create+start v2, inspect every 20 ms until healthy, then stop+remove v1 (the next slot starts while an old container stops); " +
		"the hosts of a wave at once, a wave once every host of the one before it is done. " +
		"Ratios: median (min–max) of the per-round ratios.\n\n")
}

// fleetIdleMarkdown renders the idle part of several hosts.
func (r *results) fleetIdleMarkdown(s *strings.Builder, o options) {
	if len(r.fleetIdle) == 0 && len(r.fleetIdleErr) == 0 {
		return
	}
	c := r.fleetIdleConfig
	fmt.Fprintf(s, "| idle, %d healthy replicas per host probed every %s | hosts | engine calls / min, per host | calls in the window, per host | events / min, per host | exec_* events | CPU | RSS |\n"+
		"|---|---|---|---|---|---|---|---|\n", c.replicas, o.interval)
	for _, what := range []string{"agent", "console"} {
		for _, n := range []int{1, c.hosts} {
			x := fleetIdle{what, n}
			name := map[string]string{"console": "console (step mode, in tmux 120×40)", "agent": "`agent`"}[what]
			hosts := "1 (e0, a file without `hosts:`)"
			if n > 1 {
				hosts = fmt.Sprintf("%d (`hosts:`)", n)
			}
			if e, bad := r.fleetIdleErr[x.key()]; bad {
				fmt.Fprintf(s, "| %s | %s | failed: %s | | | | | |\n", name, hosts, strings.ReplaceAll(e, "|", "/"))
				continue
			}
			res, ok := r.fleetIdle[x.key()]
			if !ok {
				continue
			}
			per := res.hosts
			if per == nil {
				per = []counts{res.calls}
			}
			var calls, events []string
			same := true
			for i, h := range per {
				calls = append(calls, fmt.Sprintf("%.1f", res.perMinute(h.nCalls)))
				events = append(events, fmt.Sprintf("%.1f", res.perMinute(h.nEvent)))
				if i > 0 && tally(h.calls) != tally(per[0].calls) {
					same = false
				}
			}
			var tallies []string
			switch {
			case len(per) == 1:
				tallies = []string{tally(per[0].calls)}
			case same:
				tallies = []string{"each: " + tally(per[0].calls)}
			default:
				for i, h := range per {
					tallies = append(tallies, fmt.Sprintf("e%d: %s", i, tally(h.calls)))
				}
			}
			fmt.Fprintf(s, "| %s | %s | %s | %s | %s | %d | %.3f %% (%s in %s) | %.1f MiB |\n", name, hosts,
				strings.Join(calls, " · "), strings.Join(tallies, "; "), strings.Join(events, " · "), res.execEvents(),
				100*res.cpu.Seconds()/res.window.Seconds(), res.cpu, res.window.Round(time.Second), float64(res.rssKB)/1024)
		}
	}
	fmt.Fprintf(s, "\nEach engine behind a counting unix-socket proxy of its own, over %s after %s of warm-up; one host is the first engine, "+
		"reached with `--docker-host`. CPU and RSS are the one rollcall process's, whatever the number of hosts.\n\n", o.idleWindow, o.idleWarmUp)
}
