package session

import (
	"context"
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
