// Package skips is a package for devtest's own test to run: its tests
// pass, fail, skip and log the way real tests do.
package skips

import (
	"os"
	"testing"
)

func TestPasses(t *testing.T) { t.Log("a passing test's log") }

func TestSkipsForThePeers(t *testing.T) {
	t.Skip("@modelcontextprotocol/sdk is missing: run npm ci --prefix internal/testpeers/npm (.ci/run does)")
}

func TestSubtests(t *testing.T) {
	for _, name := range []string{"chromium", "corpora"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "chromium" {
				t.Skip("Debian's Chromium is missing: apt-get install chromium (.ci/run does)")
			}
			t.Skip("the AEP conformance corpora are not at ../x: set AEP_CONFORMANCE_DIR to an AEP checkout")
		})
	}
}

func TestFailsWhenAsked(t *testing.T) {
	if os.Getenv("DEVTEST_FAIL") == "" {
		return
	}
	t.Log("what the failing test said")
	t.Fatal("failed as asked")
}
