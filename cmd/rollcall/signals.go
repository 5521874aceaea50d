package main

import (
	"context"
	"os"
	"os/signal"
)

// notifySignals is how rollcall answers SIGINT and SIGTERM (DESIGN §7,
// issue 10): the first ends the returned context, so a session carries the
// step in flight to its end and winds down; the second closes abandon, so
// the session cuts short what that step only waits for, its pre_stop and
// drain (Session.Abandon), and the journal marks it interrupted. An engine
// call the step has made is carried to its end all the same, bounded (a
// stop and its remove, a create and its start: reconcile.RunWith), so no
// signal leaves a container Exited or Created (issue 18). The third gets
// the default handler back and kills the process; what the engine then
// finishes (an Exited old container) the next run's plan removes. stop
// undoes it all.
func notifySignals(parent context.Context, sig ...os.Signal) (ctx context.Context, abandon <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	ab := make(chan struct{})
	got := make(chan os.Signal, 2)
	done := make(chan struct{})
	signal.Notify(got, sig...)
	go func() {
		for n := 1; n <= 2; n++ {
			select {
			case <-got:
			case <-done:
				return
			}
			if n == 1 {
				cancel()
				continue
			}
			close(ab)
			signal.Reset(sig...) // the third one kills
		}
	}()
	return ctx, ab, func() {
		signal.Stop(got)
		close(done)
		cancel()
	}
}

// abandonOn calls s.Abandon once abandon closes (a second signal), until
// the returned function is called. A nil abandon never closes. s is a
// session, or a fleet (which abandons every host's step in flight).
func abandonOn(abandon <-chan struct{}, s interface{ Abandon() }) (stop func()) {
	if abandon == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-abandon:
			s.Abandon()
		case <-done:
		}
	}()
	return func() { close(done) }
}
