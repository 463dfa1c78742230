package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/agenteventprotocol/aep-mcp-bridge/script"
)

// loadAnswers reads and validates an --answers file.
func loadAnswers(path string) (*script.Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the answers file: %w", err)
	}
	return script.Load(path, b)
}

// runAnswersFrom is `aep-mcp-bridge answers-from LOG.jsonl [...]`.
func runAnswersFrom(_ context.Context, args []string, s stdio) error {
	stdout, stderr := s.out, s.err
	fs := newFlagSet("answers-from", "answers-from LOG.jsonl [...] > answers.json",
		"Writes, to stdout, an --answers file with one rule per question answered in the session logs,\n"+
			"so a run can be replayed without operators (aep-mcp-bridge --answers FILE --answers-only -- COMMAND).")
	if err := parseArgs(fs, args, s); err != nil {
		return err
	}
	args = fs.Args()
	if len(args) == 0 {
		fmt.Fprintln(stderr, "aep-mcp-bridge answers-from: give one or more session logs (LOG.jsonl)")
		fs.Usage()
		return errUsage
	}
	logs := map[string]io.Reader{}
	for _, p := range args {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("opening the session log: %w", err)
		}
		defer f.Close()
		logs[p] = f
	}
	file, err := script.FromLogs(logs, args, func(s string) { fmt.Fprintln(stderr, "aep-mcp-bridge answers-from:", s) })
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(file)
}
