package attention

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/fixture"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

var update = flag.Bool("update", false, "rewrite the golden files under the repository's testdata/golden")

// TestKitchenSinkGolden translates the full 2025-11-25 schema that
// server-everything's trigger-elicitation-request sends, at both ceilings.
func TestKitchenSinkGolden(t *testing.T) {
	msg, schema := fixture.KitchenSink(t)
	form, err := translate.Parse(msg, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []aep.Capture{aep.CaptureRedacted, aep.CaptureMetadata} {
		t.Run(c.String(), func(t *testing.T) {
			d, _ := FormRequest(form, RequestOptions{Agent: "aep-mcp-bridge", Ceiling: c, RespondVia: []string{"control"}})
			got, err := json.MarshalIndent(d, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := fixture.Path("golden/everything." + c.String() + ".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from the golden file:\n%s", path, got)
			}
		})
	}
}
