package fake

// Tests of rules that each once had no fast test: broken on purpose, only a
// real-engine test failed, or none did.

import "testing"

// Two fakes given one EngineID stand for two endpoints of one engine: Info
// says the same identity on both, and each its own endpoint.
func TestFakeEngineIDIsSettable(t *testing.T) {
	a := New(Options{Endpoint: "fake://a", EngineID: "engine-1"})
	b := New(Options{Endpoint: "fake://b", EngineID: "engine-1"})
	ia, erra := a.Info(testCtx)
	ib, errb := b.Info(testCtx)
	if erra != nil || errb != nil || ia.ID != "engine-1" || ib.ID != "engine-1" || ia.Endpoint == ib.Endpoint {
		t.Errorf("Info = %+v, %v and %+v, %v; want one ID, two endpoints", ia, erra, ib, errb)
	}
}
