package session

import (
	"strconv"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
)

// wentDown notes that a stop-first step takes its slot down at at.
func (l *loop) wentDown(s reconcile.Step, at time.Time) {
	if l.downSince == nil {
		l.downSince = map[string]time.Time{}
	}
	key := s.Workload + "/" + strconv.Itoa(s.Slot)
	if _, down := l.downSince[key]; !down {
		l.downSince[key] = at
	}
}

// backUp ends the downtime of each slot the plan finds ready again, and
// keeps how long it lasted as its workload's last downtime, which the next
// plan's stop-first steps say (Observed.Downtime). It reports whether one
// ended.
func (l *loop) backUp() bool {
	if len(l.downSince) == 0 {
		return false
	}
	ended := false
	now := l.wallNow()
	for _, st := range l.plan.Slots {
		key := st.Workload + "/" + strconv.Itoa(st.Slot)
		since, down := l.downSince[key]
		if !down || !st.Ready {
			continue
		}
		if l.lastDown == nil {
			l.lastDown = map[string]time.Duration{}
		}
		l.lastDown[st.Workload] = max(now.Sub(since).Round(time.Millisecond), time.Millisecond)
		delete(l.downSince, key)
		ended = true
	}
	return ended
}
