package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// Revisions (DESIGN §12) are the specs that reached every slot of a
// workload healthy, so that a workload can be returned to one
// (`rollcall rollback`). They are kept in one JSON file per engine and
// prefix in the state directory, the last MaxRevisions per workload,
// oldest first.
//
// A revision is named by a number that never changes and is never given
// to two specs of a workload: a spec not kept yet takes the number after
// the highest kept, and the revision of the highest number is never the
// one dropped, so a number once given is not given again. A spec kept
// already (the same hash and image ID) is not kept twice: recorded again
// (a rollback to it converged), it moves to the end and keeps its number,
// unlike `kubectl rollout undo`, which renumbers: a number shown (in
// history --revisions, in a pin, in the journal) names the same spec for
// as long as it is kept. A pinned revision recorded again after it was
// dropped from the file takes its number back (the pin keeps it whole).
// The list is in the order of recording, so the newest is last, and its
// number need not be the highest.
//
// On disk, each workload's in the order of recording (an older
// rollcall's, in the order of numbers, is that order too): {"web":
// [{"number": 3, "hash": "…", "image": "web:v1",
// "image_id": "sha256:…", "version": "1", "at": "RFC 3339", "rollout":
// "…", "spec": {…the engine/spec Workload…}}]}.

// MaxRevisions is how many revisions are kept per workload.
const MaxRevisions = 10

// Revision is one spec of a workload that reached every slot healthy.
type Revision struct {
	Workload string
	Number   int
	Hash     string // the spec hash (spec.Hash of Spec and ImageID)
	Image    string // the image reference
	ImageID  string // the image ID it resolved to
	Version  string
	At       time.Time // when it was (last) recorded
	// Rollout is the journal's rollout ID of the rollout that reached it;
	// "" when there was none.
	Rollout string
	// Spec is the whole resolved workload: enough to create its containers
	// again.
	Spec *spec.Workload
}

// Same reports whether r and o are the same spec: the same hash and image ID.
func (r Revision) Same(o Revision) bool { return r.Hash == o.Hash && r.ImageID == o.ImageID }

// Revisions are the revisions kept, by workload, oldest first.
type Revisions map[string][]Revision

// Record keeps rev as the newest revision of its workload: a spec kept
// already is moved to the end with its number unless it is the newest; a
// spec not kept takes the number rev carries if it is one this file gave
// (a pin's revision, dropped since) and no kept spec has it, else the next
// number. Only the last MaxRevisions are kept, the highest number among
// them always. It returns the revision as kept, and whether anything
// changed.
func (r Revisions) Record(rev Revision) (Revision, bool) {
	list := r[rev.Workload]
	if n := len(list); n > 0 && list[n-1].Same(rev) {
		return list[n-1], false
	}
	highest := 0
	for _, x := range list {
		highest = max(highest, x.Number)
	}
	if i := slices.IndexFunc(list, rev.Same); i >= 0 {
		rev.Number = list[i].Number
	} else if taken := slices.ContainsFunc(list, func(x Revision) bool { return x.Number == rev.Number }); rev.Number < 1 || rev.Number > highest || taken {
		rev.Number = highest + 1
	}
	list = slices.DeleteFunc(slices.Clone(list), rev.Same)
	list = append(list, rev)
	for len(list) > MaxRevisions {
		// the oldest, but never the highest number: the next is after it
		top := slices.IndexFunc(list, func(x Revision) bool { return x.Number == max(highest, rev.Number) })
		drop := 0
		if top == 0 {
			drop = 1
		}
		list = slices.Delete(list, drop, drop+1)
	}
	r[rev.Workload] = list
	return rev, true
}

// Find is workload's revision number n.
func (r Revisions) Find(workload string, n int) (Revision, bool) {
	i := slices.IndexFunc(r[workload], func(x Revision) bool { return x.Number == n })
	if i < 0 {
		return Revision{}, false
	}
	return r[workload][i], true
}

// Previous is the revision a rollback of workload returns to by default:
// the newest kept that is not the desired spec (desiredHash). When the
// desired spec has reached every slot, that is the one before it; when it
// never did (a roll that failed, or is under way), the newest.
func (r Revisions) Previous(workload, desiredHash string) (Revision, bool) {
	list := r[workload]
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Hash != desiredHash {
			return list[i], true
		}
	}
	return Revision{}, false
}

// List is every revision, by workload, oldest first.
func (r Revisions) List() []Revision {
	var out []Revision
	for _, w := range slices.Sorted(maps.Keys(r)) {
		out = append(out, r[w]...)
	}
	return out
}

// RevisionsPath is the file of an engine's and prefix's revisions in dir.
func RevisionsPath(dir string, info docker.EngineInfo, prefix string) string {
	return filepath.Join(dir, "revisions-"+prefix+"-"+EngineKey(info)+".json")
}

// maxRevisionsFile bounds the revisions file as read: a revision is its
// workload's spec, a few KiB with a large environment.
const maxRevisionsFile = 8 << 20

// revisionOnDisk is one revision as the file keeps it.
type revisionOnDisk struct {
	Number  int            `json:"number"`
	Hash    string         `json:"hash"`
	Image   string         `json:"image"`
	ImageID string         `json:"image_id"`
	Version string         `json:"version,omitempty"`
	At      time.Time      `json:"at"`
	Rollout string         `json:"rollout,omitempty"`
	Spec    *spec.Workload `json:"spec"`
}

func (d revisionOnDisk) revision(workload string) Revision {
	return Revision{Workload: workload, Number: d.Number, Hash: d.Hash, Image: d.Image, ImageID: d.ImageID,
		Version: d.Version, At: d.At, Rollout: d.Rollout, Spec: d.Spec}
}

func revisionToDisk(r Revision) revisionOnDisk {
	return revisionOnDisk{Number: r.Number, Hash: r.Hash, Image: r.Image, ImageID: r.ImageID,
		Version: r.Version, At: r.At.UTC(), Rollout: r.Rollout, Spec: r.Spec}
}

// check is why a revision read from a file cannot be used; "" when it can.
func (d revisionOnDisk) check() string {
	switch {
	case d.Number < 1:
		return "a revision without a number"
	case d.Hash == "" || d.ImageID == "":
		return fmt.Sprintf("revision %d without a spec hash or image ID", d.Number)
	case d.Spec == nil:
		return fmt.Sprintf("revision %d without its spec", d.Number)
	}
	return ""
}

// ReadRevisionsFile reads the revisions file at path: a regular file,
// bounded. No file means no revisions.
func ReadRevisionsFile(path string) (Revisions, error) {
	out := Revisions{}
	data, err := readSmallFile(path, maxRevisionsFile, "revisions")
	if err != nil || data == nil {
		return out, err
	}
	var onDisk map[string][]revisionOnDisk
	if err := json.Unmarshal(data, &onDisk); err != nil {
		return out, fmt.Errorf("read revisions %s: %w", path, err)
	}
	for w, items := range onDisk {
		for _, d := range items {
			if why := d.check(); why != "" {
				return Revisions{}, fmt.Errorf("read revisions %s: workload %q: %s", path, w, why)
			}
			out[w] = append(out[w], d.revision(w))
		}
	}
	return out, nil
}

// WriteRevisionsFile replaces the revisions file whole (write, fsync,
// then rename). No revisions: no file. It takes no lock: RecordRevision
// does.
func WriteRevisionsFile(path string, recs Revisions) error {
	onDisk := map[string][]revisionOnDisk{}
	for w, list := range recs {
		for _, r := range list {
			onDisk[w] = append(onDisk[w], revisionToDisk(r))
		}
	}
	if len(onDisk) == 0 {
		return writeSmallFile(path, nil, "revisions")
	}
	data, err := json.MarshalIndent(onDisk, "", "  ")
	if err != nil {
		return fmt.Errorf("write revisions %s: %w", path, err)
	}
	return writeSmallFile(path, append(data, '\n'), "revisions")
}

// RevisionsLockWait is how long a change of the revisions or pins file
// waits for another process's change to end.
const RevisionsLockWait = 5 * time.Second

// RecordRevision keeps rev in the revisions file at path (Revisions.Record),
// under the file's lock, and returns it as kept. A file that cannot be
// read is not written over.
func RecordRevision(path string, wait time.Duration, rev Revision) (Revision, error) {
	if rev.Workload == "" || rev.Hash == "" || rev.ImageID == "" || rev.Spec == nil {
		return Revision{}, fmt.Errorf("record revision: workload, spec hash, image ID and spec are needed")
	}
	var kept Revision
	err := underFileLock(path, wait, "revisions", func() error {
		cur, err := ReadRevisionsFile(path)
		if err != nil {
			return err
		}
		var changed bool
		kept, changed = cur.Record(rev)
		if !changed {
			return nil
		}
		return WriteRevisionsFile(path, cur)
	})
	return kept, err
}

// ListRevisions reads the revisions of an engine and prefix kept in dir,
// by workload, oldest first. No directory ("") or no file means none.
func ListRevisions(dir string, info docker.EngineInfo, prefix string) (Revisions, error) {
	if dir == "" {
		return Revisions{}, nil
	}
	return ReadRevisionsFile(RevisionsPath(dir, info, prefix))
}
