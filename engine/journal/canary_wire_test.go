package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
)

// oldCanaryLine is a canary step's entry as the journal wrote it while
// Canary's Verdict and Check were plain strings (written by that code, not
// by hand).
const oldCanaryLine = `{"time":"2026-12-01T10:00:00Z","user":"ops","mode":"apply","action":"canary","workload":"web","slot":0,"container":"rc-web-1","reason":"canary step 1/2","result":"failed","error":"canary web/0 step 1/2 failed","duration_ms":30000,"engine":"","prefix":"rc","host":"","rollout":"","canary":{"step":1,"of":2,"share":0.1,"spec":"1a2b3c4d","verdict":"fail","check":"max_p95_ratio","measured":3.1,"limit":1.5,"window_ms":30000,"canary":{"requests":100,"errors":0,"error_rate":0,"p50_ms":9,"p95_ms":25},"stable":{"requests":900,"errors":1,"error_rate":0.0011111111111111111,"p50_ms":4,"p95_ms":8},"max_error_rate":0.01,"max_error_rate_increase":-1,"max_p95_ratio":1.5,"min_requests":20}}`

// TestCanaryVerdictTypedOnTheSameWire (issue 29): a canary's verdict and
// check are reconcile's typed constants in the journal, and its wire is
// unchanged: an old file reads into them, and the entry writes back the
// very same line.
func TestCanaryVerdictTypedOnTheSameWire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	if err := os.WriteFile(path, []byte(oldCanaryLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	es, err := Read(path, 0)
	if err != nil || len(es) != 1 || es[0].Canary == nil {
		t.Fatalf("Read = %+v, %v; want the one canary entry", es, err)
	}
	c := es[0].Canary
	if c.Verdict != reconcile.VerdictFail || c.Check != reconcile.CheckP95Ratio || c.Measured != 3.1 || c.Canary.P95MS != 25 {
		t.Errorf("read %+v; want verdict %q, check %q, measured 3.1, canary p95 25ms", c, reconcile.VerdictFail, reconcile.CheckP95Ratio)
	}
	b, err := json.Marshal(es[0])
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != oldCanaryLine {
		t.Errorf("written again:\n%s\nwant the old line:\n%s", b, oldCanaryLine)
	}
}

// TestCanaryJudgementOfRecord: the journal's record of a judgement reads
// back as the same judgement, so history and the webhook render it with
// the live views' words and figures.
func TestCanaryJudgementOfRecord(t *testing.T) {
	j := reconcile.Judgement{Verdict: reconcile.VerdictFail, Check: reconcile.CheckErrorRateIncrease, Measured: 1.0 / 24, Limit: 0.02,
		Window: 30 * time.Second, SplitLosses: 1,
		Stable: reconcile.CohortFigures{Requests: 900, Errors: 1, P50: 4 * time.Millisecond, P95: 8 * time.Millisecond},
		Canary: reconcile.CohortFigures{Requests: 120, Errors: 6, P50: 4200 * time.Microsecond, P95: 9250 * time.Microsecond}}
	s := reconcile.Step{Action: reconcile.ActCanary, Workload: "web", Canary: &reconcile.CanaryStep{Index: 0, Of: 2, Share: 0.1}}
	if got := CanaryOf(s, j).Judgement(); got != j {
		t.Errorf("Judgement() = %+v\nwant         %+v", got, j)
	}
}
