package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMedianKeepsRoundsPaired: median leaves its input in round order,
// so a difference taken after it still pairs each round with itself.
func TestMedianKeepsRoundsPaired(t *testing.T) {
	pump := []time.Duration{290, 95, 150}
	if got := median(pump); got != 150 {
		t.Fatalf("median: got %v; want 150", got)
	}
	if want := []time.Duration{290, 95, 150}; !slices.Equal(pump, want) {
		t.Fatalf("after median the rounds read %v; want %v, in round order", pump, want)
	}
}

// TestHTTPTableFloor: the floor is the direct client plus the stdio hop,
// per round, and the bridge is reported above it by the median of the
// rounds' differences.
func TestHTTPTableFloor(t *testing.T) {
	us := time.Microsecond
	p50 := map[string][]time.Duration{
		pathHTTPDirect:  {200 * us, 100 * us, 300 * us},
		pathStdioDirect: {100 * us, 100 * us, 100 * us},
		pathStdioPump:   {150 * us, 160 * us, 170 * us}, // hops 50, 60, 70
		pathBridgeURL:   {280 * us, 200 * us, 390 * us}, // above 30, 40, 20
	}
	p99 := map[string][]time.Duration{}
	for k, v := range p50 {
		p99[k] = v
	}
	var out bytes.Buffer
	printHTTPTable(&out, 10, 3, p50, p99)
	for _, want := range []string{
		"| floor: direct + the stdio hop (pump − stdio direct) | 250.0 | — |",
		"the stdio hop costs 60.0 µs; the bridge's p50 is 30.0 µs above the floor",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}
