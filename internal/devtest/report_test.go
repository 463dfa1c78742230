package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// durations are the times go test prints, which vary run to run.
var durations = regexp.MustCompile(`\d+\.\d+s`)

const skipsPkg = "github.com/agenteventprotocol/aep-mcp-bridge/internal/devtest/testdata/skips"

// TestRunPrintsWhatGoTestPrintsAndWhatSkipped runs the command on a real
// package (testdata/skips) whose tests pass, skip for want of the npm
// peers, Chromium and the AEP corpora, and fail when asked, and checks
// what it prints and its exit status.
func TestRunPrintsWhatGoTestPrintsAndWhatSkipped(t *testing.T) {
	summary := "devtest: 3 of 6 tests skipped (1 for want of the npm test peers; 1 for want of Chromium; 1 for want of the AEP corpora); " +
		"to run them: .ci/setup && AEP_CONFORMANCE_DIR=/path/to/agent-event-protocol go run ./internal/devtest "
	tests := []struct {
		name     string
		fail     bool
		args     []string
		want     []string // lines, in order
		wantNot  []string
		wantCode int
	}{
		{
			name: "a package that passes prints its ok line, then the summary",
			args: []string{"-count=1", "./testdata/skips"},
			want: []string{"ok  \t" + skipsPkg + "\tXs", summary + "-count=1 ./testdata/skips"},
		},
		{
			name: "a package that fails prints its failed test's output",
			fail: true,
			args: []string{"-count=1", "./testdata/skips"},
			want: []string{
				"    skips_test.go:32: what the failing test said",
				"    skips_test.go:33: failed as asked",
				"--- FAIL: TestFailsWhenAsked (Xs)",
				"FAIL",
				"FAIL\t" + skipsPkg + "\tXs",
				summary + "-count=1 ./testdata/skips",
			},
			wantNot:  []string{"a passing test's log", "=== RUN", "--- PASS"},
			wantCode: 1,
		},
		{
			name: "-v prints everything",
			args: []string{"-count=1", "-v", "./testdata/skips"},
			want: []string{
				"=== RUN   TestPasses",
				"    skips_test.go:10: a passing test's log",
				"--- PASS: TestPasses (Xs)",
				"ok  \t" + skipsPkg + "\tXs",
				summary + "-count=1 -v ./testdata/skips",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fail {
				t.Setenv("DEVTEST_FAIL", "1")
			}
			var out, errOut bytes.Buffer
			code := run(tt.args, &out, &errOut)
			got := durations.ReplaceAllString(out.String(), "Xs")
			if code != tt.wantCode {
				t.Errorf("exit status %d; want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, got, errOut.String())
			}
			lines := strings.Split(got, "\n")
			at := 0
			for _, w := range tt.want {
				i := indexFrom(lines, at, w)
				if i < 0 {
					t.Errorf("the output lacks %q after line %d:\n%s", w, at, got)
					continue
				}
				at = i + 1
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("the output has %q, which go test prints only with -v:\n%s", w, got)
				}
			}
		})
	}
}

func indexFrom(lines []string, from int, want string) int {
	for i := from; i < len(lines); i++ {
		if lines[i] == want {
			return i
		}
	}
	return -1
}

// TestRunEndsWhenALineIsTooLong: when reading go test's events stops
// early (a line over the limit), go test still gets its output read to
// the end, so it exits, and run reports the error and a failed status
// instead of waiting for ever on a full pipe.
func TestRunEndsWhenALineIsTooLong(t *testing.T) {
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- runLimited([]string{"-count=1", "./testdata/loud"}, &out, &errOut, 512) }()
	var code int
	select {
	case code = <-done:
	case <-time.After(3 * time.Minute): // a guard against the hang, not a measure
		t.Fatalf("run did not return: it waits for go test, which waits for room in its stdout pipe\nstderr so far:\n%s", errOut.String())
	}
	if want := "devtest: a line of go test's events is over 512 bytes, so nothing after it was reported; run go test -count=1 ./testdata/loud to see it all"; code != 1 || !strings.Contains(errOut.String(), want) {
		t.Errorf("exit status %d, stderr:\n%s\nwant 1 and %q", code, errOut.String(), want)
	}
}

// TestRunShowsWhyAPackageFailedWithoutAFailingTest: a package that fails
// while no test failed (go test's -timeout ends it while a test hangs, or
// its TestMain exits) prints what says why: the timeout's panic and
// goroutine dump (test2json files them under the test that was running,
// which never ends), or what TestMain printed.
func TestRunShowsWhyAPackageFailedWithoutAFailingTest(t *testing.T) {
	const base = "github.com/agenteventprotocol/aep-mcp-bridge/internal/devtest/testdata/"
	tests := []struct {
		name    string
		args    []string
		want    []string // lines, in order
		wantNot []string
	}{
		{
			name: "a test that hangs until -timeout",
			args: []string{"-count=1", "-timeout", "2s", "./testdata/hangs"},
			want: []string{
				"    hangs_test.go:10: about to wait for ever",
				"panic: test timed out after 2s",
				"\t\tTestHangs (",
				"\t" + "${DIR}/testdata/hangs/hangs_test.go:11 +0x",
				"FAIL\t" + base + "hangs\tXs",
			},
			wantNot: []string{"a passing test's log", "=== RUN"},
		},
		{
			name: "a TestMain that exits",
			args: []string{"-count=1", "./testdata/mainexit"},
			want: []string{"the fixture this package needs is missing: set it up first", "FAIL\t" + base + "mainexit\tXs"},
		},
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != 1 {
				t.Errorf("exit status %d; want 1", code)
			}
			got := durations.ReplaceAllString(out.String(), "Xs")
			lines := strings.Split(got, "\n")
			at := 0
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "${DIR}", dir)
				i := slices.IndexFunc(lines[at:], func(l string) bool { return strings.HasPrefix(l, w) })
				if i < 0 {
					t.Errorf("the output lacks a line starting %q after line %d:\n%s", w, at, got)
					continue
				}
				at += i + 1
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("the output has %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestSummary words the last line for the skips the run saw.
func TestSummary(t *testing.T) {
	tests := []struct {
		name    string
		reasons []string
		want    string
	}{
		{name: "nothing skipped", want: "devtest: 4 tests ran; none skipped"},
		{
			name:    "the npm peers and the suite: setup installs both",
			reasons: []string{"x is missing: run npm ci --prefix internal/testpeers/npm (.ci/run does)", "Node.js 22 or later is missing: run npm ci --prefix internal/testpeers/conformance (.ci/run does)"},
			want:    "devtest: 2 of 4 tests skipped (1 for want of the MCP conformance suite; 1 for want of the npm test peers); to run them: .ci/setup && go run ./internal/devtest ./...",
		},
		{
			name:    "the corpora alone need no setup",
			reasons: []string{"the AEP conformance corpora are not at ../x: set AEP_CONFORMANCE_DIR to an AEP checkout"},
			want:    "devtest: 1 of 4 tests skipped (1 for want of the AEP corpora); to run them: AEP_CONFORMANCE_DIR=/path/to/agent-event-protocol go run ./internal/devtest ./...",
		},
		{
			name:    "a reason devtest does not know is quoted, counted once per test",
			reasons: []string{"takes 35 s; CI runs it", "takes 35 s; CI runs it", "Debian's Chromium is missing: apt-get install chromium"},
			want:    "devtest: 3 of 4 tests skipped (1 for want of Chromium; 2: takes 35 s; CI runs it); to run them: .ci/setup && go run ./internal/devtest ./...",
		},
		{
			name:    "only unknown reasons: no command to offer",
			reasons: []string{"no pseudo-terminal on this machine: open /dev/ptmx: no such file"},
			want:    "devtest: 1 of 4 tests skipped (1: no pseudo-terminal on this machine: open /dev/ptmx: no such file); see why with -v",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReport(&bytes.Buffer{}, false)
			r.tests = 4
			for _, why := range tt.reasons {
				r.skips = append(r.skips, skip{pkg: "p", test: "T", reason: why})
			}
			if diff := cmp.Diff(tt.want, r.summary([]string{"./..."})); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReasonIsTheSkipMessage reads a skip's reason from a test's output
// as test2json reports it, whether it comes before or after the SKIP
// line, and for a subtest.
func TestReasonIsTheSkipMessage(t *testing.T) {
	events := []event{
		{Action: "output", Test: "TestA", Output: "=== RUN   TestA\n"},
		{Action: "output", Test: "TestA", Output: "    a_test.go:5: first a log\n"},
		{Action: "output", Test: "TestA", Output: "    a_test.go:6: then the reason: with a colon\n"},
		{Action: "output", Test: "TestA", Output: "--- SKIP: TestA (0.00s)\n"},
		{Action: "output", Test: "TestB/sub", Output: "    --- SKIP: TestB/sub (0.00s)\n"},
		{Action: "output", Test: "TestB/sub", Output: "        b_test.go:9: the subtest's reason\n"},
	}
	for test, want := range map[string]string{"TestA": "then the reason: with a colon", "TestB/sub": "the subtest's reason", "TestC": "no reason given"} {
		if got := reason(events, test); got != want {
			t.Errorf("reason of %s: got %q; want %q", test, got, want)
		}
	}
}

// TestWithTimeout checks that a run gets the default bound unless its
// arguments name one, in any of go test's spellings.
func TestWithTimeout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"./..."}, []string{defaultTimeout, "./..."}},
		{[]string{"-race", "-count=1", "./..."}, []string{defaultTimeout, "-race", "-count=1", "./..."}},
		{[]string{"-timeout", "1h", "./..."}, []string{"-timeout", "1h", "./..."}},
		{[]string{"-timeout=30s", "./x"}, []string{"-timeout=30s", "./x"}},
		{[]string{"--timeout=30s"}, []string{"--timeout=30s"}},
		{[]string{"-test.timeout=2m", "./x"}, []string{"-test.timeout=2m", "./x"}},
		{nil, []string{defaultTimeout}},
		{[]string{"-run", "timeout", "./x"}, []string{defaultTimeout, "-run", "timeout", "./x"}},
	} {
		if diff := cmp.Diff(tc.want, withTimeout(tc.args)); diff != "" {
			t.Errorf("withTimeout(%q) (-want +got):\n%s", tc.args, diff)
		}
	}
}
