package state

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
// beside the journal, one per engine and prefix.
//
// The file is shared: a session, a `rollcall retry` and the next session
// all change it. Each change (UpdateHoldsFile) is a read, a change and a
// whole write (write, then rename) under a flock on a lock file beside it,
// so no change of one is lost to another.
//
// On disk: {"web": [{"hash": "…", "since": "RFC 3339", "by": "alice",
// "cause": "canary-abort", "reason": "…"}]}. A file of an older rollcall,
// {"web": ["hash"]}, reads as holds without since, by, cause and reason;
// one without "cause" reads as HoldCauseUnknown, never as the operator's:
// the rollcall that wrote it called every hold whose rollback it could not
// find "rolled back by the operator", a canary's abort among them, so its
// words are no evidence of who put the hold.

// Hold is one spec on hold.
type Hold struct {
	Workload string
	Hash     string
	Since    time.Time // when it was put on hold; zero when the file does not say
	By       string    // who ran the session that put it on hold; "" when not said
	Cause    HoldCause // what put it on hold; HoldCauseUnknown when the file does not say
	// Reason is the detail of the cause, as it was said when the hold was
	// put (the failed step and why, the canary's judgement); "" when there
	// is none.
	Reason string
}

// Why is why h stands, in words: its cause's (Said), then its detail.
func (h Hold) Why() string {
	if h.Reason == "" {
		return h.Cause.Said()
	}
	return h.Cause.Said() + ": " + h.Reason
}

// HoldCause is what put a spec on hold. Every view says it in the words
// of Said, and keys it (plan --json) by its value.
type HoldCause string

const (
	// HoldCauseUnknown: the holds file does not say (an older rollcall's).
	HoldCauseUnknown HoldCause = ""
	// HoldByOperator: the operator's rollback (r in the console, the
	// Rollback intent).
	HoldByOperator HoldCause = "operator"
	// HoldByCanaryAbort: a canary step failed its analysis and was rolled
	// back by itself.
	HoldByCanaryAbort HoldCause = "canary-abort"
	// HoldByFailureAction: a failed step rolled back by the workload's
	// update.failure_action: rollback.
	HoldByFailureAction HoldCause = "failure-action"
)

// Key is the cause as plan --json names it: its value, "unknown" when
// not said.
func (c HoldCause) Key() string {
	if c == HoldCauseUnknown {
		return "unknown"
	}
	return string(c)
}

// Said is the cause in words, the one place a view finds them.
func (c HoldCause) Said() string {
	switch c {
	case HoldCauseUnknown:
		return "cause not recorded (put on hold by an older rollcall)"
	case HoldByOperator:
		return "rolled back by the operator"
	case HoldByCanaryAbort:
		return "the canary failed its analysis and was rolled back"
	case HoldByFailureAction:
		return "rolled back by failure_action"
	}
	return "put on hold by " + string(c) // a newer rollcall's cause
}

// Holds are holds by workload, then spec hash.
type Holds map[string]map[string]Hold

// Has reports whether workload w's spec h is on hold.
func (r Holds) Has(w, h string) bool { _, ok := r[w][h]; return ok }

// Add puts h on hold (replacing a hold of the same spec).
func (r Holds) Add(h Hold) {
	if r[h.Workload] == nil {
		r[h.Workload] = map[string]Hold{}
	}
	r[h.Workload][h.Hash] = h
}

// Remove lifts the hold of workload w's spec h, if there is one.
func (r Holds) Remove(w, h string) {
	delete(r[w], h)
	if len(r[w]) == 0 {
		delete(r, w)
	}
}

// Clone is a copy of r that shares nothing with it.
func (r Holds) Clone() Holds {
	out := Holds{}
	for _, hs := range r {
		for _, h := range hs {
			out.Add(h)
		}
	}
	return out
}

// List is every hold, by workload then since then hash.
func (r Holds) List() []Hold {
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

// HoldsPath is the file of an engine's and prefix's holds in dir.
func HoldsPath(dir string, info docker.EngineInfo, prefix string) string {
	return filepath.Join(dir, "holds-"+prefix+"-"+EngineKey(info)+".json")
}

// EngineKey names an engine in file names: a hash of its identity (the ID
// of `docker info`), so that two endpoints of one engine share their files.
func EngineKey(info docker.EngineInfo) string {
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
// workload, then by when they were put on hold. No directory ("") or no
// file means no holds.
func ListHolds(dir string, info docker.EngineInfo, prefix string) ([]Hold, error) {
	if dir == "" {
		return nil, nil
	}
	recs, err := ReadHoldsFile(HoldsPath(dir, info, prefix))
	return recs.List(), err
}

// LiftHolds lifts every hold of workload kept in dir for an engine and
// prefix, and returns the holds it lifted (none: the workload had none).
// It is the operator's `rollcall retry`; the caller journals it. A session
// running meanwhile lifts them too when it reads the file again.
func LiftHolds(dir string, info docker.EngineInfo, prefix, workload string) ([]Hold, error) {
	if dir == "" {
		return nil, nil
	}
	var lifted []Hold
	_, err := UpdateHoldsFile(HoldsPath(dir, info, prefix), HoldsLockWait, func(cur Holds) bool {
		for _, h := range cur[workload] {
			lifted = append(lifted, h)
		}
		delete(cur, workload)
		return len(lifted) > 0
	})
	if err != nil {
		return nil, err
	}
	out := Holds{}
	for _, h := range lifted {
		out.Add(h)
	}
	return out.List(), nil
}

// maxHoldsFile bounds the holds file as read: a few holds take a few
// hundred bytes.
const maxHoldsFile = 1 << 20

// holdOnDisk is one hold as the file keeps it.
type holdOnDisk struct {
	Hash   string     `json:"hash"`
	Since  *time.Time `json:"since,omitempty"`
	By     string     `json:"by,omitempty"`
	Cause  HoldCause  `json:"cause,omitempty"`
	Reason string     `json:"reason,omitempty"`
}

// ReadHoldsFile reads the holds file at path: a regular file, bounded. No
// file means no holds. The open does not block: a FIFO in the file's place
// is an error, not a hang.
func ReadHoldsFile(path string) (Holds, error) {
	out := Holds{}
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
				return Holds{}, fmt.Errorf("read holds %s: workload %q: %w", path, w, err)
			}
			if d.Hash == "" {
				return Holds{}, fmt.Errorf("read holds %s: workload %q: a hold without a hash", path, w)
			}
			h := Hold{Workload: w, Hash: d.Hash, By: d.By, Cause: d.Cause, Reason: d.Reason}
			if d.Since != nil {
				h.Since = *d.Since
			}
			out.Add(h)
		}
	}
	return out, nil
}

// WriteHoldsFile replaces the holds file whole (write, fsync, then rename),
// so a crash leaves the old file or the new one, never half of one. No
// holds: no file. It takes no lock: UpdateHoldsFile does.
func WriteHoldsFile(path string, recs Holds) error {
	onDisk := map[string][]holdOnDisk{}
	for _, h := range recs.List() {
		d := holdOnDisk{Hash: h.Hash, By: h.By, Cause: h.Cause, Reason: h.Reason}
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

// HoldsLockWait is how long a change of the holds file waits for another
// process's change to end.
const HoldsLockWait = 5 * time.Second

// UpdateHoldsFile changes the holds file at path under its lock: it reads
// it, lets change change what it read (change reports whether it did), and
// writes it back if so. It returns the holds as the file now keeps them. A
// file that cannot be read is not written over. It waits up to wait for
// another process that holds the lock.
func UpdateHoldsFile(path string, wait time.Duration, change func(Holds) bool) (Holds, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("write holds %s: %w", path, err)
	}
	unlock, err := lockHoldsFile(path+".lock", wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cur, err := ReadHoldsFile(path)
	if err != nil {
		return nil, err
	}
	if !change(cur) {
		return cur, nil
	}
	if err := WriteHoldsFile(path, cur); err != nil {
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
