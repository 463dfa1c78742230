package mcpconformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// check is one conformance check as the suite records it in checks.json.
type check struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// verdict is a scenario's outcome, ordered from best to worst.
type verdict int

const (
	pass    verdict = iota // no check failed or warned (and a client exited 0)
	warn                   // a check warned, none failed
	fail                   // a check failed, or the client failed
	missing                // the suite recorded no checks: it never ran the scenario
)

func (v verdict) String() string { return [...]string{"pass", "warn", "FAIL", "not run"}[v] }

// result is what the suite recorded of one scenario.
type result struct {
	checks []check
	// clientExit is the client's exit status in a client scenario (-1
	// when it did not finish), or the suite's for a client scenario it
	// ran alone, which counts the client's; 0 for server scenarios.
	clientExit int
	// log is the suite's output, for the message of a failure.
	log string
}

func (r result) verdict() verdict {
	if len(r.checks) == 0 {
		return missing
	}
	v := pass
	for _, c := range r.checks {
		switch c.Status {
		case "FAILURE":
			return fail
		case "WARNING":
			v = warn
		}
	}
	if r.clientExit != 0 {
		return fail
	}
	return v
}

// counts counts the checks of the given statuses, by id.
func (r result) counts(statuses ...string) map[string]int {
	n := map[string]int{}
	for _, c := range r.checks {
		if slices.Contains(statuses, c.Status) {
			n[c.ID]++
		}
	}
	return n
}

// problems lists the checks that failed or warned, with their messages.
func (r result) problems() []string {
	var p []string
	for _, c := range r.checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			why := c.ErrorMessage
			if why == "" {
				why = "(no message) details: " + tail(string(c.Details))
			}
			p = append(p, fmt.Sprintf("%s %s: %s", c.ID, c.Status, why))
		}
	}
	if r.clientExit != 0 {
		p = append(p, fmt.Sprintf("the client's exit status was %d (-1: it did not finish)", r.clientExit))
	}
	return p
}

// runSuite runs release ("0.1" or "0.2") of the suite with args, saving
// its results in a folder of the test's, and returns its exit status,
// its output and what it recorded, by scenario, in the order it ran
// them.
func runSuite(ctx context.Context, t *testing.T, release string, env []string, args ...string) (int, string, map[string]scenarioRun, []string) {
	t.Helper()
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, node(t), append(append([]string{suite(t, release)}, args...), "--output-dir", out)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running the conformance suite %s %v: %v\n%s", release, args, err, b)
	}
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite %s %v did not finish within its time: %v\n%s", release, args, ctx.Err(), b)
	}
	recorded, err := readResults(out)
	if err != nil {
		t.Fatalf("reading what the suite %s %v recorded: %v\n%s", release, args, err, b)
	}
	var order []string
	for _, m := range runningScenario.FindAllStringSubmatch(string(b), -1) {
		order = append(order, m[1])
	}
	return code, string(b), recorded, order
}

var (
	// runningScenario is how the suite announces each server scenario.
	runningScenario = regexp.MustCompile(`=== Running scenario: (\S+) ===`)
	// resultDir is the name of a scenario's results folder:
	// [server-]SCENARIO-TIMESTAMP.
	resultDir = regexp.MustCompile(`^(?:server-)?(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)
)

// scenarioRun is what the suite kept of one scenario: its checks, and
// for a client scenario what the client printed (with the bridge's log,
// when the bridge ran in its path).
type scenarioRun struct {
	checks []check
	output string
}

// readResults reads every checks.json the suite wrote under dir (README
// "Test Results"), and a client's stdout.txt and stderr.txt beside it,
// by scenario.
func readResults(dir string) (map[string]scenarioRun, error) {
	recorded := map[string]scenarioRun{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(path))
		m := resultDir.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return fmt.Errorf("results folder %q is not named SCENARIO-TIMESTAMP", rel)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var run scenarioRun
		if err := json.Unmarshal(b, &run.checks); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, f := range []string{"stdout.txt", "stderr.txt"} {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), f)); err == nil && len(b) > 0 {
				run.output += fmt.Sprintf("the client's %s:\n%s\n", f, b)
			}
		}
		if _, dup := recorded[m[1]]; dup {
			return fmt.Errorf("scenario %s was recorded twice", m[1])
		}
		recorded[m[1]] = run
		return nil
	})
	return recorded, err
}
