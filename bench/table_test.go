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

// TestHTTPTableFloor: the floors are the direct client, the TCP pump,
// and the direct client plus the stdio hop, per round, and the bridge is
// reported above each by the median of the rounds' differences and
// ratios.
func TestHTTPTableFloor(t *testing.T) {
	us := time.Microsecond
	p50 := map[string][]time.Duration{
		pathHTTPDirect:  {200 * us, 100 * us, 300 * us},
		pathHTTPPump:    {240 * us, 180 * us, 310 * us}, // hops 40, 80, 10
		pathStdioDirect: {100 * us, 100 * us, 100 * us},
		pathStdioPump:   {150 * us, 160 * us, 170 * us}, // hops 50, 60, 70
		pathBridgeURL:   {280 * us, 200 * us, 390 * us}, // above the floor 30, 40, 20
	}
	m := httpRounds{p50: p50, p99: p50, cpu: map[string][]time.Duration{}, runs: map[string][]float64{}}
	for k := range p50 {
		m.cpu[k] = []time.Duration{30 * us, 10 * us, 20 * us}
		m.runs[k] = []float64{3, 2, 2.5}
	}
	var out bytes.Buffer
	printHTTPTable(&out, 10, 3, m)
	for _, want := range []string{
		// Above 80, 100, 90; ratios 1.40, 2.00, 1.30.
		"| " + pathHTTPDirect + " | 200.0 | 200.0 | 1.00× | 20.0 | 2.50 |",
		"| " + pathHTTPDirect + " | 200.0 | 90.0 | 1.40× |",
		// Above 40, 20, 80; ratios 1.17, 1.11, 1.26.
		"| " + pathHTTPPump + " | 240.0 | 40.0 | 1.17× |",
		// Floors 250, 160, 370; ratios 1.12, 1.25, 1.05.
		"| " + pathFloor + " (target: at most 50 µs above) | 250.0 | 30.0 | 1.12× |",
		"the stdio hop costs 60.0 µs, the TCP pump's hop 40.0 µs",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	if len(p50) != 5 {
		t.Errorf("printing changed the rounds it was given: %d paths", len(p50))
	}
}

// TestHTTPTableBase: with -base, the other bridge gets its row, and this
// bridge is set against it by the median of the rounds' differences and
// ratios; without it, neither is printed.
func TestHTTPTableBase(t *testing.T) {
	us := time.Microsecond
	p50 := map[string][]time.Duration{
		pathHTTPDirect:  {200 * us, 200 * us, 200 * us},
		pathHTTPPump:    {240 * us, 240 * us, 240 * us},
		pathStdioDirect: {100 * us, 100 * us, 100 * us},
		pathStdioPump:   {150 * us, 150 * us, 150 * us},
		pathBridgeURL:   {260 * us, 300 * us, 270 * us},
	}
	m := httpRounds{p50: p50, p99: p50, cpu: map[string][]time.Duration{}, runs: map[string][]float64{}}
	for k := range p50 {
		m.cpu[k] = []time.Duration{100 * us, 100 * us, 100 * us}
		m.runs[k] = []float64{5, 5, 5}
	}
	var out bytes.Buffer
	printHTTPTable(&out, 10, 3, m)
	if strings.Contains(out.String(), "-base") {
		t.Errorf("without -base the table mentions it:\n%s", out.String())
	}
	p50[pathBridgeBase] = []time.Duration{300 * us, 400 * us, 300 * us} // 40, 100, 30 apart; 0.87, 0.75, 0.90
	m.cpu[pathBridgeBase] = []time.Duration{200 * us, 150 * us, 100 * us}
	m.runs[pathBridgeBase] = []float64{9, 10, 8}
	out.Reset()
	printHTTPTable(&out, 10, 3, m)
	for _, want := range []string{
		"| " + pathBridgeBase + " | 300.0 |",
		"p50 -40.0 µs apart (0.87×); CPU per call -50.0 µs apart (0.67×); runs per call 5.00 against 9.00",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRoundOrder: odd rounds measure the paths in reverse, so no path is
// always the last of its round; even rounds keep the given order.
func TestRoundOrder(t *testing.T) {
	paths := []string{pathDirect, pathPump, pathBridge, pathBase}
	for _, tc := range []struct {
		round int
		want  []string
	}{
		{0, []string{pathDirect, pathPump, pathBridge, pathBase}},
		{1, []string{pathBase, pathBridge, pathPump, pathDirect}},
		{2, []string{pathDirect, pathPump, pathBridge, pathBase}},
	} {
		if got := roundOrder(paths, tc.round); !slices.Equal(got, tc.want) {
			t.Errorf("round %d: got %q; want %q", tc.round, got, tc.want)
		}
	}
	if !slices.Equal(paths, []string{pathDirect, pathPump, pathBridge, pathBase}) {
		t.Errorf("roundOrder changed its input: %q", paths)
	}
}

// TestParseCallers: -callers takes positive counts separated by commas
// and refuses anything else with an error that shows the form.
func TestParseCallers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"1,16", []int{1, 16}},
		{"4", []int{4}},
		{" 1, 8 ", []int{1, 8}},
	} {
		got, err := parseCallers(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseCallers(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1,,2", "one"} {
		if _, err := parseCallers(in); err == nil || !strings.Contains(err.Error(), "e.g. 1,16") {
			t.Errorf("parseCallers(%q): got %v; want an error that shows the form", in, err)
		}
	}
}
