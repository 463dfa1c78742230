package aep

import (
	"encoding/json"
	"fmt"
)

// Downlevel rewrites e for a hop whose capture ceiling is ceiling
// (AEP-0001 §8.2, AEP-0002 §5.1):
//   - an event at or below the ceiling passes unchanged;
//   - otherwise every payload field whose x-aep-capture level exceeds the new
//     level is pruned, nested paths included;
//   - the [metadata*] exception fields (prompt, option, field and choice
//     labels, answer values) degrade structurally below redacted, because a
//     hop has no source context to synthesize or classify content;
//   - a full event never lands on redacted: a mechanical hop cannot mint the
//     redaction provenance claim (§8.2(e)), so it lands on metadata;
//   - a type the payload table does not know loses its data wholesale;
//   - at none, data is dropped.
//
// The returned event shares no mutable state with e.
func Downlevel(e Event, ceiling Capture) (Event, error) {
	e, _, err := downlevel(e, ceiling)
	return e, err
}

// DownlevelValid is Downlevel followed by Validate of its result, with
// the data decoded once instead of twice: the event, its checks and
// their errors are exactly those of the two calls one after the other.
// A failed Validate's error is a *ValidationError; a failed Downlevel's
// is not.
func DownlevelValid(e Event, ceiling Capture) (Event, error) {
	e, m, err := downlevel(e, ceiling)
	if err != nil {
		return Event{}, err
	}
	if err := e.validateEnvelope(); err != nil {
		return Event{}, err
	}
	if m == nil {
		return e, validatePayload(e.Type, e.EffectiveCapture(), e.Data)
	}
	return e, validatePayloadMap(e.Type, e.EffectiveCapture(), m)
}

// downlevel is Downlevel; when it rewrote the data, it also returns the
// decoded form of the new data (what decodeData(e.Data) returns), or nil
// when the caller must decode e.Data itself.
func downlevel(e Event, ceiling Capture) (Event, map[string]any, error) {
	in := e.EffectiveCapture()
	ceiling = ceiling.OrDefault()
	if in <= ceiling {
		return e, nil, nil
	}
	out := ceiling
	if out == CaptureRedacted && in == CaptureFull {
		out = CaptureMetadata // §8.2(e)
	}
	e.Capture = out
	e.Extensions = cloneExt(e.Extensions)
	s, known := payloads[e.Type]
	if out == CaptureNone || !known {
		e.Data = nil
		return e, nil, nil
	}
	m, err := decodeData(e.Data)
	if err != nil {
		return Event{}, nil, fmt.Errorf("down-leveling %s: data is not a JSON object: %w", e.ID, err)
	}
	if m == nil {
		return e, nil, nil
	}
	pruned := prune(s, m, out).(map[string]any)
	degraded := out < CaptureRedacted && hasExceptions(e.Type)
	if degraded {
		degradeExceptions(&e, pruned)
	}
	b, err := json.Marshal(pruned)
	if err != nil {
		return Event{}, nil, fmt.Errorf("down-leveling %s: %w", e.ID, err)
	}
	e.Data = b
	if degraded {
		// The degraded exceptions are strings built here (a synthesized
		// prompt may hold the subject's invalid UTF-8, which the encoding
		// replaces): only a decode of b says what b holds.
		return e, nil, nil
	}
	// Every value in pruned came from the decoder, so decoding b again
	// gives pruned back.
	return e, pruned, nil
}

func cloneExt(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	c := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// prune drops every member above level, following objects and arrays.
// Members the shape does not name default to metadata (AEP-0002 §5.1 rule 4).
func prune(s *shape, v any, level Capture) any {
	switch s.kind {
	case kObject:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(m))
		for k, mv := range m {
			ps, ok := s.props[k]
			if !ok {
				out[k] = mv
				continue
			}
			if ps.capture.OrDefault() > level && !ps.exc {
				continue
			}
			out[k] = prune(ps, mv, level)
		}
		return out
	case kArray:
		a, ok := v.([]any)
		if !ok || s.items == nil {
			return v
		}
		out := make([]any, len(a))
		for i, it := range a {
			out[i] = prune(s.items, it, level)
		}
		return out
	}
	return v
}

// degradeExceptions rewrites the [metadata*] fields for a level below
// redacted, where the hop holds no source context (AEP-0002 §5.3,
// AEP-0003 §9.2).
func degradeExceptions(e *Event, m map[string]any) {
	switch e.Type {
	case "attention.requested":
		kind, _ := m["kind"].(string)
		if _, ok := m["prompt"]; ok {
			m["prompt"] = SynthesizePrompt(e.Agent, kind, e.Subject)
		}
		degradeLabels(m["options"])
		if fields, ok := m["fields"].([]any); ok {
			for _, f := range fields {
				fm, ok := f.(map[string]any)
				if !ok {
					continue
				}
				if id, ok := fm["id"].(string); ok {
					fm["label"] = id
				}
				degradeLabels(fm["choices"])
			}
		}
	case "attention.answered", "control.attention.respond":
		ans, ok := m["answer"].(map[string]any)
		if !ok {
			return
		}
		vals, ok := ans["values"].(map[string]any)
		if !ok {
			return
		}
		// Without the field specs a hop cannot tell a choice id from free
		// text, so only numbers and booleans are kept (dropping more than
		// required is always legal, §8.2(b)).
		kept := map[string]any{}
		for k, v := range vals {
			switch v.(type) {
			case json.Number, bool, float64:
				kept[k] = v
			}
		}
		ans["values"] = kept
	}
}

// hasExceptions says whether degradeExceptions rewrites events of type t.
func hasExceptions(t string) bool {
	switch t {
	case "attention.requested", "attention.answered", "control.attention.respond":
		return true
	}
	return false
}

func degradeLabels(v any) {
	list, ok := v.([]any)
	if !ok {
		return
	}
	for _, it := range list {
		if om, ok := it.(map[string]any); ok {
			if id, ok := om["id"].(string); ok {
				om["label"] = id
			}
		}
	}
}

// SynthesizePrompt builds a metadata-level prompt from structural metadata
// only (AEP-0003 §9.2): "{agent} requests {kind}: {subject}".
func SynthesizePrompt(agent, kind, subject string) string {
	if subject == "" {
		return fmt.Sprintf("%s requests %s", agent, kind)
	}
	return fmt.Sprintf("%s requests %s: %s", agent, kind, subject)
}
