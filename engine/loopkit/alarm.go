package loopkit

import "time"

// Alarm is a one-shot timer whose channel is nil while it is not armed,
// so a select on C waits forever. The zero Alarm is not armed. After a
// receive on C the loop calls Fired.
type Alarm struct {
	t *time.Timer
	c <-chan time.Time
}

// Set arms the alarm to fire after d, replacing any earlier setting.
func (a *Alarm) Set(d time.Duration) {
	a.Stop()
	a.t = time.NewTimer(d)
	a.c = a.t.C
}

// Stop disarms the alarm.
func (a *Alarm) Stop() {
	if a.t != nil {
		a.t.Stop()
	}
	a.t, a.c = nil, nil
}

// Fired says the alarm's firing was received: it is no longer armed.
func (a *Alarm) Fired() { a.t, a.c = nil, nil }

// Armed reports whether the alarm is set and has not fired (as received).
func (a *Alarm) Armed() bool { return a.c != nil }

// C is the channel the alarm fires on; nil while not armed.
func (a *Alarm) C() <-chan time.Time { return a.c }
