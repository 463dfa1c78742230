package translate

import (
	"fmt"
	"maps"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Content converts validated values into the typed content of an accepted
// ElicitResult, and keys outside the schema never reach the server. Call
// Validate first. Numbers never pass through a float64:
//   - an integer field gets the canonical digits of the answer's exact
//     value (1e18 → 1000000000000000000, -0 → 0, 1.0 → 1), because servers
//     decode integer fields into integer types, which read plain digits;
//   - a number field gets the number as the operator wrote it (a Go float
//     as its shortest round-tripping text);
//   - a multi-select becomes []string.
func (f *Form) Content(values map[string]any) map[string]any {
	out := make(map[string]any, len(values))
	for _, fld := range f.Fields {
		v, ok := values[fld.ID]
		if !ok {
			continue
		}
		switch fld.Kind {
		case KindInteger:
			x, _ := exactNumber(v)
			out[fld.ID] = x.IntegerText()
		case KindNumber:
			x, _ := exactNumber(v)
			out[fld.ID] = x.Text
		case KindMultiSelect:
			items, _ := stringItems(v)
			out[fld.ID] = append([]string{}, items...)
		default:
			out[fld.ID] = v
		}
	}
	return out
}

// Outcome is what an attention request ended with, before it becomes an
// ElicitResult.
type Outcome int

// Outcomes (DESIGN decision 7).
const (
	OutcomeAccept Outcome = iota + 1
	OutcomeDecline
	OutcomeCancel
)

// Action returns the MCP action of the outcome.
func (o Outcome) Action() mcp.ElicitationResponseAction {
	switch o {
	case OutcomeAccept:
		return mcp.ElicitationResponseActionAccept
	case OutcomeDecline:
		return mcp.ElicitationResponseActionDecline
	}
	return mcp.ElicitationResponseActionCancel
}

// Decision is a validated answer: its outcome, the typed content for the
// server (accept only) and the answer as it was applied, for the
// attention.answered event (AEP-0002 §5.3: the recorded answer states what
// was actually applied).
type Decision struct {
	Outcome Outcome
	Content map[string]any
	Applied aep.Answer
}

// Result returns the ElicitResult for the decision. Content is present
// only for an accepted form answer: MCP 2025-11-25 omits it for URL mode
// (and for decline and cancel), so an accept without content (a URL
// question) encodes as {"action":"accept"}, never "content":null.
func (d Decision) Result() *mcp.ElicitationResult {
	r := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: d.Outcome.Action()}}
	if d.Outcome == OutcomeAccept && d.Content != nil {
		r.Content = d.Content
	}
	return r
}

// CancelResult is the ElicitResult sent when a question times out or is
// withdrawn by the operator side.
func CancelResult() *mcp.ElicitationResult {
	return Decision{Outcome: OutcomeCancel}.Result()
}

// Decide maps an operator's answer onto an outcome (DESIGN decision 7,
// AEP-0008):
//   - values → accept, after Validate;
//   - option "accept" → accept with the values given (possibly none);
//   - option "decline", or text "decline" (trimmed, any case) → decline;
//   - option "cancel", or text "cancel" → cancel.
//
// Anything else is an *InvalidAnswer and the request stays pending.
func (f *Form) Decide(a aep.Answer) (Decision, error) {
	option := a.Option
	if option == "" && a.Text != "" {
		// AEP-0008: text that names an option is that option. A form's
		// implicit options are accept (with values), decline and cancel.
		switch t := normalizeText(a.Text); t {
		case "decline", "cancel":
			option = t
		default:
			return Decision{}, &InvalidAnswer{Rule: "AEP-0008", Reason: `a form is answered with values; text is accepted only as "decline" or "cancel"`}
		}
		if a.Values != nil {
			return Decision{}, &InvalidAnswer{Rule: "answer", Reason: "text and values together are ambiguous"}
		}
	}
	switch option {
	case "":
		if a.Values == nil {
			return Decision{}, &InvalidAnswer{Rule: "answer", Reason: `an answer needs values, or option "decline" or "cancel"`}
		}
		fallthrough
	case "accept":
		values := a.Values
		if values == nil {
			values = map[string]any{}
		}
		if err := f.Validate(values); err != nil {
			return Decision{}, err
		}
		// AEP-0002 §5.3: the recorded answer states what was applied,
		// which is the content the server receives.
		content := f.Content(values)
		return Decision{Outcome: OutcomeAccept, Content: content, Applied: aep.Answer{Values: maps.Clone(content)}}, nil
	case "decline", "cancel":
		if a.Values != nil {
			return Decision{}, &InvalidAnswer{Rule: "answer", Reason: fmt.Sprintf("option %q takes no values", option)}
		}
		o := OutcomeDecline
		if option == "cancel" {
			o = OutcomeCancel
		}
		return Decision{Outcome: o, Applied: aep.Answer{Option: option}}, nil
	}
	return Decision{}, &InvalidAnswer{Rule: "answer", Reason: `unknown option; a form accepts "accept", "decline" or "cancel"`}
}

func normalizeText(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
