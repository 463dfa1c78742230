package translate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// formatCase is one row of testdata/formats.json.
type formatCase struct {
	Format string `json:"format"`
	Value  string `json:"value"`
	Note   string `json:"note,omitempty"`
}

// npmDir is where `npm ci --prefix internal/testpeers/npm` installs the
// TypeScript SDK, ajv and ajv-formats.
const npmDir = "../internal/testpeers/npm"

func loadFormatCases(t *testing.T) []formatCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "formats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []formatCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatalf("testdata/formats.json: %v", err)
	}
	return cases
}

// needNode stops t unless node and the npm test peers are installed.
func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node (Node.js 20 or later)", "install Node.js, then run npm ci --prefix internal/testpeers/npm (.ci/run does)")
	}
	if _, err := os.Stat(filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		testenv.Missing(t, "the npm test peers (the TypeScript SDK, ajv, ajv-formats)", "run npm ci --prefix internal/testpeers/npm (.ci/run does)")
	}
}

// tsVerdicts runs the cases through the TypeScript SDK's own validator
// in a node process (internal/testpeers/npm/formats.mjs).
func tsVerdicts(t *testing.T, cases []formatCase) []bool {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "formats.mjs")
	cmd.Dir = npmDir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node formats.mjs: %v\n%s", err, stderr.String())
	}
	var verdicts []bool
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(cases) {
		t.Fatalf("node formats.mjs printed %d verdicts for %d cases (%v): %.200s", len(verdicts), len(cases), err, out)
	}
	return verdicts
}

// goSDKVerdicts runs the cases through go-sdk's own check of an
// elicitation result: a go-sdk server calls ServerSession.Elicit with a
// one-field requestedSchema, and a go-sdk client answers it with the
// case's value. An error that is not the schema refusal fails the test.
func goSDKVerdicts(t *testing.T, cases []formatCase) []bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server := mcp.NewServer(&mcp.Implementation{Name: "formats", Version: "1"}, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "formats-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			i, err := strconv.Atoi(req.Params.Message)
			if err != nil || i < 0 || i >= len(cases) {
				return nil, fmt.Errorf("no case %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"v": cases[i].Value}}, nil
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	// 2025-11-25: the server sends elicitation/create and checks the
	// result in ServerSession.Elicit, go-sdk's one check of an elicitation
	// result on the server side.
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	verdicts := make([]bool, len(cases))
	for i, c := range cases {
		_, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: strconv.Itoa(i), RequestedSchema: oneField(c.Format)})
		switch {
		case err == nil:
			verdicts[i] = true
		case !strings.Contains(err.Error(), "does not match requested schema"):
			t.Fatalf("go-sdk: case %d (%s %q): %v", i, c.Format, c.Value, err)
		}
	}
	return verdicts
}

// oneField is the requestedSchema of a one-field form in format.
func oneField(format string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"v":{"type":"string","format":%q}},"required":["v"]}`, format))
}

// bridgeVerdicts runs the cases through translate: Parse and Validate,
// as an operator's answer is checked. A refusal for any rule but format
// fails the test.
func bridgeVerdicts(t *testing.T, cases []formatCase) []bool {
	t.Helper()
	forms := map[string]*Form{}
	verdicts := make([]bool, len(cases))
	for i, c := range cases {
		f := forms[c.Format]
		if f == nil {
			var err error
			if f, err = Parse("", oneField(c.Format)); err != nil {
				t.Fatal(err)
			}
			forms[c.Format] = f
		}
		err := f.Validate(map[string]any{"v": c.Value})
		var inv *InvalidAnswer
		switch {
		case err == nil:
			verdicts[i] = true
		case !errors.As(err, &inv) || inv.Rule != "format":
			t.Fatalf("bridge: case %d (%s %q): %v", i, c.Format, c.Value, err)
		}
	}
	return verdicts
}

func verdict(ok bool) string {
	if ok {
		return "accept"
	}
	return "refuse"
}

// formatTable renders the cases and verdicts as a Markdown table.
func formatTable(cases []formatCase, ts, gosdk, bridge []bool) string {
	var b strings.Builder
	b.WriteString("| format | case | TypeScript SDK | go-sdk | bridge | note |\n|---|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for i, c := range cases {
		fmt.Fprintf(&b, "| %s | `` %s `` | %s | %s | %s | %s |\n", c.Format, cell(quote(c.Value)),
			verdict(ts[i]), verdict(gosdk[i]), verdict(bridge[i]), cell(c.Note))
	}
	return b.String()
}

// quote quotes s as Go does, and also escapes each non-ASCII letter that
// case-folds to an ASCII one (U+212A KELVIN SIGN reads as K), so the
// table shows which is which.
func quote(s string) string {
	q := strconv.Quote(s)
	var b strings.Builder
	for _, r := range q {
		if r > unicode.MaxASCII && foldsToASCII(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func foldsToASCII(r rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f <= unicode.MaxASCII {
			return true
		}
	}
	return false
}

// TestFormatsAcceptWhatBothSDKsAccept runs every case of
// testdata/formats.json through the TypeScript SDK's validator (ajv and
// ajv-formats, in node), go-sdk's (in process) and the bridge's, and
// requires the bridge to accept exactly what both SDKs accept. The table
// is testdata/formats.golden (rewritten with -update) and, with -v, the
// test's log.
func TestFormatsAcceptWhatBothSDKsAccept(t *testing.T) {
	t.Parallel()
	needNode(t)
	cases := loadFormatCases(t)
	ts, gosdk, bridge := tsVerdicts(t, cases), goSDKVerdicts(t, cases), bridgeVerdicts(t, cases)
	for i, c := range cases {
		if want := ts[i] && gosdk[i]; bridge[i] != want {
			t.Errorf("%s %q: the bridge would %s; the TypeScript SDK would %s and go-sdk %s",
				c.Format, c.Value, verdict(bridge[i]), verdict(ts[i]), verdict(gosdk[i]))
		}
	}
	table := formatTable(cases, ts, gosdk, bridge)
	t.Logf("\n%s", table)
	golden := filepath.Join("testdata", "formats.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./translate -run %s -update to create it)", err, t.Name())
	}
	if string(want) != table {
		t.Errorf("the verdicts changed (-recorded +now); check the change, then run with -update:\n%s",
			textdiff.Unified("recorded", "now", string(want), table))
	}
}

// TestFormatPatternsAreAjvFormats checks that the email and URI patterns
// are ajv-formats' own, with each letter range spelled in both cases for
// the i flag.
func TestFormatPatternsAreAjvFormats(t *testing.T) {
	t.Parallel()
	needNode(t)
	src, err := os.ReadFile(filepath.Join(npmDir, "node_modules", "ajv-formats", "dist", "formats.js"))
	if err != nil {
		t.Fatal(err)
	}
	both := strings.NewReplacer("a-z", "a-zA-Z", "0-9a-f", "0-9a-fA-F")
	for _, tc := range []struct{ name, re, ours string }{
		{"uri", `(?m)^const URI = /(.*)/i;$`, uriPattern},
		{"email", `(?m)^    email: /(.*)/i,$`, emailPattern},
	} {
		m := regexp.MustCompile(tc.re).FindSubmatch(src)
		if m == nil {
			t.Fatalf("ajv-formats' formats.js has no %s pattern where this test looks (%s); has it changed?", tc.name, tc.re)
		}
		if want := both.Replace(string(m[1])); want != tc.ours {
			t.Errorf("%s: the pattern is not ajv-formats':\n%s", tc.name, textdiff.Unified("ajv-formats", "translate", want+"\n", tc.ours+"\n"))
		}
	}
}

// TestFormatsAgreeOnMutations goes beyond the table: thousands of values
// made by editing its cases with characters that matter to some format
// (separators, digits, case, look-alikes, spaces), each checked as in
// TestFormatsAcceptWhatBothSDKsAccept. The seed is fixed, so a failure
// repeats.
func TestFormatsAgreeOnMutations(t *testing.T) {
	t.Parallel()
	needNode(t)
	seeds := loadFormatCases(t)
	alphabet := []rune("tTzZ :/.@-+_%[]#?09aAfFgéſ\u212a\u00a0\u2028\t\n,;~!'()*=vx")
	r := rand.New(rand.NewPCG(20, 3))
	var cases []formatCase
	for _, s := range seeds {
		for range 24 {
			v := []rune(s.Value)
			for range 1 + r.IntN(3) {
				i := 0
				if len(v) > 0 {
					i = r.IntN(len(v) + 1)
				}
				c := alphabet[r.IntN(len(alphabet))]
				switch op := r.IntN(3); {
				case op == 0 || len(v) == 0 || i == len(v):
					v = append(v[:i:i], append([]rune{c}, v[i:]...)...)
				case op == 1:
					v = append(v[:i:i], v[i+1:]...)
				default:
					v[i] = c
				}
			}
			cases = append(cases, formatCase{Format: s.Format, Value: string(v)})
		}
	}
	ts, gosdk, bridge := tsVerdicts(t, cases), goSDKVerdicts(t, cases), bridgeVerdicts(t, cases)
	accepted, wrong := 0, 0
	for i, c := range cases {
		want := ts[i] && gosdk[i]
		if want {
			accepted++
		}
		if bridge[i] != want {
			if wrong++; wrong <= 20 {
				t.Errorf("%s %q: the bridge would %s; the TypeScript SDK would %s and go-sdk %s",
					c.Format, c.Value, verdict(bridge[i]), verdict(ts[i]), verdict(gosdk[i]))
			}
		}
	}
	t.Logf("%d values, %d accepted by both SDKs, %d where the bridge differs", len(cases), accepted, wrong)
}
