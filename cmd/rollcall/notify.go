package main

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/notify"
)

func newNotifyTestCmd(e env, g *globals) *cobra.Command {
	var file desiredFlags
	c := &cobra.Command{
		Use:   "notify-test [-f FILE]",
		Short: "Post a sample event to every webhook of notify: and show each answer",
		Long: fmt.Sprintf(`Post one sample event (kind "test", in the JSON a session posts: see the
README's Notifications) to every webhook of the desired state's notify:,
all at once, one try each, bounded at %s, and print each answer: the HTTP
status, or why there was none. A URL is shown by its scheme and host only,
since its path is often its secret; a token_file's token is sent, never
shown.

Exit status: 0 every webhook answered 2xx; 1 one did not, the desired
state cannot be read, or it names no webhook.`, notify.DefaultTimeout),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := loadDesired(cmd.Context(), e, file, g.prefix)
			if err != nil {
				return err
			}
			targets := notify.TargetsOf(d)
			if len(targets) == 0 {
				return withHint(fmt.Errorf("%s names no webhook", termSafe(d.Source)), `add notify: ["https://hooks.example/rollcall"] to it`)
			}
			sample := notify.Event{Kind: notify.KindTest, Time: e.now(), User: journal.CurrentUser(), Prefix: d.Prefix,
				Slot: -1, Reason: "a sample from rollcall notify-test"}
			if host, err := os.Hostname(); err == nil {
				sample.Text = "rollcall notify-test: a sample event from " + sample.User + " on " + host
			}
			reports := make([]notify.Report, len(targets))
			took := make([]time.Duration, len(targets))
			var wg sync.WaitGroup
			for i, t := range targets {
				wg.Add(1)
				go func() {
					defer wg.Done()
					began := time.Now()
					reports[i] = notify.Post(cmd.Context(), t, sample, notify.Options{})
					took[i] = time.Since(began)
				}()
			}
			wg.Wait()
			failed := 0
			for i, r := range reports {
				// Several webhooks on one host show the same name (the path
				// is left out): the entry's place in notify: tells them apart.
				where := fmt.Sprintf("notify[%d]", i)
				if i < len(d.Notify) && d.Notify[i].Line > 0 {
					where += fmt.Sprintf(" (line %d)", d.Notify[i].Line)
				}
				if r.Result == notify.Delivered {
					fmt.Fprintf(e.stdout, "%s  %s  %d %s (%s)\n", where, termSafe(r.Target), r.Status, http.StatusText(r.Status), took[i].Round(time.Millisecond))
					continue
				}
				failed++
				fmt.Fprintf(e.stdout, "%s  %s  failed: %s\n", where, termSafe(r.Target), termSafe(oneLine(r.Err.Error())))
			}
			if failed > 0 {
				return &exitError{code: exitFailed, err: fmt.Errorf("%d of %d webhooks did not take the sample", failed, len(reports))}
			}
			return nil
		},
	}
	fileFlag(c, &file)
	return c
}
