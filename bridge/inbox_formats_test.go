package bridge

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agenteventprotocol/aep-mcp-bridge/inbox"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// formatCase is one row of translate/testdata/formats.json.
type formatCase struct {
	Format string `json:"format"`
	Value  string `json:"value"`
}

// TestInboxFormatsAreTheBridges runs every case of the bridge's format
// table (translate/testdata/formats.json) through the inbox's own checks
// in Chromium, and requires the verdicts recorded in formats.golden; then
// thousands of values made by editing those cases, each compared with
// what translate says, message for message. The seed is fixed, so a
// failure repeats.
func TestInboxFormatsAreTheBridges(t *testing.T) {
	t.Parallel()
	var cases []formatCase
	b, err := os.ReadFile("../translate/testdata/formats.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	golden := goldenVerdicts(t, len(cases))
	all := append(append([]formatCase(nil), cases...), mutatedFormats(cases)...)

	ctx := newBrowser(t)
	srv := httptest.NewServer(inbox.Handler())
	defer srv.Close()
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#status")))
	page := eval[[]string](t, ctx, `(`+mustJSON(all)+`).map((c) => {
	  const e = Check.value({id: "v", type: "string", format: c.format}, c.value, true);
	  return e ? e.rule + ": " + e.reason : ""; })`)
	if len(page) != len(all) {
		t.Fatalf("the page gave %d verdicts for %d values", len(page), len(all))
	}
	wrong := 0
	for i, c := range all {
		bridge := translateVerdict(t, c)
		if i < len(cases) && (page[i] == "") != golden[i] {
			t.Errorf("%s %q: the page would %s; formats.golden records that the bridge would %s", c.Format, c.Value, verdict(page[i] == ""), verdict(golden[i]))
		}
		if page[i] != bridge {
			if wrong++; wrong <= 20 {
				t.Errorf("%s %q: the page says %q; the bridge says %q", c.Format, c.Value, page[i], bridge)
			}
		}
	}
	t.Logf("%d values (%d from the table), %d where the page differs from the bridge", len(all), len(cases), wrong)
}

func verdict(ok bool) string {
	if ok {
		return "accept"
	}
	return "refuse"
}

// goldenVerdicts reads the bridge's column of translate/testdata/formats.golden,
// one row per case of formats.json, in order: true for accept.
func goldenVerdicts(t *testing.T, n int) []bool {
	t.Helper()
	b, err := os.ReadFile("../translate/testdata/formats.golden")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| [a-z-]+ \\| `` .* `` \\| (?:accept|refuse) \\| (?:accept|refuse) \\| (accept|refuse) \\|")
	var out []bool
	for _, l := range strings.Split(string(b), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			out = append(out, m[1] == "accept")
		}
	}
	if len(out) != n {
		t.Fatalf("formats.golden has %d rows; formats.json has %d cases", len(out), n)
	}
	return out
}

// translateVerdict is the bridge's message for a value of a string field
// with the case's format, or "" when it takes it.
func translateVerdict(t *testing.T, c formatCase) string {
	t.Helper()
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "string", "format": c.Format}}})
	form, err := translate.Parse("", schema)
	if err != nil {
		t.Fatalf("format %q: %v", c.Format, err)
	}
	var ia *translate.InvalidAnswer
	if err := form.Validate(map[string]any{"v": c.Value}); errors.As(err, &ia) {
		return ia.Rule + ": " + ia.Reason
	} else if err != nil {
		t.Fatalf("%q: %v", c.Value, err)
	}
	return ""
}

// mutatedFormats edits each case with characters that matter to some
// format (separators, digits, case, look-alikes, spaces), 24 times: the
// generator and seed of translate's TestFormatsAgreeOnMutations, so the
// page is tried on the very values the bridge was tried on against both
// SDKs.
func mutatedFormats(seeds []formatCase) []formatCase {
	alphabet := []rune("tTzZ :/.@-+_%[]#?09aAfFgéſ\u212a\u00a0\u2028\t\n,;~!'()*=vx")
	r := rand.New(rand.NewPCG(20, 3))
	var out []formatCase
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
			out = append(out, formatCase{Format: s.Format, Value: string(v)})
		}
	}
	return out
}
