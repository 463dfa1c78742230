package translate

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Content converts validated values into the typed content of an accepted
// ElicitResult: integers stay integers (int64), numbers keep the precision
// they were written with, multi-selects become []string, and keys outside
// the schema never reach the server. Call Validate first.
func (f *Form) Content(values map[string]any) map[string]any {
	out := make(map[string]any, len(values))
	for _, fld := range f.Fields {
		v, ok := values[fld.ID]
		if !ok {
			continue
		}
		switch fld.Kind {
		case KindInteger:
			x, _, _ := numberValue(v)
			out[fld.ID] = int64(math.Round(x))
		case KindNumber:
			if n, ok := v.(json.Number); ok {
				out[fld.ID] = n
			} else {
				x, _, _ := numberValue(v)
				out[fld.ID] = x
			}
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

// Result returns the ElicitResult for the decision.
func (d Decision) Result() *mcp.ElicitationResult {
	r := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: d.Outcome.Action()}}
	if d.Outcome == OutcomeAccept {
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
		return Decision{Outcome: OutcomeAccept, Content: f.Content(values), Applied: aep.Answer{Values: values}}, nil
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
