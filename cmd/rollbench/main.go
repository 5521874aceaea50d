// Command rollbench measures rollcall against Docker Swarm and against the
// engine's limit on the real Docker engine, and prints a markdown table
// (issue 12). It is a tool for people, not a test: CI builds and vets it but
// never runs it.
//
//	go run ./cmd/rollbench [-rounds 5] [-parts roll,reaction,idle] [-configs 3x1,10x1,10x10,fleet3x3,cohorts,pull,pullfleet3]
//	                       [-tools rollcall,swarm,limit,before] [-before DIR] [-health-interval 100ms] [-idle-window 60s] [-out FILE]
//	                       [-cohort-requests 2000] [-cohort-clients 1] [-cohort-share 0.1]
//
// Run it from the module root: it builds rollcall and a static demoapp with
// `go build` into a temporary folder, builds the demoapp image FROM scratch
// (v1 and v2, each with and without a baked-in HEALTHCHECK), and removes
// everything again at the end, also on SIGINT or SIGTERM.
//
//   - roll: the time from v1 to v2 of each configuration (replicas ×
//     parallelism), interleaved: every round runs every configuration and,
//     in a rotating order, every tool, so machine load hits them alike.
//     rollcall is `rollcall apply --yes --allow-mass-stop`, from the start
//     of the process to its exit. Swarm is `docker service update --detach
//     --image` of a start-first service (swarm mode is turned on on
//     loopback for this part and left again right after it), from the call
//     to the die event of the last old task, since the CLI's own wait adds
//     a 5s verify. The limit is the same sequence in bare API calls: create
//     and start, inspect every 20ms until healthy, stop and remove the old.
//   - reaction: a kill -9 from the host of the main process of a healthy
//     container, under rollcall's agent (restart: "no") and under Docker's
//     own restart: unless-stopped: the times to the die event, to rollcall's
//     restart call (as it crosses a counting proxy), to the start event and
//     to the next healthy event.
//   - idle: the agent and the console (in tmux) over 3 healthy replicas,
//     through a counting unix-socket proxy: engine calls and events a
//     minute, CPU (utime+stime from /proc) and RSS.
//
// A configuration fleetHOSTSxREPLICAS[xPARALLELISM] (e.g. fleet3x3) is of
// several hosts (fleet.go): HOSTS engines of the run's own (dockertest's,
// each a dockerd in a network namespace of its own), stopped and removed
// at the end. Its roll is `rollcall apply` of a file with hosts: under
// fleet policies (batch: 100%, every host a canary, batch: 1 with no
// soak), beside the limit on each host with the hosts' rolls in waves:
// every host at once, one after another, and each policy's waves. Its idle
// part is the agent and the console over one host and over every host,
// each engine behind a proxy of its own: engine calls per host. The parts
// on the engine (roll, reaction and idle) run only when -configs names a
// REPLICASxPARALLELISM configuration too; swarm has no part with several
// hosts.
//
// The configuration cohorts (cohorts.go) is of the proxy, not of a roll:
// the latency through Caddy with rollcall's handler rollcall_cohorts and a
// canary split, against `dynamic rollcall` alone, in alternating rounds of
// -cohort-requests POSTs each (-rounds of each). It runs whenever -configs
// names it, whatever -parts says.
//
// The configuration pull (pull.go) rolls 3 replicas to a 20 MB image that
// only a registry on loopback has: rollcall apply, its pull step included,
// against `docker pull` then the limit's roll, in alternating rounds. A
// configuration pullfleetHOSTS (pullfleet.go) pulls that image on one and
// on HOSTS engines of the run's own at once, with rollcall apply of a
// hosts: file and with docker pull. Both run whenever -configs names them,
// whatever -parts says.
//
// -before DIR builds rollcall from another tree too (an older commit's
// worktree), rolled as the tool before in the same rounds as this tree's:
// the side-by-side measure of a change.
//
// The bench may import moby directly, unlike the rest of rollcall: the
// limit is bare API calls by definition, and rollcall's adapter has no
// cheap inspect (its Inspect inspects the image too).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

type options struct {
	rounds      int
	parts       []string
	configs     []rollConfig
	fleets      []fleetConfig
	tools       []string
	interval    time.Duration
	idleWindow  time.Duration
	idleWarmUp  time.Duration
	out         string
	trace       bool
	reproduceAs string
	cohorts     bool // -configs cohorts (cohorts.go)
	pull        bool // -configs pull (pull.go)
	pullFleet   int  // -configs pullfleetN: N, or 0 (pullfleet.go)
	cohort      cohortOptions
	before      string // -before: the tree the tool before builds rollcall from
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		fmt.Fprintln(stderr, "rollbench:", err)
		return 2
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := newBench(ctx, o.interval, logf)
	if err != nil {
		fmt.Fprintln(stderr, "rollbench:", err)
		return 1
	}
	b.trace = o.trace
	b.beforeTree = o.before
	defer b.cleanup() // before the exit: on an error, a signal or a panic too
	r, err := measure(ctx, b, o)
	report := r.markdown(o)
	fmt.Fprint(stdout, report)
	if o.out != "" {
		if werr := os.WriteFile(o.out, []byte(report), 0o644); werr != nil {
			fmt.Fprintln(stderr, "rollbench:", werr)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "rollbench:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("rollbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	parts := fs.String("parts", "roll,reaction,idle", "what to measure: roll, reaction, idle (comma-separated); on the engine only with a REPLICASxPARALLELISM config, on engines of the run's own with a fleet one")
	configs := fs.String("configs", "3x1,10x1,10x10", "rolls to time, as REPLICASxPARALLELISM on the engine, or fleetHOSTSxREPLICAS[xPARALLELISM] on engines of the run's own, "+
		"cohorts: the latency through Caddy with rollcall_cohorts against dynamic rollcall alone, "+
		"pull: 3 replicas rolled to a 20 MB image only in a registry on loopback, rollcall against docker pull and the limit, "+
		"and pullfleetHOSTS: that image pulled on 1 and on HOSTS engines of the run's own at once, by rollcall apply and by docker pull (comma-separated)")
	tools := fs.String("tools", "rollcall,swarm,limit", "what rolls: rollcall, swarm, limit, before (comma-separated; before needs -before)")
	fs.StringVar(&o.before, "before", "", "a tree of rollcall (an older commit's worktree) to build rollcall from as well, rolled as the tool before beside this tree's rollcall in the same rounds")
	fs.IntVar(&o.rounds, "rounds", 5, "interleaved rounds of each roll and reaction")
	fs.DurationVar(&o.interval, "health-interval", 100*time.Millisecond, "healthcheck interval of every container")
	fs.DurationVar(&o.idleWindow, "idle-window", time.Minute, "how long each idle process is measured")
	fs.DurationVar(&o.idleWarmUp, "idle-warmup", 10*time.Second, "how long each idle process runs before the window opens")
	fs.BoolVar(&o.trace, "trace", false, "log where the time of each rollcall trial went: its engine calls (through a proxy, which slows it a little), the engine's events and its journal or log lines")
	fs.StringVar(&o.out, "out", "", "also write the markdown to this file")
	fs.IntVar(&o.cohort.requests, "cohort-requests", 2000, "cohorts: POSTs a round through each Caddy")
	fs.IntVar(&o.cohort.clients, "cohort-clients", 1, "cohorts: clients sending them back to back (more put the latency into a 2-core machine's run queue)")
	fs.Float64Var(&o.cohort.share, "cohort-share", 0.1, "cohorts: the canary's share of the split")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.rounds < 1 || o.rounds > 50 {
		return o, fmt.Errorf("-rounds %d: want 1 to 50", o.rounds)
	}
	if o.interval < time.Millisecond {
		return o, fmt.Errorf("-health-interval %s: the engine takes 1ms at least", o.interval)
	}
	if o.cohort.clients < 1 || o.cohort.clients > 64 {
		return o, fmt.Errorf("-cohort-clients %d: want 1 to 64", o.cohort.clients)
	}
	if o.cohort.requests < o.cohort.clients || o.cohort.requests > 1_000_000 {
		return o, fmt.Errorf("-cohort-requests %d: want from -cohort-clients (%d) to 1000000", o.cohort.requests, o.cohort.clients)
	}
	if !(o.cohort.share > 0 && o.cohort.share < 1) {
		return o, fmt.Errorf("-cohort-share %v: want more than 0 and less than 1, so both cohorts get requests", o.cohort.share)
	}
	o.parts = strings.Split(*parts, ",")
	for _, p := range o.parts {
		if !slices.Contains([]string{"roll", "reaction", "idle"}, p) {
			return o, fmt.Errorf("-parts: unknown %q (roll, reaction, idle)", p)
		}
	}
	o.tools = strings.Split(*tools, ",")
	for _, t := range o.tools {
		if rollers[t] == nil {
			return o, fmt.Errorf("-tools: unknown %q (rollcall, swarm, limit, before)", t)
		}
	}
	if slices.Contains(o.tools, "before") != (o.before != "") {
		return o, errors.New("-tools before and -before DIR go together: the tool before is rollcall built from DIR")
	}
	for _, c := range strings.Split(*configs, ",") {
		if c == "cohorts" {
			o.cohorts = true
			continue
		}
		if c == "pull" {
			o.pull = true
			continue
		}
		if strings.HasPrefix(c, "pullfleet") {
			n, ok := parsePullFleet(c)
			if !ok {
				return o, fmt.Errorf("-configs: %q is not pullfleetHOSTS (2 ≤ hosts ≤ 10)", c)
			}
			o.pullFleet = n
			continue
		}
		if strings.HasPrefix(c, "fleet") {
			fc, ok := parseFleetConfig(c)
			if !ok {
				return o, fmt.Errorf("-configs: %q is not fleetHOSTSxREPLICAS[xPARALLELISM] (2 ≤ hosts ≤ 10, 1 ≤ parallelism ≤ replicas ≤ 20)", c)
			}
			o.fleets = append(o.fleets, fc)
			continue
		}
		r, p, ok := strings.Cut(c, "x")
		n, err1 := strconv.Atoi(r)
		par, err2 := strconv.Atoi(p)
		if !ok || err1 != nil || err2 != nil || n < 1 || n > 50 || par < 1 || par > n {
			return o, fmt.Errorf("-configs: %q is not REPLICASxPARALLELISM (1 ≤ parallelism ≤ replicas ≤ 50)", c)
		}
		o.configs = append(o.configs, rollConfig{n, par})
	}
	o.reproduceAs = "go run ./cmd/rollbench"
	for _, a := range args {
		o.reproduceAs += " " + shellQuote(a)
	}
	return o, nil
}

func (o options) has(part string) bool { return slices.Contains(o.parts, part) }

// results is everything one run measured.
type results struct {
	machine   string
	loadStart string
	loadEnd   string
	others    int // running containers not of this run, at the start
	rolls     map[rollConfig]map[string][]time.Duration
	rollRound map[rollConfig][]map[string]time.Duration // per round, for the ratios
	rollFails map[rollConfig]map[string]int
	reactions map[string][]reaction
	reactFail map[string]int
	idle      map[string]idleResult
	idleErr   map[string]string
	busy      map[string]float64 // part → share of the machine's CPU time busy while it ran

	// The parts of several hosts (fleet.go), on engines of the run's own.
	fleets          []*fleetResult
	fleetEngines    string // their dockerd's version
	fleetIdleConfig fleetConfig
	fleetIdle       map[string]idleResult // by fleetIdle.key
	fleetIdleErr    map[string]string

	cohorts *cohortResult // the proxy's part (cohorts.go)
	pull    *pullResult   // the roll to an image only in a registry (pull.go)

	pullFleet *pullFleetResult // the pull of several hosts (pullfleet.go)

	beforeTree string // -before's tree and its commit, when there is one
	// rollCPU is the CPU time (user and system) of each timed rollcall
	// process of the roll part, by configuration and tool.
	rollCPU map[rollConfig]map[string][]time.Duration
}

func measure(ctx context.Context, b *bench, o options) (*results, error) {
	r := &results{rolls: map[rollConfig]map[string][]time.Duration{}, rollCPU: map[rollConfig]map[string][]time.Duration{}, rollRound: map[rollConfig][]map[string]time.Duration{},
		rollFails: map[rollConfig]map[string]int{}, reactions: map[string][]reaction{}, reactFail: map[string]int{},
		idle: map[string]idleResult{}, idleErr: map[string]string{}, busy: map[string]float64{},
		fleetIdle: map[string]idleResult{}, fleetIdleErr: map[string]string{}}
	r.machine = machine(ctx, b.cli)
	if o.before != "" {
		r.beforeTree = o.before
		if c, err := exec.CommandContext(ctx, "git", "-C", o.before, "log", "-1", "--format=%h").Output(); err == nil {
			r.beforeTree += " (commit " + strings.TrimSpace(string(c)) + ")"
		}
	}
	r.loadStart = loadavg()
	r.others = otherContainers(ctx, b)
	b.log("%s; %d other containers running; load %s", r.machine, r.others, r.loadStart)
	defer func() { r.loadEnd = loadavg() }()
	if len(o.configs) > 0 || len(o.fleets) > 0 || o.pull || o.pullFleet > 0 { // the cohorts part builds what it needs itself
		b.log("building rollcall, demoapp and its images")
		if err := b.build(ctx); err != nil {
			return r, err
		}
	}

	if o.has("roll") && len(o.configs) > 0 {
		defer r.measureBusy("roll")()
		if slices.Contains(o.tools, "swarm") {
			if err := b.swarmInit(ctx); err != nil {
				return r, err
			}
		}
		for round := range o.rounds {
			for _, c := range o.configs {
				if r.rolls[c] == nil {
					r.rolls[c], r.rollFails[c] = map[string][]time.Duration{}, map[string]int{}
				}
				got := map[string]time.Duration{}
				for _, tool := range rotate(o.tools, round) {
					if ctx.Err() != nil {
						return r, ctx.Err()
					}
					b.cpu = 0
					d, err := rollers[tool](ctx, b, c)
					if err != nil {
						r.rollFails[c][tool]++
						b.log("round %d · %s · %s: FAILED: %v", round+1, c, tool, err)
						continue
					}
					got[tool] = d
					r.rolls[c][tool] = append(r.rolls[c][tool], d)
					if b.cpu > 0 {
						if r.rollCPU[c] == nil {
							r.rollCPU[c] = map[string][]time.Duration{}
						}
						r.rollCPU[c][tool] = append(r.rollCPU[c][tool], b.cpu)
						b.log("round %d · %s · %s: %s (CPU %s)", round+1, c, tool, seconds(d), millis(b.cpu))
					} else {
						b.log("round %d · %s · %s: %s", round+1, c, tool, seconds(d))
					}
				}
				r.rollRound[c] = append(r.rollRound[c], got)
			}
		}
		if b.swarm {
			cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if _, err := cli(cctx, "swarm", "leave", "--force"); err != nil {
				b.log("swarm leave: %v", err)
			} else {
				b.swarm = false
			}
			cancel()
		}
	}

	if o.has("roll") && len(o.fleets) > 0 {
		done := r.measureBusy("fleet roll")
		err := r.measureFleet(ctx, b, o)
		done()
		if err != nil {
			return r, err
		}
	}

	if o.has("reaction") && len(o.configs) > 0 {
		done := r.measureBusy("reaction")
		for round := range o.rounds {
			for _, who := range rotate([]string{"rollcall", "docker"}, round) {
				if ctx.Err() != nil {
					return r, ctx.Err()
				}
				x, err := reactors[who](ctx, b)
				if err != nil {
					r.reactFail[who]++
					b.log("reaction round %d · %s: FAILED: %v", round+1, who, err)
					continue
				}
				r.reactions[who] = append(r.reactions[who], x)
				b.log("reaction round %d · %s: die %s, call %s, running %s, healthy %s", round+1, who,
					millis(x.die), millis(x.call), millis(x.running), millis(x.healthy))
			}
		}
		done()
	}

	if o.has("idle") && len(o.configs) > 0 {
		for _, what := range []string{"agent", "console"} {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			b.log("idle · %s: %s warm-up, %s window", what, o.idleWarmUp, o.idleWindow)
			x, err := idle(ctx, b, what, o.idleWarmUp, o.idleWindow)
			if err != nil {
				r.idleErr[what] = err.Error()
				b.log("idle · %s: FAILED: %v", what, err)
				continue
			}
			r.idle[what] = x
			b.log("idle · %s: %.1f calls/min %v, %.1f events/min %v, CPU %s (%.3f%%), RSS %d kB", what,
				x.perMinute(x.calls.nCalls), x.calls.calls, x.perMinute(x.calls.nEvent), x.calls.events,
				x.cpu, 100*x.cpu.Seconds()/x.window.Seconds(), x.rssKB)
		}
	}

	if o.has("idle") && len(o.fleets) > 0 {
		if err := r.measureFleetIdle(ctx, b, o); err != nil {
			return r, err
		}
	}

	if o.pull {
		done := r.measureBusy("pull")
		err := r.measurePull(ctx, b, o)
		done()
		if err != nil {
			return r, err
		}
	}

	if o.pullFleet > 0 {
		done := r.measureBusy("pull of several hosts")
		err := r.measurePullFleet(ctx, b, o)
		done()
		if err != nil {
			return r, err
		}
	}

	if o.cohorts {
		done := r.measureBusy("cohorts")
		err := r.measureCohorts(ctx, b, o)
		done()
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// measureBusy starts measuring how busy the machine's CPUs are; the
// function it returns ends the measure and records it under part.
func (r *results) measureBusy(part string) func() {
	busy0, total0 := cpuStat()
	return func() {
		busy1, total1 := cpuStat()
		if total1 > total0 {
			r.busy[part] = float64(busy1-busy0) / float64(total1-total0)
		}
	}
}

// cpuStat is the machine's busy and total CPU time so far, in ticks, from
// the first line of /proc/stat (idle and iowait count as not busy).
func cpuStat() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i >= 8 { // guest time is counted in user time already
			break
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy, total
}

// rotate is s turned left by n, so each round starts with another tool.
func rotate[T any](s []T, n int) []T {
	n %= len(s)
	return append(slices.Clone(s[n:]), s[:n]...)
}

// machine names the CPU count and model and the engine's version.
func machine(ctx context.Context, c *client.Client) string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	engine := "unknown"
	if v, err := c.ServerVersion(ctx, client.ServerVersionOptions{}); err == nil {
		engine = v.Version + " (API " + v.APIVersion + ")"
	}
	return fmt.Sprintf("%d × %s, Docker Engine %s, %s/%s", runtime.NumCPU(), model, engine, runtime.GOOS, runtime.GOARCH)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// otherContainers counts the running containers that are not the run's.
func otherContainers(ctx context.Context, b *bench) int {
	res, err := b.cli.ContainerList(ctx, client.ContainerListOptions{})
	if err != nil {
		return -1
	}
	n := 0
	for _, c := range res.Items {
		if !ofPrefix(c.Names, b.run) {
			n++
		}
	}
	return n
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=.,/:", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
