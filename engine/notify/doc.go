// Package notify posts a rollout's events as JSON to the webhooks of the
// desired state's notify: (DESIGN §12).
//
// The rules it keeps:
//
//   - Never blocking: Send queues the event for each URL and returns at
//     once. Each URL has its own queue (Options.Queue, 64 events) and its
//     own goroutine, so a URL that hangs holds up only its own events.
//     When a queue is full its oldest event is dropped, and reported.
//   - Bounded: each post, from the dial to the end of the answer, is cut
//     at Options.Timeout (5s). An event is posted at most Options.Tries
//     (5) times, waiting Options.Backoff (1s) after the first failed try
//     and twice as long after each next one (1s, 2s, 4s, 8s). No answer,
//     408, 429 and 5xx are tried again; any other answer but 2xx (a 4xx,
//     a redirect, which is never followed) fails at once.
//   - Reported: every event's outcome at every URL (delivered, failed,
//     dropped) goes to Options.Report, so the caller can journal what
//     failed. No report, error or name holds a URL's path or query (often
//     the webhook's secret: Target.Name shows "https://host/…") or a
//     token.
//   - Close sends what is queued until its context ends, then cuts what is
//     in flight and reports the rest dropped.
//
// Each post is `POST URL` with Content-Type application/json, User-Agent
// rollcall-notify/1, and with a token_file "Authorization: Bearer TOKEN",
// the file read again at each post. The body is one Event; its schema
// (schema_version 1) has every key, always:
//
//	schema_version  1; it grows only when a field changes meaning or goes away
//	kind            rollout_started | rollout_ended | step_failed |
//	                health_failed | rollback | hold | pin | engine_lost |
//	                engine_back | canary_step | abort | test; fleet_wave
//	                and fleet_host_failed are held for the part of §11
//	                that will post them
//	time            RFC 3339 time it happened, with nanoseconds
//	text            one line for humans (Slack's and Mattermost's "text")
//	rollout         the rollout's ID: the fleet's, else the session's own
//	                ("<UTC start>-<8 hex of the desired state>"); "" outside one
//	host            the host's name in hosts: ("" for a file without hosts)
//	engine          the engine's identity (docker info ID), else its endpoint
//	prefix          the label prefix
//	user            who runs the session
//	workload        the workload it is about ("" for none or several)
//	slot            the slot; -1 for none
//	container       the container it is about
//	action          step_failed: the step's action (start, stop, roll,
//	                restart, update); health_failed: the failure_action
//	from_image      the image the container ran (rollback, step_failed of a roll)
//	to_image        the desired image
//	spec            hold, rollback, pin: the spec hash put on hold
//	operator        the operator's own act (an asked-for rollback)
//	outcome         rollout_ended: converged | held | failed | superseded | stopped
//	reason          why, as the plan or the session says it
//	error           the engine's error, or the failure
//	duration_ms     rollout_ended: how long the rollout took; step_failed: the step
//	canary          canary_step (reason passed | held), abort (a failed canary
//	                step): {step, of, share, spec, verdict, check, measured,
//	                limit, window_ms, canary and stable: {requests, errors,
//	                error_rate, p50_ms, p95_ms}, max_error_rate,
//	                max_error_rate_increase, max_p95_ratio (-1: not checked),
//	                min_requests}; null for every other kind
//	counts          {steps, failed, ready, total, held}: rollout_started:
//	                steps planned; rollout_ended: steps run and failed;
//	                slots ready of total, and held off by a hold
//	workloads       rollout_started, rollout_ended: [{workload, from_images,
//	                to_image, version, replicas}], the workloads it changes
//	missed          events this URL did not get (dropped or failed) between
//	                the last one it got and this one
//
// What a session posts, and when, is engine/session's (notify.go).
//
// It imports engine/spec (for the webhooks of a desired state) and
// engine/journal (a canary step's figures, as the journal has them); never
// session, tui or theme.
package notify
