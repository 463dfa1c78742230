// Package loud is a package for devtest's own test to run: its one test
// prints far more than a pipe holds, in lines longer than the test's
// limit on one line of go test's events.
package loud

import (
	"fmt"
	"strings"
	"testing"
)

func TestPrintsALot(t *testing.T) {
	line := strings.Repeat("x", 1024)
	for i := range 4096 { // 4 MiB: well over what a pipe buffers
		fmt.Println(i, line)
	}
}
