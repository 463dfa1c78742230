// Package mainexit is a package for devtest's own test to run: its
// TestMain fails before any test runs.
package mainexit

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	fmt.Println("the fixture this package needs is missing: set it up first")
	os.Exit(1)
}

func TestNeverRuns(t *testing.T) {}
