package aep

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// ValidationError reports an event that breaks a rule of the specification.
// Rule names the section ("AEP-0001 §5.2"), Attr the attribute or payload
// path involved, and Msg what is wrong.
type ValidationError struct {
	Rule string
	Attr string
	Msg  string
}

func (e *ValidationError) Error() string {
	if e.Attr != "" {
		return fmt.Sprintf("%s: %s: %s", e.Rule, e.Attr, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Rule, e.Msg)
}

func asValidation(err error, target **ValidationError) bool { return errors.As(err, target) }

// categories is the closed category set of AEP-0002 §3.
var categories = map[string]bool{
	"agent": true, "session": true, "run": true, "progress": true, "tool": true,
	"delegation": true, "attention": true, "resource": true, "error": true,
	"state": true, "assessment": true, "message": true, "control": true,
}

var (
	coreTypeRe    = regexp.MustCompile(`^([a-z]+)(\.[a-z0-9_]+)+$`)
	vendorTypeRe  = regexp.MustCompile(`^x\.[a-z0-9_-]+\.([a-z]+)(\.[a-z0-9_]+)+$`)
	traceparentRe = regexp.MustCompile(`^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)
)

// CheckType applies the type grammar of AEP-0001 §6: a registered category
// followed by one or more [a-z0-9_]+ tokens, or x.{vendor}.{category}.{rest}.
func CheckType(t string) error {
	if _, ok := payloads[t]; ok {
		return nil // the payload table's types are core types (TestPayloadTypesAreCoreTypes)
	}
	return checkTypeSyntax(t)
}

// checkTypeSyntax is CheckType by the grammar alone.
func checkTypeSyntax(t string) error {
	if strings.HasPrefix(t, "x.") {
		if vendorTypeRe.MatchString(t) {
			return nil
		}
		return &ValidationError{Rule: "AEP-0001 §6", Attr: "type", Msg: "vendor types must be x.{vendor}.{category}.{rest}"}
	}
	if m := coreTypeRe.FindStringSubmatch(t); m != nil {
		if !categories[m[1]] {
			return &ValidationError{Rule: "AEP-0002 §3", Attr: "type", Msg: fmt.Sprintf("unknown category %q (the category set is closed)", m[1])}
		}
		return nil
	}
	return &ValidationError{Rule: "AEP-0001 §6", Attr: "type", Msg: "type must be a lowercase {category}.{rest} with [a-z0-9_] tokens"}
}

// IsAgentScoped reports whether events of type t describe the emitter itself
// rather than a session (AEP-0001 §5.2).
func IsAgentScoped(t string) bool { return strings.HasPrefix(t, "agent.") }

// IsForeignSessionType reports whether events of type t are foreign-emitter
// session events: commands and attention.routed, which carry session but never
// seq (AEP-0001 §5.2, AEP-0004 §2.2).
func IsForeignSessionType(t string) bool {
	switch t {
	case "control.attention.respond", "control.cancel", "control.pause", "control.resume", "attention.routed":
		return true
	}
	if strings.HasPrefix(t, "x.") {
		parts := strings.SplitN(t, ".", 4)
		return len(parts) == 4 && parts[2] == "control"
	}
	return false
}

// IsCommand reports whether t is a control command (an imperative control.*
// type, or a vendor x.{vendor}.control.* type) rather than an ack.
func IsCommand(t string) bool {
	return t != "control.accepted" && t != "control.rejected" && IsForeignSessionType(t) && t != "attention.routed"
}

// Validate applies the envelope rules of AEP-0001 §5 and §6 and the payload
// shape of the event's type (AEP-0002 §5). It returns a *ValidationError.
func (e *Event) Validate() error {
	if err := e.validateEnvelope(); err != nil {
		return err
	}
	return validatePayload(e.Type, e.EffectiveCapture(), e.Data)
}

// validateEnvelope is Validate without the payload's checks.
func (e *Event) validateEnvelope() error {
	if e.AEP != Version {
		return &ValidationError{Rule: "AEP-0001 §5.1 #1", Attr: "aep", Msg: fmt.Sprintf("unsupported envelope version %q: this endpoint speaks %q", e.AEP, Version)}
	}
	for _, req := range []struct{ name, v string }{{"id", e.ID}, {"type", e.Type}, {"time", e.Time}, {"source", e.Source}, {"agent", e.Agent}} {
		if req.v == "" {
			return &ValidationError{Rule: "AEP-0001 §5.1", Attr: req.name, Msg: "required attribute is missing"}
		}
	}
	if err := CheckType(e.Type); err != nil {
		return err
	}
	if !isRFC3339(e.Time) {
		return &ValidationError{Rule: "AEP-0001 §5.1 #5", Attr: "time", Msg: "must be an RFC 3339 timestamp with a timezone"}
	}
	if !absoluteURI(e.Source) {
		return &ValidationError{Rule: "AEP-0001 §5.1 #6", Attr: "source", Msg: "must be an absolute URI"}
	}
	switch {
	case IsAgentScoped(e.Type):
		for _, a := range []struct {
			name string
			set  bool
		}{{"session", e.Session != ""}, {"run", e.Run != ""}, {"step", e.Step != ""}, {"seq", e.Seq != nil}} {
			if a.set {
				return &ValidationError{Rule: "AEP-0001 §5.2", Attr: a.name, Msg: "agent-scoped events must omit session, run, step and seq"}
			}
		}
	case IsForeignSessionType(e.Type):
		rule := "AEP-0001 §5.2"
		if strings.Contains(e.Type, "control.") {
			rule = "AEP-0004 §2.2"
		}
		if e.Session == "" {
			return &ValidationError{Rule: rule, Attr: "session", Msg: "commands and attention.routed must carry the target session"}
		}
		if e.Seq != nil {
			return &ValidationError{Rule: rule, Attr: "seq", Msg: "foreign-emitter session events must omit seq"}
		}
	default:
		if e.Session == "" {
			return &ValidationError{Rule: "AEP-0001 §5.2", Attr: "session", Msg: "session-scoped events must carry session"}
		}
		if e.Seq == nil {
			return &ValidationError{Rule: "AEP-0001 §5.2", Attr: "seq", Msg: "session-scoped events must carry seq"}
		}
	}
	if e.Traceparent != "" && !traceparentRe.MatchString(e.Traceparent) {
		return &ValidationError{Rule: "AEP-0001 §5.1 #14", Attr: "traceparent", Msg: "must be a W3C traceparent (vv-32hex-16hex-ff)"}
	}
	for name, v := range e.Extensions {
		if checkExtension(name, v) != nil {
			// Report the first bad one by name, so the same event
			// always gets the same error.
			for _, name := range slices.Sorted(maps.Keys(e.Extensions)) {
				if err := checkExtension(name, e.Extensions[name]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// lastSource is the last source absoluteURI found to be one: an emitter
// stamps every event of its session with the same source.
var lastSource atomic.Pointer[string]

// absoluteURI says whether s is an absolute URI.
func absoluteURI(s string) bool {
	if last := lastSource.Load(); last != nil && *last == s {
		return true
	}
	if u, err := url.Parse(s); err != nil || u.Scheme == "" {
		return false
	}
	lastSource.Store(&s)
	return true
}

// checkExtension applies AEP-0001 §5.4 to one extension attribute.
func checkExtension(name string, v []byte) error {
	if coreSet[name] {
		return &ValidationError{Rule: "AEP-0001 §5.4", Attr: name, Msg: "extension attribute collides with a core attribute"}
	}
	if !validExtName(name) {
		return &ValidationError{Rule: "AEP-0001 §5.4", Attr: name, Msg: "extension attribute name must match [a-z0-9]{1,20}"}
	}
	if !isScalarJSON(v) {
		return &ValidationError{Rule: "AEP-0001 §5.4", Attr: name, Msg: "extension attribute values must be a string, integer or boolean"}
	}
	return nil
}

// isScalarJSON reports whether v is a JSON string, integer or boolean.
func isScalarJSON(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case '"':
		return true
	case 't', 'f':
		return string(v) == "true" || string(v) == "false"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return !strings.ContainsAny(string(v), ".eE")
	}
	return false
}

func isRFC3339(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}
