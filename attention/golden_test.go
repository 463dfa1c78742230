package attention

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestKitchenSinkGolden translates the full 2025-11-25 schema that
// server-everything's trigger-elicitation-request sends, at both ceilings.
func TestKitchenSinkGolden(t *testing.T) {
	b, err := os.ReadFile("../translate/testdata/everything.elicitation.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	form, err := translate.Parse(p.Message, p.RequestedSchema)
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
			path := filepath.Join("testdata", "everything."+c.String()+".golden.json")
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
