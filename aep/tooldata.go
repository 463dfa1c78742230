package aep

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The tool.* payloads (AEP-0002 §5.3) that carry metadata members only.
// They encode themselves without reflection, and an emitter that finds
// one as a Draft's Data takes its encoding through EncodeBuilt instead of
// encoding, decoding, pruning and re-encoding it: every member they hold
// is metadata, so what a ceiling keeps of them is known before they are
// encoded, and their shape is right by construction.
//
// Each MarshalJSON writes what encoding/json writes for the equivalent
// struct (members in the order listed, the same omissions), so a
// publisher that is not an emitter sees the same bytes.
type (
	// ToolRef is a tool_ref: the tool's name and the call's id.
	ToolRef struct {
		Name   string // required
		CallID string // omitted when ""
	}
	// ToolRequested is tool.requested's data without the arguments:
	// {tool, args_digest}. A tool.requested that carries args or
	// args_redacted is built as a generic value instead.
	ToolRequested struct {
		Tool       ToolRef
		ArgsDigest string // omitted when ""
	}
	// ToolCompleted is tool.completed's data: {tool, status, duration_ms}.
	ToolCompleted struct {
		Tool       ToolRef
		Status     string // always present
		DurationMS int64  // always present; not negative
	}
	// ToolFailed is tool.failed's data: {tool, error:{type}, duration_ms}.
	ToolFailed struct {
		Tool       ToolRef
		ErrorType  string // error.type, omitted when ""
		DurationMS int64  // always present; not negative
	}
	// ToolDenied is tool.denied's data: {tool, by, rule}. By must be one
	// of policy, user_setting and runtime.
	ToolDenied struct {
		Tool ToolRef
		By   string
		Rule string // omitted when ""
	}
)

// builtData is a payload this package encodes by hand: its type, and its
// encoding in declaration order (what json.Marshal of the struct gives)
// or with its members sorted by name (what a down-leveling hop gives,
// since it re-encodes the decoded map). A value that does not fit its
// type's schema sends the emitter down the generic path, whose
// validation says why.
type builtData interface {
	payloadType() string
	// fits says whether the value fits its type's schema.
	fits() bool
	// appendData appends the encoding; ok is false when a string did
	// not encode.
	appendData(dst []byte, sorted bool) (out []byte, ok bool)
}

func (ToolRequested) payloadType() string { return "tool.requested" }
func (ToolCompleted) payloadType() string { return "tool.completed" }
func (ToolFailed) payloadType() string    { return "tool.failed" }
func (ToolDenied) payloadType() string    { return "tool.denied" }

// objBuf writes one JSON object member by member, each after the comma
// that separates it from the previous one; ok turns false when a string
// does not encode.
type objBuf struct {
	b     []byte
	first bool
	ok    bool
	// decoded says the encoding is of the data decoded again, as a
	// down-leveling hop re-encodes it: a string's invalid UTF-8 came back
	// from the first encoding as U+FFFD, which the second writes as is.
	decoded bool
}

func newObj(dst []byte, decoded bool) objBuf {
	return objBuf{b: append(dst, '{'), first: true, ok: true, decoded: decoded}
}

func (o *objBuf) key(name string) {
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.b = append(o.b, '"')
	o.b = append(o.b, name...)
	o.b = append(o.b, '"', ':')
}

func (o *objBuf) str(name, v string) {
	o.key(name)
	if o.decoded && !utf8.ValidString(v) {
		v = string([]rune(v)) // each invalid byte becomes U+FFFD
	}
	var err error
	o.b, err = appendString(o.b, v)
	if err != nil {
		o.ok = false
	}
}

func (o *objBuf) int(name string, v int64) {
	o.key(name)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *objBuf) ref(name string, r ToolRef) {
	o.key(name)
	// call_id sorts before name, and follows it in declaration order.
	in := newObj(o.b, o.decoded)
	in.str("name", r.Name)
	if r.CallID != "" {
		in.str("call_id", r.CallID)
	}
	o.b, o.ok = append(in.b, '}'), o.ok && in.ok
}

func (o *objBuf) refSorted(name string, r ToolRef) {
	o.key(name)
	in := newObj(o.b, o.decoded)
	if r.CallID != "" {
		in.str("call_id", r.CallID)
	}
	in.str("name", r.Name)
	o.b, o.ok = append(in.b, '}'), o.ok && in.ok
}

func (o *objBuf) end() ([]byte, bool) { return append(o.b, '}'), o.ok }

func (ToolRequested) fits() bool { return true }

func (d ToolRequested) appendData(dst []byte, sorted bool) ([]byte, bool) {
	o := newObj(dst, sorted)
	if sorted {
		if d.ArgsDigest != "" {
			o.str("args_digest", d.ArgsDigest)
		}
		o.refSorted("tool", d.Tool)
		return o.end()
	}
	o.ref("tool", d.Tool)
	if d.ArgsDigest != "" {
		o.str("args_digest", d.ArgsDigest)
	}
	return o.end()
}

func (d ToolCompleted) fits() bool { return d.DurationMS >= 0 } // duration_ms is a non-negative integer

func (d ToolCompleted) appendData(dst []byte, sorted bool) ([]byte, bool) {
	o := newObj(dst, sorted)
	if sorted {
		o.int("duration_ms", d.DurationMS)
		o.str("status", d.Status)
		o.refSorted("tool", d.Tool)
		return o.end()
	}
	o.ref("tool", d.Tool)
	o.str("status", d.Status)
	o.int("duration_ms", d.DurationMS)
	return o.end()
}

func (d ToolFailed) fits() bool { return d.DurationMS >= 0 } // duration_ms is a non-negative integer

func (d ToolFailed) appendData(dst []byte, sorted bool) ([]byte, bool) {
	o := newObj(dst, sorted)
	errInfo := func() {
		o.key("error")
		in := newObj(o.b, o.decoded)
		if d.ErrorType != "" {
			in.str("type", d.ErrorType)
		}
		o.b, o.ok = append(in.b, '}'), o.ok && in.ok
	}
	if sorted {
		o.int("duration_ms", d.DurationMS)
		errInfo()
		o.refSorted("tool", d.Tool)
		return o.end()
	}
	o.ref("tool", d.Tool)
	errInfo()
	o.int("duration_ms", d.DurationMS)
	return o.end()
}

func (d ToolDenied) fits() bool {
	switch d.By {
	case "policy", "user_setting", "runtime":
		return true
	}
	return false
}

func (d ToolDenied) appendData(dst []byte, sorted bool) ([]byte, bool) {
	o := newObj(dst, sorted)
	if sorted {
		o.str("by", d.By)
		if d.Rule != "" {
			o.str("rule", d.Rule)
		}
		o.refSorted("tool", d.Tool)
		return o.end()
	}
	o.ref("tool", d.Tool)
	o.str("by", d.By)
	if d.Rule != "" {
		o.str("rule", d.Rule)
	}
	return o.end()
}

// marshalBuilt is the MarshalJSON of a builtData: its declaration-order
// encoding, with HTML escaped as encoding/json escapes it.
func marshalBuilt(d builtData) ([]byte, error) {
	b, ok := d.appendData(make([]byte, 0, 128), false)
	if !ok {
		// Only a string that does not encode fails; encoding/json says why.
		return nil, &json.UnsupportedValueError{Str: "a " + d.payloadType() + " member does not encode"}
	}
	return htmlEscaped(b), nil
}

// MarshalJSON encodes the data as encoding/json encodes the equivalent
// struct.
func (d ToolRequested) MarshalJSON() ([]byte, error) { return marshalBuilt(d) }

// MarshalJSON encodes the data as encoding/json encodes the equivalent
// struct.
func (d ToolCompleted) MarshalJSON() ([]byte, error) { return marshalBuilt(d) }

// MarshalJSON encodes the data as encoding/json encodes the equivalent
// struct.
func (d ToolFailed) MarshalJSON() ([]byte, error) { return marshalBuilt(d) }

// MarshalJSON encodes the data as encoding/json encodes the equivalent
// struct, whether or not By is one the schema allows (validation is
// the emitter's).
func (d ToolDenied) MarshalJSON() ([]byte, error) { return marshalBuilt(d) }

// htmlEscaped is b with '<', '>' and '&' escaped as encoding/json
// escapes them in strings (U+2028 and U+2029 are already escaped).
func htmlEscaped(b []byte) []byte {
	if !needsHTMLEscape(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for _, c := range b {
		switch c {
		case '<', '>', '&':
			out = append(out, '\\', 'u', '0', '0', hexDigit[c>>4], hexDigit[c&0xF])
		default:
			out = append(out, c)
		}
	}
	return out
}

const hexDigit = "0123456789abcdef"

// Landing is the capture an event of capture in has once a hop whose
// ceiling is ceiling has down-leveled it (AEP-0001 §8.2): in itself at
// or below the ceiling, the ceiling otherwise, except that a full event
// never lands on redacted (§8.2(e)) but on metadata. Zero means metadata
// on both sides.
func Landing(in, ceiling Capture) Capture {
	in, ceiling = in.OrDefault(), ceiling.OrDefault()
	if in <= ceiling {
		return in
	}
	if ceiling == CaptureRedacted && in == CaptureFull {
		return CaptureMetadata
	}
	return ceiling
}

// EncodeBuilt encodes the data of a draft of type typ and capture in
// that a hop with ceiling ceiling emits, when data is one of this
// package's hand-encoded payloads of that type (ToolRequested,
// ToolCompleted, ToolFailed, ToolDenied): it appends to dst exactly the
// data that down-leveling and re-encoding the draft's json.Marshal'd
// data would give, and returns the event's capture. ok is false when
// data is anything else or does not fit its schema: the caller then
// takes the generic path (encode, DownlevelValid), which says what is
// wrong. At capture none the data is nil.
//
// The data needs no validation: its members are the schema's, of the
// schema's types, and all metadata, so they are at or below any capture
// but none.
func EncodeBuilt(dst []byte, typ string, data any, in, ceiling Capture) (out []byte, capture Capture, ok bool) {
	bd, ok := data.(builtData)
	if !ok || bd.payloadType() != typ || !bd.fits() {
		return dst, 0, false
	}
	if dst == nil {
		dst = make([]byte, 0, 192) // what the tool.* payloads take, but for long names
	}
	if in.OrDefault() == CaptureNone {
		return dst, 0, false // a draft at none carries no data: validation says so
	}
	capture = Landing(in, ceiling)
	if capture == CaptureNone {
		_, ok := bd.appendData(nil, true)
		return nil, capture, ok
	}
	// A down-leveled event's data was decoded and encoded again, with its
	// members sorted; one that was not keeps json.Marshal's order. Either
	// way the strings are HTML-escaped, as json.Marshal escapes them.
	start := len(dst)
	out, ok = bd.appendData(dst, capture < in.OrDefault())
	if !ok {
		return dst, 0, false
	}
	if needsHTMLEscape(out[start:]) {
		out = append(out[:start], htmlEscaped(out[start:])...)
	}
	return out, capture, true
}

// ValidBuilt is DownlevelValid for an event whose data EncodeBuilt
// encoded for the ceiling, at the capture it returned: nothing is left
// to down-level, the data fits its schema by construction, so only the
// envelope is validated. A failure's error is a *ValidationError.
func ValidBuilt(e Event) (Event, error) {
	if err := e.validateEnvelope(); err != nil {
		return Event{}, err
	}
	return e, nil
}
