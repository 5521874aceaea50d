package session

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rollcall/rollcall/engine/docker"
)

// Holds (§5 rule 9) outlive the process: they are kept in a small JSON file
// beside the journal, one per engine and prefix, and dropped once the
// desired spec of their workload changes, or lifted by the operator
// (`rollcall retry WORKLOAD`, the Retry intent).
//
// The file is shared: a session, a `rollcall retry` and the next session
// all change it. Each change is a read, a change and a whole write (write,
// then rename) under a flock on a lock file beside it, so no change of one
// is lost to another. A session writes only what it changed itself (a hold
// added, a hold dropped), and reads the file again beside each relist, so a
// hold lifted by `rollcall retry` while it runs is lifted in it too.
//
// On disk: {"web": [{"hash": "…", "since": "RFC 3339", "by": "alice",
// "reason": "…"}]}. A file of an older rollcall, {"web": ["hash"]}, reads as
// holds without since, by and reason.

// Hold is one spec on hold.
type Hold struct {
	Workload string
	Hash     string
	Since    time.Time // when it was put on hold; zero when the file does not say
	By       string    // who ran the session that put it on hold; "" when not said
	Reason   string    // why: the rollback that put it on hold; "" when not said
}

// holdRecords are holds by workload, then spec hash.
type holdRecords map[string]map[string]Hold

func (r holdRecords) has(w, h string) bool { _, ok := r[w][h]; return ok }

func (r holdRecords) add(h Hold) {
	if r[h.Workload] == nil {
		r[h.Workload] = map[string]Hold{}
	}
	r[h.Workload][h.Hash] = h
}

func (r holdRecords) remove(w, h string) {
	delete(r[w], h)
	if len(r[w]) == 0 {
		delete(r, w)
	}
}

func (r holdRecords) clone() holdRecords {
	out := holdRecords{}
	for _, hs := range r {
		for _, h := range hs {
			out.add(h)
		}
	}
	return out
}

// list is every hold, by workload then since then hash.
func (r holdRecords) list() []Hold {
	var out []Hold
	for _, hs := range r {
		for _, h := range hs {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b Hold) int {
		return cmp.Or(strings.Compare(a.Workload, b.Workload), a.Since.Compare(b.Since), strings.Compare(a.Hash, b.Hash))
	})
	return out
}

// holdsFile is the file of an engine's and prefix's holds in dir.
func holdsFile(dir string, info docker.EngineInfo, prefix string) string {
	return filepath.Join(dir, "holds-"+prefix+"-"+engineKey(info)+".json")
}

// engineKey names an engine in file names: a hash of its identity (the ID
// of `docker info`), so that two endpoints of one engine share their files.
func engineKey(info docker.EngineInfo) string {
	key := info.ID
	if key == "" {
		key = "endpoint:" + info.Endpoint
	}
	if info.Simulated {
		// A simulated engine lives and dies with its process.
		key += "#" + strconv.Itoa(os.Getpid())
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}

// ReadHolds reads the holds of an engine and prefix kept in dir: workload
// -> spec hashes on hold. No file means no holds.
func ReadHolds(dir string, info docker.EngineInfo, prefix string) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	hs, err := ListHolds(dir, info, prefix)
	for _, h := range hs {
		if out[h.Workload] == nil {
			out[h.Workload] = map[string]bool{}
		}
		out[h.Workload][h.Hash] = true
	}
	return out, err
}

// ListHolds reads the holds of an engine and prefix kept in dir, sorted by
// workload, then by when they were put on hold. No file means no holds.
func ListHolds(dir string, info docker.EngineInfo, prefix string) ([]Hold, error) {
	if dir == "" {
		return nil, nil
	}
	recs, err := readHoldsFile(holdsFile(dir, info, prefix))
	return recs.list(), err
}

// LiftHolds lifts every hold of workload kept in dir for an engine and
// prefix, and returns the holds it lifted (none: the workload had none).
// It is the operator's `rollcall retry`; the caller journals it. A session
// running meanwhile lifts them too at its next relist.
func LiftHolds(dir string, info docker.EngineInfo, prefix, workload string) ([]Hold, error) {
	if dir == "" {
		return nil, nil
	}
	var lifted []Hold
	_, err := updateHoldsFile(holdsFile(dir, info, prefix), holdsLockWaitLong, func(cur holdRecords) bool {
		for _, h := range cur[workload] {
			lifted = append(lifted, h)
		}
		delete(cur, workload)
		return len(lifted) > 0
	})
	if err != nil {
		return nil, err
	}
	return holdRecords{workload: indexHolds(lifted)}.list(), nil
}

func indexHolds(hs []Hold) map[string]Hold {
	out := map[string]Hold{}
	for _, h := range hs {
		out[h.Hash] = h
	}
	return out
}

// maxHoldsFile bounds the holds file as read: a few holds take a few
// hundred bytes.
const maxHoldsFile = 1 << 20

// holdOnDisk is one hold as the file keeps it.
type holdOnDisk struct {
	Hash   string     `json:"hash"`
	Since  *time.Time `json:"since,omitempty"`
	By     string     `json:"by,omitempty"`
	Reason string     `json:"reason,omitempty"`
}

// readHoldsFile reads the holds file at path: a regular file, bounded. No
// file means no holds.
func readHoldsFile(path string) (holdRecords, error) {
	out := holdRecords{}
	// O_NONBLOCK: a FIFO put in its place must not hang the open.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("read holds %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return out, fmt.Errorf("read holds %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return out, fmt.Errorf("read holds %s: not a regular file (%s)", path, st.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxHoldsFile+1))
	if err != nil {
		return out, fmt.Errorf("read holds %s: %w", path, err)
	}
	if len(data) > maxHoldsFile {
		return out, fmt.Errorf("read holds %s: larger than %d bytes", path, maxHoldsFile)
	}
	var onDisk map[string][]json.RawMessage
	if err := json.Unmarshal(data, &onDisk); err != nil {
		return out, fmt.Errorf("read holds %s: %w", path, err)
	}
	for w, items := range onDisk {
		for _, raw := range items {
			var d holdOnDisk
			if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
				err = json.Unmarshal(raw, &d.Hash) // an older rollcall's: the hash alone
			} else {
				err = json.Unmarshal(raw, &d)
			}
			if err != nil {
				return holdRecords{}, fmt.Errorf("read holds %s: workload %q: %w", path, w, err)
			}
			if d.Hash == "" {
				return holdRecords{}, fmt.Errorf("read holds %s: workload %q: a hold without a hash", path, w)
			}
			h := Hold{Workload: w, Hash: d.Hash, By: d.By, Reason: d.Reason}
			if d.Since != nil {
				h.Since = *d.Since
			}
			out.add(h)
		}
	}
	return out, nil
}

// writeHoldsFile replaces the holds file whole (write, then rename), so a
// crash leaves the old file or the new one, never half of one. No holds:
// no file.
func writeHoldsFile(path string, recs holdRecords) error {
	onDisk := map[string][]holdOnDisk{}
	for _, h := range recs.list() {
		d := holdOnDisk{Hash: h.Hash, By: h.By, Reason: h.Reason}
		if !h.Since.IsZero() {
			since := h.Since.UTC()
			d.Since = &since
		}
		onDisk[h.Workload] = append(onDisk[h.Workload], d)
	}
	if len(onDisk) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("write holds %s: %w", path, err)
		}
		return nil
	}
	data, err := json.MarshalIndent(onDisk, "", "  ")
	if err != nil {
		return fmt.Errorf("write holds %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".holds-*")
	if err != nil {
		return fmt.Errorf("write holds %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write holds %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write holds %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write holds %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write holds %s: %w", path, err)
	}
	return nil
}

// How long a change of the holds file waits for another's: a session
// waits little (its loop waits meanwhile, and the next change carries what
// this one could not), the operator's `rollcall retry` longer.
const (
	holdsLockWaitShort = 200 * time.Millisecond
	holdsLockWaitLong  = 5 * time.Second
)

// updateHoldsFile changes the holds file at path under its lock: it reads
// it, lets change change what it read (change reports whether it did), and
// writes it back if so. It returns the holds as the file now keeps them. A
// file that cannot be read is not written over.
func updateHoldsFile(path string, wait time.Duration, change func(holdRecords) bool) (holdRecords, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("write holds %s: %w", path, err)
	}
	unlock, err := lockHoldsFile(path+".lock", wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cur, err := readHoldsFile(path)
	if err != nil {
		return nil, err
	}
	if !change(cur) {
		return cur, nil
	}
	if err := writeHoldsFile(path, cur); err != nil {
		return nil, err
	}
	return cur, nil
}

// lockHoldsFile takes the flock of the holds file's lock file, waiting up
// to wait for another process to let go of it.
func lockHoldsFile(path string, wait time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock holds %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				err = fmt.Errorf("another rollcall has held it for %s", wait)
			}
			return nil, fmt.Errorf("lock holds %s: %w", path, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holdsState is what the loop knows of the holds file.
type holdsState struct {
	// disk is the file as last read or written; a hold in it that a later
	// read no longer has was lifted by another process (`rollcall retry`).
	disk holdRecords
	// gen counts the loop's writes: a read that began before the last
	// write is older than what that write read, and is not taken.
	gen uint64
	// readErr is the last read's error, said once.
	readErr string
}

// holdsRead is a read of the holds file beside the loop.
type holdsRead struct {
	gen  uint64
	path string
	recs holdRecords
	err  error
}

// holdsReader is what a relist calls beside the loop, with the engine's
// identity, to read the holds file; nil when holds are kept in memory.
func (l *loop) holdsReader() func(docker.EngineInfo) *holdsRead {
	if l.opts.StateDir == "" {
		return nil
	}
	dir, prefix, path, gen := l.opts.StateDir, l.prefix, l.holdsPath, l.hs.gen
	return func(info docker.EngineInfo) *holdsRead {
		if path == "" {
			path = holdsFile(dir, info, prefix)
		}
		recs, err := readHoldsFile(path)
		return &holdsRead{gen: gen, path: path, recs: recs, err: err}
	}
}

// onHoldsRead takes a read of the holds file in, before the plan is made:
// the first one merges the holds kept from before into the session's, a
// later one lifts what another process lifted (and holds what it held).
func (l *loop) onHoldsRead(r *holdsRead) {
	if r == nil || !l.infoOK {
		return
	}
	if r.err != nil {
		if msg := r.err.Error(); msg != l.hs.readErr {
			l.hs.readErr = msg
			l.note("holds: %v", r.err)
			l.log(levelError, "holds could not be read", "error", msg)
		}
		if !l.holdsLoaded {
			l.holdsLoaded, l.holdsPath, l.hs.disk = true, r.path, holdRecords{}
		}
		return
	}
	l.hs.readErr = ""
	if !l.holdsLoaded {
		l.holdsLoaded, l.holdsPath = true, r.path
		l.hs.disk = holdRecords{}
		extra := false // held in memory before the file was read: written down
		for w, hs := range l.holds {
			for h := range hs {
				extra = extra || !r.recs.has(w, h)
			}
		}
		l.takeDiskHolds(r.recs, false)
		if n := len(r.recs); n > 0 {
			l.log(levelInfo, "holds kept from before", "holds", n)
		}
		if extra {
			l.saveHolds()
		}
		return
	}
	if r.gen != l.hs.gen || r.path != l.holdsPath {
		return // the loop wrote since: what that write read is newer
	}
	l.takeDiskHolds(r.recs, true)
}

// takeDiskHolds brings the session's holds in line with the file as now
// read or written: a hold the file had and no longer has was lifted by
// another process, one it has anew was put by another. What the session
// itself changed and could not write yet is left as it is.
func (l *loop) takeDiskHolds(recs holdRecords, say bool) {
	for w, hs := range l.hs.disk {
		for h := range hs {
			if !recs.has(w, h) && l.holds[w][h] {
				l.unhold(w, h)
				if say {
					l.note("hold on %s spec %s lifted outside this session (rollcall retry)", w, short(h))
					l.log(levelInfo, "hold lifted outside this session", "workload", w, "spec", short(h))
				}
			}
		}
	}
	for w, hs := range recs {
		for h := range hs {
			if !l.hs.disk.has(w, h) && !l.holds[w][h] {
				if l.holds[w] == nil {
					l.holds[w] = map[string]bool{}
				}
				l.holds[w][h] = true
			}
		}
	}
	l.hs.disk = recs.clone()
}

// unhold drops one hold from the session, with what hangs on it: an
// operator rollback of that spec under way, and the automatic rollbacks
// that put it on hold (the header would say it is still on hold).
func (l *loop) unhold(w, h string) {
	delete(l.holds[w], h)
	if len(l.holds[w]) == 0 {
		delete(l.holds, w)
	}
	if l.rollbacks[w] == h {
		delete(l.rollbacks, w)
	}
	l.rolledBack = slices.DeleteFunc(l.rolledBack, func(r RollbackInfo) bool { return r.Workload == w && r.Hash == h })
}

// saveHolds writes down what the session changed in its holds since the
// file was last read or written (a hold added, a hold dropped), and takes
// in what another process changed meanwhile. It writes nothing before the
// file was first read, nor without a state directory. When the file
// cannot be changed, the session's holds stand, and the next change
// carries this one.
func (l *loop) saveHolds() {
	if l.holdsPath == "" || !l.holdsLoaded {
		return
	}
	l.hs.gen++
	var added []Hold
	var dropped [][2]string
	for w, hs := range l.holds {
		for h := range hs {
			if !l.hs.disk.has(w, h) {
				added = append(added, Hold{Workload: w, Hash: h, Since: time.Now().UTC(), By: l.opts.User, Reason: l.holdReason(w, h)})
			}
		}
	}
	for w, hs := range l.hs.disk {
		for h := range hs {
			if !l.holds[w][h] {
				dropped = append(dropped, [2]string{w, h})
			}
		}
	}
	if len(added) == 0 && len(dropped) == 0 {
		return
	}
	recs, err := updateHoldsFile(l.holdsPath, holdsLockWaitShort, func(cur holdRecords) bool {
		for _, h := range added {
			if !cur.has(h.Workload, h.Hash) {
				cur.add(h)
			}
		}
		for _, d := range dropped {
			cur.remove(d[0], d[1])
		}
		return true
	})
	if err != nil {
		l.note("holds: %v", err)
		l.log(levelError, "holds could not be written", "error", err.Error())
		return
	}
	l.takeDiskHolds(recs, true)
}

// holdReason is why workload's spec hash was put on hold: the automatic
// rollback that just ended, else the operator's.
func (l *loop) holdReason(w, h string) string {
	for i := len(l.recent) - 1; i >= 0; i-- {
		if s := l.recent[i].Step; s.Hold == h && s.Workload == w && l.recent[i].Err == "" {
			return s.Target() + ": " + s.Reason
		}
	}
	return "rolled back by the operator"
}

// dropStaleHolds lifts the holds of a workload whose desired spec changed
// (rule 9: "until the desired spec changes"), and of workloads no longer
// desired.
func (l *loop) dropStaleHolds() {
	if l.resolved == nil || len(l.holds) == 0 {
		return
	}
	changed := false
	for w, hs := range l.holds {
		rw := l.resolved.Workload(w)
		if rw != nil && rw.Err != nil {
			continue // not resolved: cannot tell
		}
		for h := range hs {
			if rw == nil || rw.Hash != h {
				l.unhold(w, h)
				changed = true
				l.note("hold on %s spec %s lifted: the desired spec changed", w, short(h))
			}
		}
	}
	if changed {
		l.saveHolds()
	}
}

// retry is the operator's Retry: every hold of workload is lifted,
// journaled first (no audit, no action).
func (l *loop) retry(workload string) {
	if !l.acting("lift a hold") {
		return
	}
	hashes := sortedKeys(l.holds[workload])
	if len(hashes) == 0 {
		l.note("retry %s: no spec of it is on hold", workload)
		return
	}
	shorts := make([]string, len(hashes))
	for i, h := range hashes {
		shorts[i] = short(h)
	}
	l.decision("retry", workload, "hold lifted on spec "+strings.Join(shorts, ", "))
	if l.halted != "" {
		return
	}
	for _, h := range hashes {
		l.unhold(workload, h)
	}
	l.saveHolds()
	l.note("hold on %s spec %s lifted by %s: it starts again under the usual rules", workload, strings.Join(shorts, ", "), l.opts.User)
	l.log(levelInfo, "hold lifted by the operator", "workload", workload, "spec", strings.Join(shorts, ","), "user", l.opts.User)
}
