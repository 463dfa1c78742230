// Package hangs is a package for devtest's own test to run: one of its
// tests never ends, so go test's -timeout ends the package.
package hangs

import "testing"

func TestPasses(t *testing.T) { t.Log("a passing test's log") }

func TestHangs(t *testing.T) {
	t.Log("about to wait for ever")
	select {}
}
