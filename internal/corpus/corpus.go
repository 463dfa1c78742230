// Package corpus locates the AEP conformance corpora and the MCP reference
// for tests. The corpora are read in place, never copied into the project.
//
// The AEP tree is taken from $AEP_CONFORMANCE_DIR when set, else from
// ../shared/reference/aep relative to the repository root. When neither exists
// the calling test is skipped with a message naming the variable. When the
// variable is set (.ci/run sets it whenever the corpora are beside the
// clone) and names no corpora, the test fails under CI=true instead (see
// internal/testenv).
package corpus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// EnvVar names the environment variable that points at an AEP checkout.
const EnvVar = "AEP_CONFORMANCE_DIR"

// repoRoot returns the repository root, from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// AEPDir returns the AEP reference tree (the folder holding spec/, schemas/
// and conformance/), or skips t.
func AEPDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(EnvVar); d != "" {
		if _, err := os.Stat(filepath.Join(d, "conformance", "fixtures")); err == nil {
			return d
		}
		testenv.Missing(t, "the AEP conformance corpora at "+EnvVar+"="+d, "point "+EnvVar+" at an AEP checkout (the folder holding conformance/fixtures)")
	}
	d := filepath.Join(repoRoot(), "..", "shared", "reference", "aep")
	if _, err := os.Stat(filepath.Join(d, "conformance", "fixtures")); err != nil {
		// The corpora are not something a machine installs: a clone without
		// them beside it skips these tests, under CI too, and says how to
		// run them. .ci/run sets EnvVar whenever they are there, so a
		// corpus that goes missing from where CI found it fails above.
		t.Skipf("the AEP conformance corpora are not at %s: set %s to an AEP checkout (the folder holding conformance/fixtures) to run this test", d, EnvVar)
	}
	return d
}

// Fixture returns the path of a file under conformance/fixtures, or skips t.
func Fixture(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join(AEPDir(t), "conformance", "fixtures", rel)
}

// LoadJSON decodes a fixture file into v, failing t on error.
func LoadJSON(t testing.TB, rel string, v any) {
	t.Helper()
	b, err := os.ReadFile(Fixture(t, rel))
	if err != nil {
		t.Fatalf("reading fixture %s: %v", rel, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding fixture %s: %v", rel, err)
	}
}
