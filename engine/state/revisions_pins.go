package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// Pins (DESIGN §12) are the revisions an operator rolled a workload back
// to (`rollcall rollback`, `u` in the console): while a pin stands, the
// workload's desired spec is held and the pinned revision is what rolls
// in. A pin stands until the desired spec changes (its hash is no longer
// the one the pin was set against) or `rollcall retry` lifts it. They are
// kept in one JSON file per engine and prefix beside the holds, one pin
// per workload, and changed as the holds are: under the file's lock, a
// read, a change and a whole write.
//
// On disk: {"web": {"revision": {…a revision as the revisions file keeps
// it…}, "against": "…", "by": "alice", "since": "RFC 3339"}}. The pin
// keeps its revision whole, so it outlives the revisions kept.

// Pin is one workload pinned to a revision.
type Pin struct {
	Workload string
	Revision Revision
	// Against is the desired spec hash the pin was set against: a desired
	// spec of another hash ends the pin.
	Against string
	By      string    // who set it
	Since   time.Time // when
}

// Same reports whether p and o are the same pin (not one set again since).
func (p Pin) Same(o Pin) bool {
	return p.Workload == o.Workload && p.Revision.Same(o.Revision) && p.Against == o.Against && p.Since.Equal(o.Since)
}

// Pins are the pins by workload.
type Pins map[string]Pin

// List is every pin, by workload.
func (p Pins) List() []Pin {
	out := make([]Pin, 0, len(p))
	for _, w := range slices.Sorted(maps.Keys(p)) {
		out = append(out, p[w])
	}
	return out
}

// Clone is a copy of p.
func (p Pins) Clone() Pins { return maps.Clone(p) }

// PinsPath is the file of an engine's and prefix's pins in dir.
func PinsPath(dir string, info docker.EngineInfo, prefix string) string {
	return filepath.Join(dir, "pins-"+prefix+"-"+EngineKey(info)+".json")
}

// maxPinsFile bounds the pins file as read: one revision per workload.
const maxPinsFile = 4 << 20

type pinOnDisk struct {
	Revision revisionOnDisk `json:"revision"`
	Against  string         `json:"against"`
	By       string         `json:"by,omitempty"`
	Since    time.Time      `json:"since"`
}

// ReadPinsFile reads the pins file at path: a regular file, bounded. No
// file means no pins.
func ReadPinsFile(path string) (Pins, error) {
	out := Pins{}
	data, err := readSmallFile(path, maxPinsFile, "pins")
	if err != nil || data == nil {
		return out, err
	}
	var onDisk map[string]pinOnDisk
	if err := json.Unmarshal(data, &onDisk); err != nil {
		return out, fmt.Errorf("read pins %s: %w", path, err)
	}
	for w, d := range onDisk {
		if why := d.Revision.check(); why != "" {
			return Pins{}, fmt.Errorf("read pins %s: workload %q: %s", path, w, why)
		}
		if d.Against == "" {
			return Pins{}, fmt.Errorf("read pins %s: workload %q: a pin without the desired spec it was set against", path, w)
		}
		out[w] = Pin{Workload: w, Revision: d.Revision.revision(w), Against: d.Against, By: d.By, Since: d.Since}
	}
	return out, nil
}

// WritePinsFile replaces the pins file whole (write, fsync, then rename).
// No pins: no file. It takes no lock: UpdatePinsFile does.
func WritePinsFile(path string, pins Pins) error {
	if len(pins) == 0 {
		return writeSmallFile(path, nil, "pins")
	}
	onDisk := map[string]pinOnDisk{}
	for w, p := range pins {
		onDisk[w] = pinOnDisk{Revision: revisionToDisk(p.Revision), Against: p.Against, By: p.By, Since: p.Since.UTC()}
	}
	data, err := json.MarshalIndent(onDisk, "", "  ")
	if err != nil {
		return fmt.Errorf("write pins %s: %w", path, err)
	}
	return writeSmallFile(path, append(data, '\n'), "pins")
}

// UpdatePinsFile changes the pins file at path under its lock: it reads
// it, lets change change what it read (change reports whether it did),
// and writes it back if so. It returns the pins as the file now keeps
// them. A file that cannot be read is not written over.
func UpdatePinsFile(path string, wait time.Duration, change func(Pins) bool) (Pins, error) {
	var out Pins
	err := underFileLock(path, wait, "pins", func() error {
		cur, err := ReadPinsFile(path)
		if err != nil {
			return err
		}
		if change(cur) {
			if err := WritePinsFile(path, cur); err != nil {
				return err
			}
		}
		out = cur
		return nil
	})
	return out, err
}

// ListPins reads the pins of an engine and prefix kept in dir, by
// workload. No directory ("") or no file means none.
func ListPins(dir string, info docker.EngineInfo, prefix string) ([]Pin, error) {
	if dir == "" {
		return nil, nil
	}
	pins, err := ReadPinsFile(PinsPath(dir, info, prefix))
	return pins.List(), err
}

// SetPin pins p.Workload to p.Revision in dir for an engine and prefix,
// replacing a pin it had, which it returns.
func SetPin(dir string, info docker.EngineInfo, prefix string, p Pin) (*Pin, error) {
	if dir == "" {
		return nil, fmt.Errorf("pin %s: no state directory to keep it in", p.Workload)
	}
	var was *Pin
	_, err := UpdatePinsFile(PinsPath(dir, info, prefix), RevisionsLockWait, func(cur Pins) bool {
		if old, ok := cur[p.Workload]; ok {
			was = &old
		}
		cur[p.Workload] = p
		return true
	})
	if err != nil {
		return nil, err
	}
	return was, nil
}

// LiftPin lifts the pin of workload kept in dir for an engine and prefix,
// and returns it (nil: it had none). It is the operator's `rollcall
// retry`; the caller journals it.
func LiftPin(dir string, info docker.EngineInfo, prefix, workload string) (*Pin, error) {
	if dir == "" {
		return nil, nil
	}
	var lifted *Pin
	_, err := UpdatePinsFile(PinsPath(dir, info, prefix), RevisionsLockWait, func(cur Pins) bool {
		p, ok := cur[workload]
		if !ok {
			return false
		}
		lifted = &p
		delete(cur, workload)
		return true
	})
	if err != nil {
		return nil, err
	}
	return lifted, nil
}
