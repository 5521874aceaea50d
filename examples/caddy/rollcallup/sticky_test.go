package rollcallup

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestStickyCohortIsTheSameEverywhere: a sticky client's place in [0,1) is
// a function of its cookie or address alone, fixed: the same in every Caddy
// in front of the workload and in every build of this module, so a client
// keeps its cohort across proxies, reloads and upgrades. A change of the
// hash moves clients between cohorts mid-canary; it must change these
// values on purpose.
func TestStickyCohortIsTheSameEverywhere(t *testing.T) {
	for s, want := range map[string]float64{
		"":            0.93676944839044,
		"client-1":    0.9735690805635163,
		"client-2":    0.2966881184723965,
		"10.0.0.1":    0.78310998851923,
		"2001:db8::1": 0.5219825615416754,
	} {
		if got := unit(s); got != want {
			t.Errorf("unit(%q) = %v, want %v", s, got, want)
		}
	}
	// Two sources of their own (two Caddys, each with its split) put a
	// cookie in the same cohort: client-2 (0.30) in the canary at a share of
	// 0.5, client-1 (0.97) in the stable one.
	for _, proxy := range []string{"one Caddy", "another Caddy"} {
		t.Run(proxy, func(t *testing.T) {
			u := testSource(t, Upstreams{CohortBy: cohortByCookie, CohortCookie: "rc"}, allAddrs, allSpecs)
			u.wl.setSplit("new", 0.5, time.Now())
			u.random = func() float64 { panic("a sticky decision asked for a random number") }
			for cookie, wantCanary := range map[string]bool{"client-1": false, "client-2": true} {
				r := caddyRequest(func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "rc", Value: cookie}) })
				if got := slices.Equal(dials(t, u, r), canaryAddrs); got != wantCanary {
					t.Errorf("cookie %s: on the canary %v, want %v", cookie, got, wantCanary)
				}
			}
		})
	}
}
