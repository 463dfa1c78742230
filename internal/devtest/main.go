// Command devtest is the repository's test command:
//
//	go run ./internal/devtest ./...
//
// It runs go test with the arguments it is given (any go test flags and
// packages), prints what go test prints (a line per package, and the
// output of the tests that failed; everything with -v), and ends with one
// line saying how many tests skipped, for want of what, and the one
// command that runs them. Plain go test hides that: in package-list mode
// it prints nothing of a package that passed, so a run where fifty tests
// skipped for want of the npm test peers or Chromium reads as all "ok".
//
// It exits with go test's status. It reads go test's -json stream (the
// test2json events), so -json itself is taken as a request to print that
// stream unchanged, with the summary line on stderr.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// maxEventLine bounds one line of go test's -json stream.
const maxEventLine = 64 << 20

// run runs go test with args and reports to stdout; it returns the exit
// status.
func run(args []string, stdout, stderr io.Writer) int {
	return runLimited(args, stdout, stderr, maxEventLine)
}

// defaultTimeout bounds one package's test binary when the arguments do
// not. go test's own default, 10 minutes, is what the slowest packages
// (the browser, the conformance suite, the fleet) take under -race on a
// busy 2-core machine, so a run there would die of the bound, not of a
// failure; a hung test is still stopped, with every goroutine's stack.
const defaultTimeout = "-timeout=25m"

// withTimeout puts defaultTimeout before args unless they set a timeout.
func withTimeout(args []string) []string {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "timeout" || name == "test.timeout") {
			return args
		}
	}
	return append([]string{defaultTimeout}, args...)
}

// runLimited is run with a bound on one line of go test's events.
func runLimited(args []string, stdout, stderr io.Writer, maxLine int) int {
	rawJSON := slices.Contains(args, "-json")
	goArgs := append([]string{"test", "-json"}, withTimeout(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "-json" }))...)
	cmd := exec.Command("go", goArgs...)
	cmd.Stderr = stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "devtest:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "devtest: running go test:", err)
		return 1
	}
	out := stdout
	if rawJSON {
		out = io.Discard
	}
	r := newReport(out, slices.Contains(args, "-v") || slices.Contains(args, "-test.v"))
	var raw io.Writer
	if rawJSON {
		raw = stdout
	}
	readErr := r.read(events, raw, maxLine)
	// Wait closes the pipe only once go test has exited, and go test
	// cannot exit while its writes wait for room in the pipe: whatever
	// read left is read to the end first.
	io.Copy(io.Discard, events)
	code := 0
	if err := cmd.Wait(); err != nil {
		code = 1
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		}
	}
	switch {
	case errors.Is(readErr, bufio.ErrTooLong):
		fmt.Fprintf(stderr, "devtest: a line of go test's events is over %d bytes, so nothing after it was reported; run go test %s to see it all\n",
			maxLine, strings.Join(args, " "))
		code = max(code, 1)
	case readErr != nil:
		fmt.Fprintln(stderr, "devtest: reading go test's events:", readErr)
		code = max(code, 1)
	}
	summary := stdout
	if rawJSON {
		summary = stderr
	}
	fmt.Fprintln(summary, r.summary(args))
	return code
}
