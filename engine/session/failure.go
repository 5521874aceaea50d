package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// How much of a failed container the pause shows.
const (
	pauseLogLines   = 5
	pauseDetailWait = 5 * time.Second
	maxHealthOutput = 500
)

// checkFailures records each new container that missed its health
// deadline as a fact (once while it stays failed), and pauses an acting
// session on a failure with failure_action pause (DESIGN §6). Each failure pauses once: after Resume the operator
// has seen it. Rollback and continue need nothing here: the plan already
// holds the rollback's stop step, and a continued slot no longer blocks
// the others.
func (l *loop) checkFailures() {
	current := map[string]bool{}
	failing := map[string]bool{}
	for _, f := range l.plan.Failures() {
		id := f.Workload + "/" + f.Container
		failing[id] = true
		if !l.failing[id] { // a fact once while it stays failed
			l.fact(Fact{Kind: FactHealthFailed, Failure: &Failure{Workload: f.Workload, Slot: f.Slot, Container: f.Container, Reason: f.Reason, Action: f.Action}})
		}
	}
	l.failing = failing
	for _, f := range l.plan.Failures() {
		if f.Action != spec.FailurePause {
			continue
		}
		id := f.Workload + "/" + f.Container
		current[id] = true
		if l.acked[id] || l.pause != nil || !l.mode.Acting() {
			continue
		}
		l.acked[id] = true
		l.pause = &PauseInfo{
			Reason:    fmt.Sprintf("%s/%d %s: %s (failure_action pause)", f.Workload, f.Slot, f.Container, f.Reason),
			Workload:  f.Workload,
			Container: f.Container,
			Since:     l.engineNow(),
		}
		p := *l.pause
		l.fact(Fact{Kind: FactPaused, Pause: &p, Failure: &Failure{Workload: f.Workload, Slot: f.Slot, Container: f.Container, Reason: f.Reason, Action: f.Action}})
		l.endRollout(ApprovalEnd{Cause: ApprovalPaused})
		l.fetchDetail(f.Container)
	}
	for id := range l.acked {
		if !current[id] {
			delete(l.acked, id)
		}
	}
}

type pauseDetail struct {
	container string
	health    string
	logs      []string
	err       error
}

// fetchDetail gets a failed container's last health output and log lines
// beside the loop.
func (l *loop) fetchDetail(container string) {
	c := l.raw
	goReport(l, l.details, func() pauseDetail {
		ctx, cancel := context.WithTimeout(l.ctx, pauseDetailWait)
		defer cancel()
		d := pauseDetail{container: container}
		info, err := c.Inspect(ctx, container)
		if err != nil {
			d.err = err
			return d
		}
		if n := len(info.HealthLog); n > 0 {
			last := info.HealthLog[n-1]
			out := strings.TrimSpace(last.Output)
			if len(out) > maxHealthOutput {
				out = out[:maxHealthOutput] + "…"
			}
			d.health = fmt.Sprintf("exit %d: %s", last.ExitCode, out)
		}
		lines, err := c.Logs(ctx, container, docker.LogOptions{Tail: pauseLogLines})
		if err != nil {
			d.err = err
			return d
		}
		for line := range lines {
			d.logs = append(d.logs, line.Stream+": "+line.Text)
		}
		return d
	})
}

// onDetail takes in what fetchDetail got, for the pause it is about.
func (g *guards) onDetail(d pauseDetail) {
	p := g.pause
	if p == nil || p.Container != d.container {
		return
	}
	p.Health, p.Logs = d.health, d.logs
	if d.err != nil {
		p.DetailErr = d.err.Error()
	}
}
