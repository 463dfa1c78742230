package aep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// kind is the JSON type a payload field must have.
type kind int

const (
	kAny kind = iota
	kObject
	kString
	kInteger // non-negative unless allowNeg
	kNumber
	kBool
	kArray
	kObjectOrString
	kDateTime
)

// shape is one payload field's contract: its JSON type, its required members,
// its enum, and its x-aep-capture level (AEP-0002 §5.1). The per-type table
// below is written from AEP-0002 §5.2 to §5.4.
type shape struct {
	kind     kind
	capture  Capture // minimum level at which the field may be present; 0 = metadata
	exc      bool    // a [metadata*] exception field: degraded structurally, never dropped
	enum     []string
	required []string
	props    map[string]*shape
	items    *shape
	nonNeg   bool
}

type member struct {
	name string
	s    *shape
	req  bool
}

func obj(ms ...member) *shape {
	s := &shape{kind: kObject, props: map[string]*shape{}}
	for _, m := range ms {
		s.props[m.name] = m.s
		if m.req {
			s.required = append(s.required, m.name)
		}
	}
	return s
}

func opt(name string, s *shape) member { return member{name: name, s: s} }
func req(name string, s *shape) member { return member{name: name, s: s, req: true} }

func str() *shape                { return &shape{kind: kString} }
func integer() *shape            { return &shape{kind: kInteger, nonNeg: true} }
func signedInt() *shape          { return &shape{kind: kInteger} }
func number() *shape             { return &shape{kind: kNumber} }
func nonNegNumber() *shape       { return &shape{kind: kNumber, nonNeg: true} }
func boolean() *shape            { return &shape{kind: kBool} }
func anyObj() *shape             { return &shape{kind: kObject} }
func enum(vals ...string) *shape { return &shape{kind: kString, enum: vals} }
func arr(items *shape) *shape    { return &shape{kind: kArray, items: items} }
func (s *shape) at(c Capture) *shape {
	s.capture = c
	return s
}
func (s *shape) exception() *shape {
	s.exc = true
	return s
}

func toolRef() *shape { return obj(req("name", str()), opt("call_id", str())) }
func errorInfo() *shape {
	return obj(opt("type", str()), opt("message", str().at(CaptureRedacted)))
}
func cost() *shape {
	return obj(req("currency", str()), opt("total", nonNegNumber()), opt("prompt", nonNegNumber()),
		opt("completion", nonNegNumber()), opt("cache", nonNegNumber()), opt("reasoning", nonNegNumber()))
}
func document() *shape {
	return obj(opt("id", str()), opt("score", number()), opt("content_redacted", str().at(CaptureRedacted)),
		opt("content", str().at(CaptureFull)), opt("metadata", anyObj()))
}
func answer() *shape {
	return obj(opt("option", str()), opt("text", str().at(CaptureRedacted)), opt("values", anyObj().exception()))
}

// FieldTypes are the field_spec types of AEP-0006.
var FieldTypes = []string{"string", "number", "boolean", "select"}

// fieldSpec is the field_spec shape. Of the bridge's extension members
// (FieldSpec), only the content ones are named: description and default
// are gated at redacted so a hop down-leveling to metadata drops them,
// while unnamed members default to metadata (AEP-0002 §5.1 rule 4). They
// take any JSON type, since other emitters' members are tolerated
// (AEP-0001 §6).
func fieldSpec() *shape {
	choice := obj(req("id", str()), req("label", str().exception()))
	return obj(req("id", str()), req("type", enum(FieldTypes...)), req("label", str().exception()),
		opt("required", boolean()), opt("multi", boolean()), opt("other", boolean()),
		opt("choices", arr(choice)), opt("min", number()), opt("max", number()),
		opt("description", (&shape{}).at(CaptureRedacted)), opt("default", (&shape{}).at(CaptureRedacted)))
}

var usageMembers = []member{opt("gen_ai.usage.input_tokens", integer()), opt("gen_ai.usage.output_tokens", integer())}

func with(base []member, ms ...member) []member { return append(append([]member{}, base...), ms...) }

// payloads is the per-type payload table (AEP-0002 §5.3, §5.4; AEP-0004 §3, §5).
var payloads = map[string]*shape{
	"session.started": obj(opt("label", str().at(CaptureRedacted)),
		opt("parent", obj(req("session", str()), opt("run", str()), opt("agent", str()))),
		opt("client", obj(req("name", str()), opt("version", str()))),
		opt("gen_ai.request.model", str()), opt("cwd", str().at(CaptureRedacted))),
	"session.ended": obj(opt("reason", enum("normal", "error", "timeout", "killed", "compaction")),
		opt("duration_ms", integer()), opt("runs", integer())),
	"session.compacted": obj(with(usageMembers, opt("trigger", str()), opt("strategy", str()),
		opt("estimated_token_count", integer()), opt("forgotten", integer()))...),
	"run.started": obj(with(usageMembers, opt("trigger", enum("user", "schedule", "agent", "control", "resume")),
		opt("prompt", str().at(CaptureRedacted)), opt("cost", cost()))...),
	"run.finished": obj(with(usageMembers, opt("duration_ms", integer()), opt("summary", str().at(CaptureRedacted)),
		opt("cost", cost()))...),
	"run.failed":        obj(req("reason", str()), opt("error", errorInfo()), opt("duration_ms", integer())),
	"run.cancelled":     obj(opt("by", enum("user", "control", "policy", "shutdown")), opt("reason", str().at(CaptureRedacted)), opt("duration_ms", integer())),
	"run.step.started":  obj(opt("name", str().at(CaptureRedacted)), opt("initial_num_steps", integer())),
	"run.step.finished": obj(opt("status", str())),
	"tool.requested": obj(req("tool", toolRef()), opt("args_digest", str()),
		opt("args_redacted", anyObj().at(CaptureRedacted)), opt("args", anyObj().at(CaptureFull))),
	"tool.completed": obj(with(usageMembers, req("tool", toolRef()), opt("duration_ms", integer()), opt("status", str()),
		opt("result_digest", str()), opt("result_redacted", (&shape{kind: kObjectOrString}).at(CaptureRedacted)),
		opt("result", (&shape{kind: kObjectOrString}).at(CaptureFull)), opt("cost", cost()))...),
	"tool.failed": obj(req("tool", toolRef()), req("error", errorInfo()), opt("duration_ms", integer())),
	"tool.denied": obj(req("tool", toolRef()), req("by", enum("policy", "user_setting", "runtime")), opt("rule", str())),
	"attention.requested": obj(req("kind", enum("permission", "input", "auth", "review", "form", "other")),
		req("prompt", str().exception()),
		opt("options", arr(obj(req("id", str()), req("label", str().exception())))),
		opt("fields", arr(fieldSpec())), opt("expires_at", &shape{kind: kDateTime}),
		opt("respond_via", arr(enum("control", "oob"))), opt("context", anyObj().at(CaptureFull))),
	"attention.routed":   obj(opt("to", str()), opt("via", str())),
	"attention.answered": obj(req("answer", answer()), opt("by", str()), opt("via", enum("control", "oob"))),
	"attention.resolved": obj(req("resolution", enum("answered", "auto", "dismissed")), opt("latency_ms", integer())),
	"attention.timeout":  obj(opt("after_ms", integer())),
	"control.accepted":   obj(),
	"control.rejected": obj(req("reason", enum("unsupported", "unauthorized", "busy", "refused", "invalid")),
		opt("detail", str().at(CaptureRedacted))),
	"control.attention.respond": obj(req("answer", answer())),
	"control.cancel":            obj(req("scope", enum("run", "session")), opt("reason", str().at(CaptureRedacted))),
	"control.pause":             obj(),
	"control.resume":            obj(),
	"agent.presence":            obj(req("state", enum("online", "offline", "busy"))),
	"agent.health":              obj(req("status", enum("ok", "degraded", "failing")), opt("detail", str().at(CaptureRedacted))),
	"agent.heartbeat":           obj(opt("tick", integer()), opt("interval_ms", integer())),
	"agent.idle":                obj(opt("since_ms", integer()), opt("reason", str())),
	"progress.status":           obj(opt("message", str().at(CaptureRedacted)), opt("phase", str()), opt("percent", nonNegNumber())),
	"progress.task.planned":     obj(opt("task", obj(opt("id", str()), opt("title", str().at(CaptureRedacted)))), opt("parent", str())),
	"progress.task.completed":   obj(opt("task", obj(opt("id", str()), opt("title", str().at(CaptureRedacted)))), opt("status", str())),
	"progress.artifact.produced": obj(opt("artifact", obj(opt("id", str()), opt("name", str().at(CaptureRedacted)),
		opt("mime", str()), opt("bytes", integer()), opt("uri", str().at(CaptureRedacted))))),
	"delegation.subagent.started": obj(opt("child", obj(opt("session", str()), opt("run", str()), opt("agent", str()))),
		opt("agent_type", str()), opt("role", str())),
	"delegation.subagent.stopped": obj(opt("child", obj(opt("session", str()), opt("run", str()), opt("agent", str()))),
		opt("agent_type", str()), opt("status", str()), opt("duration_ms", integer())),
	"error.raised":   obj(opt("error", errorInfo()), opt("code", str()), opt("fatal", boolean())),
	"state.snapshot": obj(opt("state", anyObj().at(CaptureRedacted)), opt("key", str()), opt("rev", integer())),
	"state.delta":    obj(opt("delta", arr(anyObj()).at(CaptureRedacted)), opt("key", str()), opt("rev", integer())),
	"resource.retrieval.requested": obj(opt("query", str().at(CaptureRedacted)), opt("query_digest", str()),
		opt("corpus", str()), opt("top_k", integer())),
	"resource.retrieval.returned": obj(opt("documents", arr(document())), opt("count", integer()),
		opt("corpus", str()), opt("duration_ms", integer())),
	"resource.retrieval.reranked": obj(opt("query", str().at(CaptureRedacted)), opt("query_digest", str()),
		opt("model", str()), opt("top_k", integer()), opt("input_documents", arr(document())),
		opt("output_documents", arr(document())), opt("count", integer()), opt("duration_ms", integer())),
	"resource.citation.recorded": obj(opt("citations", arr(obj(
		req("source", obj(opt("id", str()), opt("uri", str().at(CaptureRedacted)), opt("title", str().at(CaptureRedacted)))),
		opt("cited_text_redacted", str().at(CaptureRedacted)), opt("cited_text", str().at(CaptureFull)),
		opt("offset", obj(
			opt("char", obj(opt("start", signedInt()), opt("end", signedInt()))),
			opt("page", obj(opt("page", signedInt()), opt("start", signedInt()), opt("end", signedInt()))),
			opt("block", obj(opt("block", signedInt()), opt("start", signedInt()), opt("end", signedInt()))))),
		opt("document_index", integer())))), opt("count", integer())),
	"assessment.evaluation.recorded": obj(opt("gen_ai.evaluation.name", str()), opt("gen_ai.evaluation.score.value", number()),
		opt("gen_ai.evaluation.score.label", str()), opt("gen_ai.evaluation.explanation", str().at(CaptureRedacted)),
		opt("evaluator", str())),
	"assessment.feedback.received": obj(opt("rating", number()), opt("label", str()),
		opt("comment", str().at(CaptureRedacted)), opt("correction", str().at(CaptureRedacted)), opt("source", str())),
	"assessment.guardrail.recorded": obj(opt("guardrail", obj(opt("stage", enum("input", "output")),
		opt("verdict", enum("allowed", "flagged", "blocked", "modified")),
		opt("categories", arr(obj(req("name", str()), opt("score", number())))),
		opt("detector", obj(opt("name", str()), opt("version", str()))),
		opt("explanation", str().at(CaptureRedacted))))),
}

// KnownType reports whether the payload table knows type t.
func KnownType(t string) bool { _, ok := payloads[t]; return ok }

// decodeData decodes a payload with numbers kept as json.Number.
func decodeData(data json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// validatePayload checks data against the shape of type t. Unknown types are
// tolerated (AEP-0001 §6): only the object-ness of data is checked.
func validatePayload(t string, capture Capture, data json.RawMessage) error {
	m, err := decodeData(data)
	if err != nil {
		return &ValidationError{Rule: "AEP-0001 §5.1 #17", Attr: "data", Msg: "data must be a JSON object"}
	}
	return validatePayloadMap(t, capture, m)
}

// validatePayloadMap is validatePayload of the data decodeData decoded
// into m.
func validatePayloadMap(t string, capture Capture, m map[string]any) error {
	if capture == CaptureNone {
		if len(m) > 0 {
			return &ValidationError{Rule: "AEP-0001 §8.2", Attr: "data", Msg: "an event at capture none carries no payload content"}
		}
		return nil
	}
	s, ok := payloads[t]
	if !ok {
		return nil
	}
	if m == nil {
		if len(s.required) > 0 {
			return &ValidationError{Rule: "AEP-0002 §5 payload schema", Attr: "data." + s.required[0], Msg: "required payload field is missing"}
		}
		return nil
	}
	// The checks run first without paths, which only an error needs,
	// and again with them, in name order, to say which member is wrong.
	if checkShape(s, m, noPath) != nil {
		return checkShape(s, m, "data")
	}
	if aboveCapture(s, m, capture, noPath) != "" {
		return &ValidationError{Rule: "AEP-0001 §8.2(a)", Attr: aboveCapture(s, m, capture, "data"), Msg: fmt.Sprintf("field requires a capture level above the event's %s", capture)}
	}
	if t == "attention.requested" {
		return checkFieldSpecs(m)
	}
	return nil
}

// shapeError reports a payload value that does not fit its schema.
func shapeError(path, msg string) error {
	return &ValidationError{Rule: "AEP-0002 §5 payload schema", Attr: path, Msg: msg}
}

// noPath is the path of a check that says only whether a payload passes:
// it builds no path and looks at members in any order.
const noPath = ""

func checkShape(s *shape, v any, path string) error {
	switch s.kind {
	case kObject:
		return checkObject(s, v, path)
	case kArray:
		a, ok := v.([]any)
		if !ok {
			return shapeError(path, "must be an array")
		}
		for i, it := range a {
			p := noPath
			if path != noPath {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			if err := checkShape(s.items, it, p); err != nil {
				return err
			}
		}
		return nil
	case kObjectOrString:
		switch v.(type) {
		case string, map[string]any:
			return nil
		}
		return shapeError(path, "must be an object or a string")
	}
	return checkScalar(s, v, path)
}

// checkObject checks an object's required members, then each known member
// in name order.
func checkObject(s *shape, v any, path string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return shapeError(path, "must be an object")
	}
	for _, r := range s.required {
		if _, ok := m[r]; !ok {
			return shapeError(path+"."+r, "required payload field is missing")
		}
	}
	if path == noPath {
		for k, mv := range m {
			if ps, ok := s.props[k]; ok {
				if err := checkShape(ps, mv, noPath); err != nil {
					return err
				}
			}
		}
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ps, ok := s.props[k]; ok {
			if err := checkShape(ps, m[k], path+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkScalar checks a string, timestamp, number or boolean.
func checkScalar(s *shape, v any, path string) error {
	switch s.kind {
	case kString:
		str, ok := v.(string)
		if !ok {
			return shapeError(path, "must be a string")
		}
		if len(s.enum) > 0 && !contains(s.enum, str) {
			return shapeError(path, fmt.Sprintf("%q is not one of %s", str, strings.Join(s.enum, "|")))
		}
	case kDateTime:
		if str, ok := v.(string); !ok || !isRFC3339(str) {
			return shapeError(path, "must be an RFC 3339 timestamp")
		}
	case kInteger:
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil {
			return shapeError(path, "must be an integer")
		}
		if s.nonNeg && i < 0 {
			return shapeError(path, "must be >= 0")
		}
	case kNumber:
		n, ok := v.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil {
			return shapeError(path, "must be a number")
		}
		if s.nonNeg && f < 0 {
			return shapeError(path, "must be >= 0")
		}
	case kBool:
		if _, ok := v.(bool); !ok {
			return shapeError(path, "must be a boolean")
		}
	}
	return nil
}

// checkFieldSpecs applies the field_spec rules that a shape cannot express
// (AEP-0002 §5.2, AEP-0006): choices are required for select fields, ids
// are unique, and min/max belong to number fields.
func checkFieldSpecs(m map[string]any) error {
	fields, _ := m["fields"].([]any)
	seen := map[string]bool{}
	for i, f := range fields {
		fm := f.(map[string]any)
		path := fmt.Sprintf("data.fields[%d]", i)
		id, _ := fm["id"].(string)
		if seen[id] {
			return &ValidationError{Rule: "AEP-0002 §5.2 field_spec", Attr: path + ".id", Msg: fmt.Sprintf("duplicate field id %q", id)}
		}
		seen[id] = true
		typ, _ := fm["type"].(string)
		if typ == "select" {
			if _, ok := fm["choices"]; !ok {
				return &ValidationError{Rule: "AEP-0002 §5.2 field_spec (AEP-0006)", Attr: path + ".choices", Msg: "choices are required when type is select"}
			}
		}
		for _, k := range []string{"min", "max"} {
			if _, ok := fm[k]; ok && typ != "number" {
				return &ValidationError{Rule: "AEP-0002 §5.2 field_spec (AEP-0006)", Attr: path + "." + k, Msg: k + " is only meaningful for number fields"}
			}
		}
	}
	if k, _ := m["kind"].(string); k != "form" && len(fields) > 0 {
		return &ValidationError{Rule: "AEP-0002 §5.3", Attr: "data.fields", Msg: "fields are present only when kind is form"}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// aboveCapture returns the path of the first member whose x-aep-capture level
// exceeds level (AEP-0001 §8.2(a)), or "" when the payload honors it.
func aboveCapture(s *shape, v any, level Capture, path string) string {
	switch s.kind {
	case kObject:
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		if path == noPath {
			for k, mv := range m {
				if ps, ok := s.props[k]; ok && (!ps.exc && ps.capture.OrDefault() > level || aboveCapture(ps, mv, level, noPath) != "") {
					return "." + k
				}
			}
			return ""
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := s.props[k]
			if !ok {
				continue
			}
			if !ps.exc && ps.capture.OrDefault() > level {
				return path + "." + k
			}
			if p := aboveCapture(ps, m[k], level, path+"."+k); p != "" {
				return p
			}
		}
	case kArray:
		a, ok := v.([]any)
		if !ok || s.items == nil {
			return ""
		}
		for i, it := range a {
			p := noPath
			if path != noPath {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			if p := aboveCapture(s.items, it, level, p); p != "" {
				return p
			}
		}
	}
	return ""
}
