//go:build !race

package testenv

// Race reports whether the race detector is on; tests that move tens of
// megabytes run their largest cases only without it (see LargeSizes).
const Race = false
