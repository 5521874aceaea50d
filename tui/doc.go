// Package tui is rollcall's console (DESIGN §8): a Bubble Tea program that
// shows the desired slots beside the actual containers, the live plan with
// the status of every step, a detail pane (spec diff, the health output and
// logs of a failure, a log tail that follows) and the engine's events, and
// lets the operator approve the roll step by step, let it run, or watch.
//
// How it is built (STYLE.md, "The console"):
//
//   - One tea.Model (Model). The panes are plain structs it draws
//     (Render(frame, width, height)); one theme.Styles and one KeyMap.
//   - It talks to the engine only through engine/session: it reads
//     session.Snapshot values and sends session.Intent values. Update does
//     no I/O: the snapshot wait, every intent and the log tail are tea.Cmds
//     that report back with messages; the snapshot wait is re-armed after
//     each snapshot.
//   - Every string from the engine or the desired state (names, images,
//     reasons, errors, health output, log lines, event attributes) is
//     stripped of terminal control sequences and control characters once,
//     when a snapshot becomes a board (newBoard) or a log line arrives.
//     The panes draw only from the board.
//   - Watch mode disables the mutating keys, so help does not offer them;
//     the session's read-only client is the second lock behind them.
//   - Destructive questions (r roll back, t retry a held spec, R recreate,
//     E emergency on, and the session's downtime and blast-radius
//     confirmations) open a dialog whose answer starts on No. Turning
//     emergency mode off asks nothing.
//     A question declined or dismissed stays in the header; c asks it again.
//   - Cost: nothing renders and nothing ticks while nothing changes. The
//     spinner ticks only while a step runs; the renderer coalesces frames.
//   - Sizes: usable at 80×24; from 120 columns the slots pane spans the
//     width and the plan sits beside the detail and events panes; below
//     80×24 a "terminal too small" screen.
//
// It imports engine/session and the plain data types of engine/docker and
// engine/reconcile; never the docker client, the moby packages or cmd.
package tui
