package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"
)

// buildAll builds the bridge, the mcp-go test server and this program into
// a temporary folder and returns their paths.
func buildAll() (bridge, server, self string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "aep-bench")
	if err != nil {
		return "", "", "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	for _, b := range []struct{ out, pkg string }{
		{"aep-mcp-bridge", "./cmd/aep-mcp-bridge"},
		{"elicitserver", "./internal/testpeers/elicitserver"},
		{"bench", "./bench"},
	} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			cleanup()
			return "", "", "", nil, fmt.Errorf("building %s (run from the repository root): %v\n%s", b.pkg, err, out)
		}
	}
	return filepath.Join(dir, "aep-mcp-bridge"), filepath.Join(dir, "elicitserver"), filepath.Join(dir, "bench"), cleanup, nil
}

// percentile returns the p-th percentile (0-100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Nanoseconds())/1000) }
