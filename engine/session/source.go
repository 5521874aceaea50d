package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/rollcall/rollcall/engine/spec"
)

// Source is where the desired state comes from: a rollcall.yaml file
// (FileSource), a compose file (ComposeSource) or a control-plane URL
// (URLSource), behind the same interface.
type Source interface {
	// Name says where the desired state comes from, for the header.
	Name() string
	// Load reads and validates the desired state as it is now.
	Load(ctx context.Context) (*spec.Desired, error)
	// Changes signals, after the source settles, that Load may give a new
	// state. It is called once, before the first Load; its signals may be
	// merged, never lost.
	Changes(ctx context.Context) <-chan struct{}
}

// Debounce of FileSource: a change is signalled once the file has been
// quiet this long, so an editor's write in several parts is loaded once.
const fileDebounce = 100 * time.Millisecond

// FileSource is a desired-state file (rollcall.yaml), watched with
// fsnotify. It watches the file's directory, not the file, so an editor
// that saves by writing a new file and renaming it over the old one is
// seen too. Where the directory cannot be watched, it polls once a second.
func FileSource(path string) Source {
	return &fileSource{path: path, debounce: fileDebounce, parse: spec.Parse}
}

// ComposeSource is a compose file (spec.ParseCompose), watched as
// FileSource watches a file, and its project's .env beside it. environ is
// the environment its variables are interpolated from (os.Environ()).
// Files it refers to (env_file, extends, include) are read at each load
// but not watched.
func ComposeSource(path string, environ []string) Source {
	environ = slices.Clone(environ)
	return &fileSource{path: path, debounce: fileDebounce, siblings: []string{".env"},
		parse: func(name string, data []byte) (*spec.Desired, error) { return spec.ParseCompose(name, data, environ) }}
}

type fileSource struct {
	path     string
	debounce time.Duration
	parse    func(name string, data []byte) (*spec.Desired, error)
	siblings []string // more files of the same directory whose changes count
}

// watches reports whether a change of the file called base (in the
// watched directory) is a change of the desired state.
func (f *fileSource) watches(base string) bool {
	return base == filepath.Base(f.path) || slices.Contains(f.siblings, base)
}

func (f *fileSource) Name() string { return f.path }

// Load parses the file. A file that changes while being read is read again
// (a few times at most), so a half-written file is not taken for a whole one.
// Anything but a regular file (a FIFO, a device) and a file over
// spec.MaxDocumentBytes is an error, never a blocked or unbounded read.
func (f *fileSource) Load(ctx context.Context) (*spec.Desired, error) {
	var data []byte
	for attempt := 0; ; attempt++ {
		before, err := os.Stat(f.path)
		if err != nil {
			return nil, fmt.Errorf("read desired state: %w", err)
		}
		data, err = spec.ReadFile(f.path) // a regular file, at most spec.MaxDocumentBytes
		if err != nil {
			return nil, fmt.Errorf("read desired state: %w", err)
		}
		after, err := os.Stat(f.path)
		if err != nil {
			return nil, fmt.Errorf("read desired state: %w", err)
		}
		if attempt >= 3 || (before.Size() == after.Size() && before.ModTime().Equal(after.ModTime()) && int64(len(data)) == after.Size()) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(f.debounce / 4):
		}
	}
	return f.parse(f.path, data)
}

func (f *fileSource) Changes(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	dir := filepath.Dir(f.path)
	w, err := fsnotify.NewWatcher()
	if err == nil {
		if err = w.Add(dir); err != nil {
			w.Close()
		}
	}
	if err != nil {
		go f.poll(ctx, out)
		return out
	}
	go func() {
		defer w.Close()
		var settle alarm
		defer settle.stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if f.watches(filepath.Base(ev.Name)) && ev.Op&^fsnotify.Chmod != 0 {
					settle.set(f.debounce)
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				// An overflow may have lost an event: look again.
				settle.set(f.debounce)
			case <-settle.c:
				settle.fired()
				signal(out)
			}
		}
	}()
	return out
}

// poll is the fallback watch: it signals when the size or modification
// time of the file (or of a sibling) changes.
func (f *fileSource) poll(ctx context.Context, out chan struct{}) {
	stamp := func() string {
		var b strings.Builder
		for _, path := range append([]string{f.path}, f.siblingPaths()...) {
			if st, err := os.Stat(path); err != nil {
				b.WriteString("missing;")
			} else {
				fmt.Fprint(&b, st.Size(), st.ModTime().UnixNano(), ";")
			}
		}
		return b.String()
	}
	last := stamp()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s := stamp(); s != last {
				last = s
				signal(out)
			}
		}
	}
}

func (f *fileSource) siblingPaths() []string {
	var out []string
	for _, s := range f.siblings {
		out = append(out, filepath.Join(filepath.Dir(f.path), s))
	}
	return out
}

// signal sends on a buffered-1 channel without blocking: a pending signal
// already says the same.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

type loadResult struct {
	desired *spec.Desired
	err     error
}

// startLoad loads the source beside the loop; a change during a load
// loads again after it.
func (l *loop) startLoad() {
	if l.loading {
		l.reload = true
		return
	}
	l.loading = true
	src := l.opts.Source
	goReport(l, l.loaded, func() loadResult {
		d, err := src.Load(l.ctx)
		return loadResult{desired: d, err: err}
	})
}

// onLoaded takes a loaded desired state, or keeps the last good one and
// shows the error.
func (l *loop) onLoaded(r loadResult) {
	l.loading = false
	if l.reload {
		l.reload = false
		defer l.startLoad()
	}
	if r.err != nil {
		if l.ctx.Err() == nil {
			l.sourceErr = r.err
		}
		return
	}
	d := r.desired
	if l.opts.Prefix != "" && d.Prefix != l.opts.Prefix {
		cp := *d
		cp.Prefix = l.opts.Prefix
		d = &cp
	}
	switch {
	case l.prefix == "":
		l.prefix = d.Prefix
	case d.Prefix != l.prefix && l.desired == nil && l.opts.Prefix == "":
		// The first good desired state after a broken start: its prefix
		// replaces the default that stood in.
		l.prefix = d.Prefix
		l.subscribe()
		if l.lock != nil && l.opts.LockPath == "" {
			l.releaseLock()
			l.takeLock()
		}
	case d.Prefix != l.prefix:
		l.sourceErr = fmt.Errorf("%s: prefix %q differs from the running session's %q: restart rollcall to change it; the last good desired state stays", d.Source, d.Prefix, l.prefix)
		return
	}
	l.sourceErr = nil
	fp := fingerprint(d)
	if l.desired != nil && fp == l.desiredFP {
		l.desired = d // same workloads; its warnings may read differently
		return
	}
	l.desired, l.desiredFP = d, fp
	if l.opts.Recreate && !l.recreated {
		l.recreated = true
		at := l.now()
		for name := range d.Workloads {
			l.recreate[name] = at
		}
	}
	l.epoch++
	l.blastCheck = true
	if l.confirm != nil && l.confirm.Kind == ConfirmBlast {
		l.confirm = nil // weighed again against the new plan
	}
	if l.resync != nil { // after start: the first relist is started by subscribe
		l.requestFetch()
	}
}

// fingerprint tells desired states apart; equal ones need no new plan.
func fingerprint(d *spec.Desired) string {
	b, err := json.Marshal(struct {
		Prefix    string
		Workloads map[string]*spec.Workload
	}{d.Prefix, d.Workloads})
	if err != nil {
		panic("session: fingerprint: " + err.Error()) // plain data always marshals
	}
	return string(b)
}
