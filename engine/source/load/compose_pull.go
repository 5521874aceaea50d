package load

import (
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// pullPolicy maps compose's pull_policy to rollcall's pull: "" when the
// service sets none. always, never and missing (if_not_present) are
// rollcall's own; build is never, and the image is built first
// (Workload.BuildFirst: rollcall builds nothing, `docker compose build`
// does); a refresh period (daily, weekly, every_<duration>) is missing,
// with a warning.
func (c *composeMap) pullPolicy(service, policy string) string {
	switch p := strings.ToLower(policy); p {
	case "":
		return ""
	case spec.PullAlways, spec.PullNever, spec.PullMissing:
		return p
	case "if_not_present":
		return spec.PullMissing
	case "build":
		k, v := c.raw.find("services", service, "pull_policy")
		if c.swarm {
			swarmBuild.refuse(c.l, placeAt(&yaml.Node{}, v, k), "services."+service+".pull_policy")
			return ""
		}
		c.buildFirst[service] = true
		c.l.warn(placeAt(&yaml.Node{}, v, k), "build it first: docker compose build "+service,
			"services.%s.pull_policy: build: rollcall builds nothing: it runs the image once built and never pulls it", service)
		return spec.PullNever
	default:
		k, v := c.raw.find("services", service, "pull_policy")
		c.l.warn(placeAt(&yaml.Node{}, v, k), "use pull_policy: always to follow the tag at every apply",
			"services.%s.pull_policy: %s: taken as missing: rollcall pulls an image the engine lacks and refreshes on no schedule", service, policy)
		return spec.PullMissing
	}
}
