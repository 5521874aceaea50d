package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// A trace is where the time of one rollcall trial went: its engine calls
// (through the proxy), the engine's events and rollcall's own log lines,
// on one clock, printed with -trace. It is the evidence behind a missed
// target, not part of the table.
type trace struct {
	mu    sync.Mutex
	marks []mark
}

type mark struct {
	at   time.Time
	what string
}

func (t *trace) add(at time.Time, format string, a ...any) {
	t.mu.Lock()
	t.marks = append(t.marks, mark{at, fmt.Sprintf(format, a...)})
	t.mu.Unlock()
}

// watchEvents records every container event carrying label until ctx ends.
func (t *trace) watchEvents(ctx context.Context, b *bench, label string) {
	f := client.Filters{}
	f.Add("type", "container")
	f.Add("label", label)
	ev := b.cli.Events(ctx, client.EventsListOptions{Filters: f})
	go func() {
		for {
			select {
			case m := <-ev.Messages:
				if strings.HasPrefix(string(m.Action), "exec_") {
					continue
				}
				t.add(time.Unix(0, m.TimeNano), "event %s %s %s", m.Action, short(m.Actor.ID), m.Actor.Attributes["name"])
			case <-ev.Err:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
}

// addCalls records the calls that crossed px from since on.
func (t *trace) addCalls(px *proxy, since time.Time) {
	for _, c := range px.callsSince(since) {
		t.add(c.at, "call  %s", shortPath(c.path))
	}
}

// addLog records rollcall's JSON log lines about steps, at their own time.
func (t *trace) addLog(lines []string) {
	for _, line := range lines {
		var l struct {
			Time   time.Time `json:"time"`
			Msg    string    `json:"msg"`
			Action string    `json:"action"`
			Target string    `json:"target"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || !strings.HasPrefix(l.Msg, "step") {
			continue
		}
		t.add(l.Time, "log   %s %s %s", l.Msg, l.Action, l.Target)
	}
}

// print logs the marks from zero on, as offsets from it.
func (t *trace) print(b *bench, title string, zero time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	slices.SortStableFunc(t.marks, func(x, y mark) int { return x.at.Compare(y.at) })
	var s strings.Builder
	for _, m := range t.marks {
		if m.at.Before(zero.Add(-time.Second)) {
			continue
		}
		fmt.Fprintf(&s, "\n    %+7.1f ms  %s", float64(m.at.Sub(zero).Microseconds())/1000, m.what)
	}
	b.log("trace of %s (ms from its start):%s", title, s.String())
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// shortPath drops the API version from a request line, shortens its IDs
// and unescapes its query.
func shortPath(p string) string {
	method, uri, _ := strings.Cut(p, " ")
	uri = apiVersion.ReplaceAllString(uri, "/")
	if u, err := url.QueryUnescape(uri); err == nil {
		uri = u
	}
	for _, f := range strings.FieldsFunc(uri, func(r rune) bool { return r == '/' || r == '?' }) {
		if len(f) == 64 {
			uri = strings.Replace(uri, f, f[:12], 1)
		}
	}
	return method + " " + uri
}

// addJournal records the steps of rollcall's journal, as they started and ended.
func (t *trace) addJournal(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		var e struct {
			Time       time.Time `json:"time"`
			Host       string    `json:"host"`
			Action     string    `json:"action"`
			Slot       int       `json:"slot"`
			Container  string    `json:"container"`
			Result     string    `json:"result"`
			DurationMS int64     `json:"duration_ms"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
			continue
		}
		if e.Host != "" {
			e.Action = e.Host + " " + e.Action
		}
		if e.Result == "started" {
			t.add(e.Time, "step  %s slot %d %s started", e.Action, e.Slot, e.Container)
		} else {
			t.add(e.Time.Add(time.Duration(e.DurationMS)*time.Millisecond), "step  %s slot %d %s %s (%d ms)", e.Action, e.Slot, e.Container, e.Result, e.DurationMS)
		}
	}
}
