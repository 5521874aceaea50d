package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

var toolHeads = map[string]string{"rollcall": "rollcall `apply`", "swarm": "Swarm (engine time)", "limit": "limit (bare API)", "before": "rollcall `apply`, -before's tree"}

// ratioPairs are the ratios of the roll table, each of its two tools.
var ratioPairs = [][2]string{{"rollcall", "limit"}, {"before", "limit"}, {"rollcall", "before"}, {"rollcall", "swarm"}}

var ratioHeads = map[string]string{"rollcall": "rollcall", "limit": "limit", "swarm": "Swarm", "before": "before"}

// markdown renders what r holds: the machine, the tables of the parts that
// ran, and the command that reproduces them.
func (r *results) markdown(o options) string {
	var s strings.Builder
	fmt.Fprintf(&s, "Machine: %s. Load average %s at the start, %s at the end; %d other containers running at the start.",
		r.machine, r.loadStart, r.loadEnd, r.others)
	if len(o.configs) > 0 || len(o.fleets) > 0 {
		fmt.Fprintf(&s, " Every container: demoapp FROM scratch, healthcheck every %s. Medians, min–max in brackets, over %d interleaved rounds.", o.interval, o.rounds)
	}
	s.WriteString("\n\n")
	if len(r.busy) > 0 {
		s.WriteString("The machine's CPUs were busy (all processes, from /proc/stat)")
		for i, part := range slices.Sorted(maps.Keys(r.busy)) {
			if i > 0 {
				s.WriteString(",")
			}
			fmt.Fprintf(&s, " %.0f %% of the time during the %s part", 100*r.busy[part], part)
		}
		s.WriteString(".\n\n")
	}

	if len(r.rolls) > 0 {
		s.WriteString("| roll v1 → v2 |")
		for _, t := range o.tools {
			s.WriteString(" " + toolHeads[t] + " |")
		}
		ratios := [][2]string{}
		for _, pair := range ratioPairs {
			if slices.Contains(o.tools, pair[0]) && slices.Contains(o.tools, pair[1]) {
				ratios = append(ratios, pair)
				fmt.Fprintf(&s, " %s / %s |", ratioHeads[pair[0]], ratioHeads[pair[1]])
			}
		}
		s.WriteString("\n|---|" + strings.Repeat("---|", len(o.tools)+len(ratios)) + "\n")
		for _, c := range o.configs {
			fmt.Fprintf(&s, "| %s |", c)
			for _, t := range o.tools {
				fmt.Fprintf(&s, " %s |", durations(r.rolls[c][t], seconds)+failed(r.rollFails[c][t]))
			}
			for _, pair := range ratios {
				var q []float64
				for _, round := range r.rollRound[c] {
					a, okA := round[pair[0]]
					b, okB := round[pair[1]]
					if okA && okB && b > 0 {
						q = append(q, a.Seconds()/b.Seconds())
					}
				}
				fmt.Fprintf(&s, " %s |", floats(q))
			}
			s.WriteString("\n")
		}
		s.WriteString("\nPer round, in order:\n\n")
		for _, c := range o.configs {
			for _, pair := range ratios {
				fmt.Fprintf(&s, "- %s, %s / %s: %s\n", c, ratioHeads[pair[0]], ratioHeads[pair[1]], perRound(r.rollRound[c], pair))
			}
		}
		for _, c := range o.configs {
			for _, t := range []string{"rollcall", "before"} {
				if cpu := r.rollCPU[c][t]; len(cpu) > 0 {
					fmt.Fprintf(&s, "- %s, CPU of %s's timed `apply` process (user+system): %s\n", c, ratioHeads[t], durations(cpu, millis))
				}
			}
		}
		if r.beforeTree != "" {
			fmt.Fprintf(&s, "\nbefore: rollcall built from %s, rolled exactly as rollcall is, in the same rounds.\n", r.beforeTree)
		}
		s.WriteString("\nrollcall: `rollcall apply --yes --allow-mass-stop`, start of the process to its exit. " +
			"Swarm: `docker service update --detach --image` (start-first, `--update-delay 0s`), the call to the last old task's die event. " +
			"Limit: create+start, inspect every 20 ms until healthy, then stop+remove the old, up to parallelism slots mid-roll (the next slot starts while an old container stops). " +
			"Ratios: median (min–max) of the per-round ratios.\n\n")
	}

	r.fleetMarkdown(&s)

	if len(r.reactions) > 0 || len(r.reactFail) > 0 {
		s.WriteString("| host `kill -9` of the main process → | die event | restart call | die → restart call | running (start event) | healthy |\n|---|---|---|---|---|---|\n")
		for _, who := range []string{"rollcall", "docker"} {
			xs := r.reactions[who]
			pick := func(f func(reaction) time.Duration) string {
				var ds []time.Duration
				for _, x := range xs {
					ds = append(ds, f(x))
				}
				return durations(ds, millis)
			}
			name, call, dieToCall := "rollcall `agent` (restart: \"no\")", pick(func(x reaction) time.Duration { return x.call }),
				pick(func(x reaction) time.Duration { return x.call - x.die })
			if who == "docker" {
				name, call, dieToCall = "Docker `restart: unless-stopped`", "— (inside the engine)", "—"
			}
			fmt.Fprintf(&s, "| %s%s | %s | %s | %s | %s | %s |\n", name, failed(r.reactFail[who]),
				pick(func(x reaction) time.Duration { return x.die }), call, dieToCall,
				pick(func(x reaction) time.Duration { return x.running }), pick(func(x reaction) time.Duration { return x.healthy }))
		}
		s.WriteString("\nTimes from the kill; events at the engine's timestamps, rollcall's restart call as it crossed a counting proxy on its socket.\n\n")
	}

	if len(r.idle) > 0 || len(r.idleErr) > 0 {
		fmt.Fprintf(&s, "| idle, 3 healthy replicas probed every %s | engine calls / min | calls | events / min | exec_* events | CPU | RSS |\n|---|---|---|---|---|---|---|\n", o.interval)
		for _, what := range []string{"console", "agent"} {
			name := map[string]string{"console": "console (step mode, in tmux 120×40)", "agent": "`agent`"}[what]
			if e, bad := r.idleErr[what]; bad {
				fmt.Fprintf(&s, "| %s | failed: %s | | | | | |\n", name, strings.ReplaceAll(e, "|", "/"))
				continue
			}
			x, ok := r.idle[what]
			if !ok {
				continue
			}
			fmt.Fprintf(&s, "| %s | %.1f | %s | %.1f | %d | %.3f %% (%s in %s) | %.1f MiB |\n", name,
				x.perMinute(x.calls.nCalls), tally(x.calls.calls), x.perMinute(x.calls.nEvent), x.execEvents(),
				100*x.cpu.Seconds()/x.window.Seconds(), x.cpu, x.window.Round(time.Second), float64(x.rssKB)/1024)
		}
		fmt.Fprintf(&s, "\nCounted through a unix-socket proxy between rollcall and the engine, over %s after %s of warm-up; "+
			"the event stream opened before the window is not counted as a call. CPU is utime+stime from /proc/<pid>/stat (10 ms ticks).\n\n",
			o.idleWindow, o.idleWarmUp)
	}

	r.fleetIdleMarkdown(&s, o)
	r.pullMarkdown(&s)
	r.pullFleetMarkdown(&s)
	r.cohortsMarkdown(&s)

	fmt.Fprintf(&s, "Reproduce, from the repository root, as root on the Docker host:\n\n    %s\n", o.reproduceAs)
	return s.String()
}

// perRound is each round's ratio of pair's two tools, "—" for a round
// where either failed.
func perRound(rounds []map[string]time.Duration, pair [2]string) string {
	q := make([]string, len(rounds))
	for i, round := range rounds {
		a, okA := round[pair[0]]
		b, okB := round[pair[1]]
		q[i] = "—"
		if okA && okB && b > 0 {
			q[i] = fmt.Sprintf("%.2f", a.Seconds()/b.Seconds())
		}
	}
	return strings.Join(q, ", ")
}

func failed(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" · %d failed", n)
}

// durations is "median (min–max)", each formatted by f.
func durations(ds []time.Duration, f func(time.Duration) string) string {
	if len(ds) == 0 {
		return "—"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 1 {
		return f(s[0])
	}
	return fmt.Sprintf("%s (%s–%s)", f(median(s)), strings.TrimSuffix(strings.TrimSuffix(f(s[0]), " s"), " ms"), f(s[len(s)-1]))
}

func floats(q []float64) string {
	if len(q) == 0 {
		return "—"
	}
	s := slices.Clone(q)
	slices.Sort(s)
	var m float64
	if n := len(s); n%2 == 1 {
		m = s[n/2]
	} else {
		m = (s[n/2-1] + s[n/2]) / 2
	}
	if len(s) == 1 {
		return fmt.Sprintf("%.2f", m)
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", m, s[0], s[len(s)-1])
}

func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
func millis(d time.Duration) string  { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// tally is "3× GET /containers/json, ..." by count, then name.
func tally(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int { return m[b] - m[a] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× `%s`", m[k], k)
	}
	return strings.Join(parts, ", ")
}
