package session

import (
	"context"
	"log/slog"
)

// Levels of the session's structured log lines.
const (
	levelInfo  = slog.LevelInfo
	levelWarn  = slog.LevelWarn
	levelError = slog.LevelError
)

// log writes one structured line to Options.Log, if there is one. Every
// line names the engine and the prefix.
func (l *loop) log(level slog.Level, msg string, attrs ...any) {
	if l.opts.Log == nil {
		return
	}
	attrs = append(attrs, "prefix", l.prefix)
	if l.infoOK {
		attrs = append(attrs, "engine", l.engineName())
	}
	l.opts.Log.Log(context.Background(), level, msg, attrs...)
}

// engineName is how the journal and the logs name the engine: its
// identity where it has one, else its endpoint.
func (o *observer) engineName() string {
	if o.info.ID != "" {
		return o.info.ID
	}
	return o.info.Endpoint
}

// setConnected records whether the engine answers, and says so once per
// change.
func (l *loop) setConnected(ok bool, why string) {
	switch {
	case !l.connect(ok, why):
	case ok:
		l.fact(Fact{Kind: FactEngineUp})
	default:
		l.fact(Fact{Kind: FactEngineDown, Why: l.engineErr})
	}
}

// connect records whether the engine answers (why: what it said if not,
// "" to keep the last word), and reports whether that is news: it answers
// again, or it stopped answering (once per outage, and once before it
// ever answered).
func (o *observer) connect(ok bool, why string) (news bool) {
	was := o.connected
	o.connected = ok
	if ok {
		o.engineErr = ""
		news = !was && o.everConnected
		o.everConnected = true
		return news
	}
	if why != "" {
		o.engineErr = why
	}
	if was || !o.everConnected && !o.saidDown {
		o.saidDown = true
		return true
	}
	return false
}
