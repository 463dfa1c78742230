package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// event is one line of go test -json (cmd/test2json, and the build
// events of go test).
type event struct {
	Action     string // start, run, pause, cont, pass, fail, skip, output, bench; build-output, build-fail
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail
}

// pkg is what a package printed until it ends.
type pkg struct {
	events []event
	failed map[string]bool // tests that failed
	ended  map[string]bool // tests that passed, failed or skipped
}

// skip is one test that skipped, and the first line of its reason.
type skip struct {
	pkg, test, reason string
}

// report turns go test's events into what go test prints, package by
// package as each ends, and remembers what skipped.
type report struct {
	out     io.Writer
	verbose bool
	pkgs    map[string]*pkg
	skips   []skip
	// tests counts the tests (and subtests) that ran to an end.
	tests int
}

func newReport(out io.Writer, verbose bool) *report {
	return &report{out: out, verbose: verbose, pkgs: map[string]*pkg{}}
}

// read takes events from r until EOF, copying each line to raw when it
// is not nil; it stops at a line over maxLine bytes, with an error.
func (r *report) read(events io.Reader, raw io.Writer, maxLine int) error {
	sc := bufio.NewScanner(events)
	sc.Buffer(make([]byte, min(64*1024, maxLine)), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if raw != nil {
			fmt.Fprintf(raw, "%s\n", line)
		}
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			// Not an event (go test prints some errors on stdout): pass it on.
			fmt.Fprintf(r.out, "%s\n", line)
			continue
		}
		r.add(ev)
	}
	return sc.Err()
}

// add takes one event.
func (r *report) add(ev event) {
	switch ev.Action {
	case "build-output":
		io.WriteString(r.out, ev.Output) // the compiler's errors, as go test prints them
		return
	case "build-fail":
		return
	}
	p := r.pkgs[ev.Package]
	if p == nil {
		p = &pkg{failed: map[string]bool{}, ended: map[string]bool{}}
		r.pkgs[ev.Package] = p
	}
	p.events = append(p.events, ev)
	if ev.Test == "" {
		switch ev.Action {
		case "pass", "fail", "skip":
			r.flush(ev.Package, p)
			delete(r.pkgs, ev.Package)
		}
		return
	}
	switch ev.Action {
	case "pass", "fail", "skip":
		p.ended[ev.Test] = true
	}
	switch ev.Action {
	case "pass":
		r.tests++
	case "fail":
		r.tests++
		p.failed[ev.Test] = true
	case "skip":
		r.tests++
		r.skips = append(r.skips, skip{pkg: ev.Package, test: ev.Test, reason: reason(p.events, ev.Test)})
	}
}

// flush prints a package that ended: with -v everything it printed;
// otherwise, as go test does, its result line, and when it failed the
// output of its failed tests and its own lines, and that of the tests
// that never ended: go test's -timeout panic and goroutine dump, which
// say which test hung, come as the running test's output, and that test
// gets no result.
func (r *report) flush(name string, p *pkg) {
	failed := p.events[len(p.events)-1].Action == "fail"
	for _, ev := range p.events {
		if ev.Action != "output" {
			continue
		}
		switch {
		case r.verbose:
		case ev.Test == "":
			if !failed && !resultLine(ev.Output) {
				continue
			}
		case !failed || (p.ended[ev.Test] && !p.failed[ev.Test]) || marker(ev.Output):
			continue
		}
		io.WriteString(r.out, ev.Output)
	}
}

// resultLine reports whether a package's line is its result (ok, ?,
// FAIL with the package's name), the line go test prints of a package
// that passed.
func resultLine(s string) bool {
	return strings.HasPrefix(s, "ok  \t") || strings.HasPrefix(s, "?   \t") || strings.HasPrefix(s, "FAIL\t")
}

// marker reports whether a test's line is test2json's progress marker,
// which go test prints only with -v.
func marker(s string) bool {
	for _, m := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(s, m) {
			return true
		}
	}
	return false
}

// logLine is a t.Log or t.Skip line: indented, then FILE.go:LINE: text.
var logLine = regexp.MustCompile(`^\s+[^\s:]+\.go:\d+: (.*)$`)

// reason is the first line of the last message test logged: its t.Skip
// reason.
func reason(events []event, test string) string {
	found := ""
	for _, ev := range events {
		if ev.Test != test || ev.Action != "output" {
			continue
		}
		if m := logLine.FindStringSubmatch(strings.TrimRight(ev.Output, "\n")); m != nil {
			found = m[1]
		}
	}
	if found == "" {
		return "no reason given"
	}
	return found
}

// A need is something tests take from the machine, recognised in their
// skip reasons, and how to get it: setup is .ci/setup's to install; the
// corpora are a folder the tests are pointed at.
type need struct {
	name  string
	match *regexp.Regexp
	setup bool
}

var needs = []need{
	{name: "the MCP conformance suite", match: regexp.MustCompile(`internal/testpeers/conformance|Node\.js 22`), setup: true},
	{name: "the npm test peers", match: regexp.MustCompile(`internal/testpeers/npm|peer is not installed here`), setup: true},
	{name: "Chromium", match: regexp.MustCompile(`(?i)chromium`), setup: true},
	{name: "the AEP corpora", match: regexp.MustCompile(`AEP_CONFORMANCE_DIR`)},
}

// setupCommand installs every need with setup set (CI runs it).
const setupCommand = ".ci/setup"

// corporaVar names the AEP corpora's folder.
const corporaVar = "AEP_CONFORMANCE_DIR=/path/to/agent-event-protocol"

// summary is the run's last line: how many tests skipped, for want of
// what, and the command that runs them.
func (r *report) summary(args []string) string {
	if len(r.skips) == 0 {
		return fmt.Sprintf("devtest: %d tests ran; none skipped", r.tests)
	}
	counts := map[string]int{}
	others := map[string]int{} // reason → tests
	setup, corpora := false, false
	for _, s := range r.skips {
		i := slices.IndexFunc(needs, func(n need) bool { return n.match.MatchString(s.reason) })
		if i < 0 {
			others[s.reason]++
			continue
		}
		counts[needs[i].name]++
		setup = setup || needs[i].setup
		corpora = corpora || !needs[i].setup
	}
	var parts []string
	for _, n := range needs {
		if c := counts[n.name]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d for want of %s", c, n.name))
		}
	}
	for _, o := range slices.Sorted(maps.Keys(others)) {
		parts = append(parts, fmt.Sprintf("%d: %s", others[o], o))
	}
	line := fmt.Sprintf("devtest: %d of %d tests skipped (%s)", len(r.skips), r.tests, strings.Join(parts, "; "))
	if !setup && !corpora {
		return line + "; see why with -v"
	}
	cmd := ""
	if setup {
		cmd += setupCommand + " && "
	}
	if corpora {
		cmd += corporaVar + " "
	}
	cmd += "go run ./internal/devtest " + strings.Join(args, " ")
	return line + "; to run them: " + cmd
}
