package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/fsnotify/fsnotify"

	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/spec"
)

// Debounce of File and Compose: a change is signalled once the file has been
// quiet this long, so an editor's write in several parts is loaded once.
const fileDebounce = 100 * time.Millisecond

// filePoll is how often File and Compose look at the file beside its watch, so
// a change whose event was missed (an overflow, a filesystem without
// events, a watch that could not be placed) is still followed.
const filePoll = 2 * time.Second

// File is a desired-state file (rollcall.yaml), followed however it
// is replaced: written in place, renamed over (an editor's save), or
// reached through symbolic links whose targets change anywhere along the
// chain (a Kubernetes ConfigMap volume renames a new ..data link over the
// old one; ln -sfn replaces the link itself). It watches, with fsnotify,
// every directory where resolving the path looks up a link or the file,
// resolves the path again after each change there and moves its watches
// to where it now leads. Beside the watch it polls every 2 s, comparing
// where the path leads and that file's identity, size and modification
// time, so a missed event is caught late rather than never.
//
// A read that fails for a reason that passes by itself (no file
// descriptor left, EMFILE; no memory; an I/O error) is tried again at each
// poll until it succeeds: the file's stamp has not changed, so without it
// the change the failed read missed would never be loaded.
func File(path string) Source {
	return &fileSource{path: path, debounce: fileDebounce, pollEvery: filePoll, parse: load.Parse, read: spec.ReadFile}
}

// Compose is a compose file (load.ParseCompose), followed as
// File follows a file, and its project's .env beside it. environ is
// the environment its variables are interpolated from (os.Environ()).
// Files it refers to (env_file, extends, include) are read at each load
// but not watched.
func Compose(path string, environ []string) Source {
	environ = slices.Clone(environ)
	return &fileSource{path: path, debounce: fileDebounce, pollEvery: filePoll, siblings: []string{".env"}, read: spec.ReadFile,
		parse: func(name string, data []byte) (*spec.Desired, error) { return load.ParseCompose(name, data, environ) }}
}

type fileSource struct {
	path      string
	debounce  time.Duration
	parse     func(name string, data []byte) (*spec.Desired, error)
	siblings  []string      // more files of the same directory whose changes count
	pollEvery time.Duration // the content poll beside the watch
	noWatch   bool          // tests: the poll alone, as if every event were missed
	read      func(path string) ([]byte, error)
	// retry says the last Load failed to read the file for a reason that
	// passes by itself (transient): the poll signals again until a Load
	// reads it.
	retry atomic.Bool
}

func (f *fileSource) Name() string { return f.path }

// Load parses the file. A file that changes while being read is read again
// (a few times at most), so a half-written file is not taken for a whole one.
// Anything but a regular file (a FIFO, a device) and a file over
// spec.MaxDocumentBytes is an error, never a blocked or unbounded read.
func (f *fileSource) Load(ctx context.Context) (*spec.Desired, error) {
	data, err := f.readSettled(ctx)
	f.retry.Store(err != nil && transient(err))
	if err != nil {
		if errors.Is(err, ctx.Err()) {
			return nil, err
		}
		return nil, fmt.Errorf("read desired state: %w", err)
	}
	return f.parse(f.path, data)
}

// readSettled reads the file, again (a few times at most) while it changes
// under the read.
func (f *fileSource) readSettled(ctx context.Context) ([]byte, error) {
	var data []byte
	for attempt := 0; ; attempt++ {
		before, err := os.Stat(f.path)
		if err != nil {
			return nil, err
		}
		data, err = f.read(f.path) // a regular file, at most spec.MaxDocumentBytes
		if err != nil {
			return nil, err
		}
		after, err := os.Stat(f.path)
		if err != nil {
			return nil, err
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
	return data, nil
}

// transient reports whether a failed read may succeed if tried again
// with nothing changed on disk: the process or the system out of file
// descriptors or memory, an interrupted call, an I/O error. A missing
// file, a permission, a FIFO or an oversized file are not: their fix
// changes the file's stamp, which the poll sees.
func transient(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.ENOBUFS,
		syscall.EAGAIN, syscall.EINTR, syscall.EIO, syscall.EBUSY, syscall.ETIMEDOUT, syscall.ESTALE} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

func (f *fileSource) Changes(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	fw := &fileWatch{src: f}
	if !f.noWatch {
		if w, err := fsnotify.NewWatcher(); err == nil {
			fw.w, fw.watched = w, map[string]bool{}
		}
	}
	fw.rearm() // before returning: a change from now on is seen
	fw.stamp = f.stamp()
	go fw.run(ctx, out)
	return out
}

// fileWatch is the watch and poll of one fileSource, owned by its goroutine.
type fileWatch struct {
	src     *fileSource
	w       *fsnotify.Watcher // nil: the poll alone
	watched map[string]bool   // directories under watch
	dirs    map[string]bool   // directories the lookups are in, watched or not
	lookups map[lookup]bool   // what resolving the paths looked up, as of the last rearm
	stamp   string            // of the last signal (or the start)
}

func (fw *fileWatch) run(ctx context.Context, out chan struct{}) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if fw.w != nil {
		defer fw.w.Close()
		events, errs = fw.w.Events, fw.w.Errors
	}
	// settle fires once the events have been quiet for the debounce; a nil
	// channel while not armed, so the select waits on it forever.
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	var settled <-chan time.Time
	arm := func() { settle.Reset(fw.src.debounce); settled = settle.C }
	poll := time.NewTicker(fw.src.pollEvery)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil // the poll goes on alone
				continue
			}
			if ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 && fw.watched[filepath.Clean(ev.Name)] {
				// A watched directory gone: its watch went with it, and
				// the next rearm places it again if the path still leads there.
				delete(fw.watched, filepath.Clean(ev.Name))
			}
			if ev.Op&^fsnotify.Chmod != 0 && fw.relevant(ev.Name) {
				arm()
			}
		case _, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// An overflow may have lost an event: look again.
			arm()
		case <-settled:
			settled = nil
			fw.rearm()
			fw.stamp = fw.src.stamp()
			loopkit.Signal(out)
		case <-poll.C:
			fw.rearm() // also retries a watch that could not be placed
			if s := fw.src.stamp(); (s != fw.stamp || fw.src.retry.Load()) && settled == nil {
				fw.stamp = s
				loopkit.Signal(out)
			}
		}
	}
}

// relevant reports whether an event on name may change what the paths
// read: a name looked up in resolving them, or a watched directory itself
// (removed or moved).
func (fw *fileWatch) relevant(name string) bool {
	name = filepath.Clean(name)
	return fw.lookups[lookup{dir: filepath.Dir(name), name: filepath.Base(name)}] || fw.dirs[name]
}

// rearm resolves the paths again and watches the directories they now
// look names up in, and no others. A directory that cannot be watched is
// left to the poll, and tried again at the next rearm.
func (fw *fileWatch) rearm() {
	fw.lookups, fw.dirs = map[lookup]bool{}, map[string]bool{}
	for _, p := range fw.src.paths() {
		looks, _ := resolve(p)
		for _, l := range looks {
			fw.lookups[l] = true
			fw.dirs[l.dir] = true
		}
	}
	if fw.w == nil {
		return
	}
	want := fw.dirs
	for dir := range fw.watched {
		if !want[dir] {
			_ = fw.w.Remove(dir) // it may be gone already, and its watch with it
			delete(fw.watched, dir)
		}
	}
	for dir := range want {
		if !fw.watched[dir] && fw.w.Add(dir) == nil {
			fw.watched[dir] = true
		}
	}
}

// paths are the files whose changes count: the desired file and its siblings.
func (f *fileSource) paths() []string {
	out := []string{f.path}
	for _, s := range f.siblings {
		out = append(out, filepath.Join(filepath.Dir(f.path), s))
	}
	return out
}

// stamp is what the poll compares: for each path, the file it leads to and
// that file's identity, size and modification time.
func (f *fileSource) stamp() string {
	var b strings.Builder
	for _, path := range f.paths() {
		_, final := resolve(path)
		st, err := os.Stat(path)
		if err != nil {
			fmt.Fprintf(&b, "%q missing;", final)
			continue
		}
		var ino uint64
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			ino = uint64(sys.Ino)
		}
		fmt.Fprintf(&b, "%q %d %d %d %d;", final, ino, st.Size(), st.ModTime().UnixNano(), st.Mode())
	}
	return b.String()
}

// A lookup is one name looked up in one directory (a path without links)
// while resolving a path: a change of that name there may change what the
// path reads.
type lookup struct{ dir, name string }

// maxLinks bounds a chain of symbolic links, as the kernel's ELOOP does.
const maxLinks = 40

// resolve follows path as the kernel does, one name at a time, and returns
// the lookups whose change could change what it reads: every symbolic link
// met on the way, in a directory name too (a ConfigMap's ..data), and the
// last name. It stops at a name that does not resolve (a file not there
// yet, a dangling link, a loop), which is then the last lookup: its coming
// is the change. final is the path without links that path leads to, ""
// when it leads nowhere.
func resolve(path string) (looks []lookup, final string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, ""
	}
	rest := strings.Split(abs, string(filepath.Separator))
	cur, links := string(filepath.Separator), 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		st, err := os.Lstat(next)
		if err != nil {
			return append(looks, lookup{cur, name}), ""
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			if len(rest) == 0 {
				looks = append(looks, lookup{cur, name})
			}
			cur = next
			continue
		}
		looks = append(looks, lookup{cur, name})
		target, err := os.Readlink(next)
		if links++; err != nil || links > maxLinks {
			return looks, ""
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		rest = append(strings.Split(target, string(filepath.Separator)), rest...)
	}
	return looks, cur
}
