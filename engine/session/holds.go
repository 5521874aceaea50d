package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/rollcall/rollcall/engine/docker"
)

// Holds (§5 rule 9) outlive the process: they are kept in a small JSON file
// beside the journal, one per engine and prefix, and dropped once the
// desired spec of their workload changes.

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
	if dir == "" {
		return out, nil
	}
	path := holdsFile(dir, info, prefix)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("read holds %s: %w", path, err)
	}
	var onDisk map[string][]string
	if err := json.Unmarshal(data, &onDisk); err != nil {
		return out, fmt.Errorf("read holds %s: %w", path, err)
	}
	for w, hashes := range onDisk {
		out[w] = map[string]bool{}
		for _, h := range hashes {
			out[w][h] = true
		}
	}
	return out, nil
}

// writeHolds replaces the holds file whole (write, then rename), so a crash
// leaves the old file or the new one, never half of one.
func writeHolds(path string, holds map[string]map[string]bool) error {
	onDisk := map[string][]string{}
	for w, hs := range holds {
		if len(hs) > 0 {
			onDisk[w] = slices.Sorted(maps.Keys(hs))
		}
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
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
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

// loadHolds merges the holds kept on disk into the session's, once the
// engine is known.
func (l *loop) loadHolds() {
	if l.holdsLoaded || l.opts.StateDir == "" || !l.infoOK {
		return
	}
	l.holdsLoaded = true
	l.holdsPath = holdsFile(l.opts.StateDir, l.info, l.prefix)
	kept, err := ReadHolds(l.opts.StateDir, l.info, l.prefix)
	if err != nil {
		l.note("holds: %v", err)
		l.log(levelError, "holds could not be read", "error", err.Error())
	}
	for w, hs := range kept {
		for h := range hs {
			if l.holds[w] == nil {
				l.holds[w] = map[string]bool{}
			}
			l.holds[w][h] = true
		}
	}
	if len(kept) > 0 {
		l.log(levelInfo, "holds kept from before", "holds", len(kept))
	}
}

// saveHolds writes the holds down, if they are kept on disk.
func (l *loop) saveHolds() {
	if l.holdsPath == "" {
		return
	}
	if err := writeHolds(l.holdsPath, l.holds); err != nil {
		l.note("holds: %v", err)
		l.log(levelError, "holds could not be written", "error", err.Error())
	}
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
				delete(hs, h)
				changed = true
				l.note("hold on %s spec %s lifted: the desired spec changed", w, short(h))
			}
		}
		if len(hs) == 0 {
			delete(l.holds, w)
		}
	}
	if changed {
		l.saveHolds()
	}
}
