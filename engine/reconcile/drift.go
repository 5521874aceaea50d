package reconcile

import (
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// DriftField is what of a container differs from its desired spec.
type DriftField string

const (
	DriftLegacy      DriftField = "legacy"       // no spec label: nothing else is known
	DriftImage       DriftField = "image"        // the image reference
	DriftImageID     DriftField = "image ID"     // the same tag, rebuilt
	DriftVersion     DriftField = "version"      // the version label
	DriftSpec        DriftField = "spec"         // the spec hash
	DriftRecreate    DriftField = "recreate"     // created before a forced recreate; Want is its time
	DriftLimitLifted DriftField = "limit lifted" // a limit to lift: the engine cannot in place
	DriftLimits      DriftField = "limits"       // limits or restart policy, changed in place
)

// Drift is one way a container differs from its workload's desired spec,
// with what it has and what is wanted, ready to show. Diff works it out
// once (ContainerState.Drift); a step's reason and every view render it.
type Drift struct {
	Field      DriftField
	Have, Want string
}

// Line is the drift as a spec diff line: "~ image: web:v1 → web:v2".
func (d Drift) Line() string {
	switch d.Field {
	case DriftLegacy:
		return "~ legacy: no spec label"
	case DriftRecreate:
		return "~ recreate requested at " + d.Want
	case DriftImageID:
		return "~ image ID: " + d.Have + " → " + d.Want + " (tag rebuilt)"
	}
	return "~ " + string(d.Field) + ": " + d.Have + " → " + d.Want
}

// driftOf is every way c differs from w: a legacy container only says so.
func driftOf(prefix string, w *spec.Resolved, c *docker.Container, recreate time.Time) []Drift {
	hash, labelled := c.Labels[docker.SpecLabel(prefix)]
	if !labelled {
		return []Drift{{Field: DriftLegacy}}
	}
	var out []Drift
	if c.Image != w.Image {
		out = append(out, Drift{DriftImage, c.Image, w.Image})
	} else if c.ImageID != w.ImageID {
		out = append(out, Drift{DriftImageID, shortID(c.ImageID), shortID(w.ImageID)})
	}
	if v := c.Labels[docker.VersionLabel(prefix)]; v != w.Version {
		out = append(out, Drift{DriftVersion, quoteEmpty(v), quoteEmpty(w.Version)})
	}
	if hash != w.Hash {
		out = append(out, Drift{DriftSpec, short(hash), short(w.Hash)})
	} else if !recreate.IsZero() && c.Created.Before(recreate) {
		out = append(out, Drift{Field: DriftRecreate, Want: recreate.UTC().Format(time.TimeOnly)})
	}
	want := DesiredLimits(w.Workload)
	switch {
	case liftsLimit(c.Limits, want):
		out = append(out, Drift{DriftLimitLifted, LimitsText(c.Limits), LimitsText(want)})
	case !LimitsEqual(c.Limits, want):
		out = append(out, Drift{DriftLimits, LimitsText(c.Limits), LimitsText(want)})
	}
	return out
}

// staleWhy says what makes a stale container stale, from its drift: the
// image, image ID and version first; else a recreate, a limit to lift, or
// the spec hash.
func staleWhy(ds []Drift, image string) string {
	var why []string
	var spec, other string
	for _, d := range ds {
		switch d.Field {
		case DriftLegacy:
			return "legacy: no spec label"
		case DriftImage, DriftVersion:
			why = append(why, string(d.Field)+" "+d.Have+" → "+d.Want)
		case DriftImageID:
			why = append(why, "image ID "+d.Have+" → "+d.Want+" ("+image+" rebuilt)")
		case DriftRecreate:
			other = "recreate requested at " + d.Want
		case DriftLimitLifted:
			if other == "" {
				other = "limit lifted: " + d.Have + " → " + d.Want + " (the engine cannot lift a limit in place)"
			}
		case DriftSpec:
			spec = "spec " + d.Have + " → " + d.Want
		}
	}
	switch {
	case len(why) > 0:
		return strings.Join(why, ", ")
	case spec == "" && other != "":
		return other
	}
	return spec
}
