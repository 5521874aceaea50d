package moby

import "testing"

// TestPKI is a CA, a server configuration and a client folder of a test's
// own (newTestPKI), for the external tests of the tcp+TLS transport.
type TestPKI = testPKI

// NewTestPKI makes a TestPKI for t.
func NewTestPKI(t testing.TB) TestPKI { return newTestPKI(t) }
