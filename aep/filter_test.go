package aep

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/corpus"
)

func TestAttrMatchCorpus(t *testing.T) {
	var file struct {
		Match []struct {
			Name   string          `json:"name"`
			Filter json.RawMessage `json:"filter"`
			Event  json.RawMessage `json:"event"`
			Match  bool            `json:"match"`
		} `json:"match"`
		Invalid []struct {
			Name   string          `json:"name"`
			Filter json.RawMessage `json:"filter"`
		} `json:"invalid"`
	}
	corpus.LoadJSON(t, "attr-match/cases.json", &file)
	passed := 0
	for _, c := range file.Match {
		t.Run("match/"+c.Name, func(t *testing.T) {
			f, err := ParseFilter(c.Filter)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			var e Event
			if err := json.Unmarshal(c.Event, &e); err != nil {
				t.Fatal(err)
			}
			if got := f.Match(&e); got != c.Match {
				t.Fatalf("Match = %v; want %v", got, c.Match)
			}
			passed++
		})
	}
	for _, c := range file.Invalid {
		t.Run("invalid/"+c.Name, func(t *testing.T) {
			_, err := ParseFilter(c.Filter)
			var fe *FilterError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v; want the filter refused (fail closed)", err)
			}
			passed++
		})
	}
	t.Logf("attr-match %d/%d", passed, len(file.Match)+len(file.Invalid))
}

func FuzzFilter(f *testing.F) {
	f.Add(`{"type":["attention.*","error.*"],"severity":{"gte":"notice"}}`, `{"aep":"0.1","id":"x","type":"attention.requested","severity":"notice"}`)
	f.Add(`{"acmeregion":"eu-1","epoch":0}`, `{"type":"run.started","acmeregion":"eu-1"}`)
	f.Fuzz(func(t *testing.T, filter, event string) {
		fl, err := ParseFilter([]byte(filter))
		if err != nil {
			var fe *FilterError
			if !errors.As(err, &fe) {
				t.Fatalf("ParseFilter returned %T", err)
			}
			return
		}
		var e Event
		if json.Unmarshal([]byte(event), &e) == nil {
			fl.Match(&e)
		}
	})
}
