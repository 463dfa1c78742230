package aep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"
)

// Version is the envelope version this package emits and accepts (AEP-0001 §5.1 #1).
const Version = "0.1"

// Event is one AEP envelope: the sixteen context attributes of AEP-0001 §5.1,
// the extension attributes of §5.4, and the type-specific Data payload.
//
// Optional attributes are omitted from the encoding when they hold their zero
// value (never written as null). Seq and Epoch are pointers because 0 is a
// meaningful position. Data is kept as raw JSON so a hop forwards it unchanged.
//
// An Event is a value; it is safe to share between goroutines once built and
// never mutated.
type Event struct {
	AEP         string
	ID          string
	Type        string
	Subject     string
	Time        string
	Source      string
	Agent       string
	Session     string
	Run         string
	Step        string
	Seq         *int64
	Epoch       *int64
	Cause       string
	Traceparent string
	Severity    Severity
	Capture     Capture
	Data        json.RawMessage

	// Extensions holds extension attributes (AEP-0001 §5.4) as raw JSON
	// scalars, keyed by attribute name. Use SetExtension to add one.
	Extensions map[string]json.RawMessage
}

// coreAttributes lists the core attribute names in their canonical encoding order.
var coreAttributes = []string{
	"aep", "id", "type", "subject", "time", "source", "agent", "session",
	"run", "step", "seq", "epoch", "cause", "traceparent", "severity", "capture", "data",
}

var coreSet = func() map[string]bool {
	m := make(map[string]bool, len(coreAttributes))
	for _, a := range coreAttributes {
		m[a] = true
	}
	return m
}()

// validExtName says whether name is a well-formed extension attribute
// name, [a-z0-9]{1,20} (AEP-0001 §5.4).
func validExtName(name string) bool {
	if name == "" || len(name) > 20 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// SetExtension adds an extension attribute. It refuses, as AEP-0001 §5.4
// requires of an emitting library, a name that collides with a core attribute,
// an ill-formed name, or a value that is not a string, integer or boolean.
func (e *Event) SetExtension(name string, value any) error {
	if coreSet[name] {
		return &ValidationError{Rule: "AEP-0001 §5.4", Attr: name, Msg: "extension attribute collides with a core attribute"}
	}
	if !validExtName(name) {
		return &ValidationError{Rule: "AEP-0001 §5.4", Attr: name, Msg: "extension attribute name must match [a-z0-9]{1,20}"}
	}
	switch value.(type) {
	case string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
	default:
		return &ValidationError{Rule: "AEP-0001 §5.4", Attr: name, Msg: fmt.Sprintf("extension attribute value must be a string, integer or boolean, not %T", value)}
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encoding extension %s: %w", name, err)
	}
	if e.Extensions == nil {
		e.Extensions = make(map[string]json.RawMessage)
	}
	e.Extensions[name] = raw
	return nil
}

// MarshalJSON encodes the event with core attributes in canonical order, then
// extension attributes sorted by name, then data. Absent optional attributes
// are omitted.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.appendJSON(make([]byte, 0, e.sizeHint()), false)
}

// sizeHint is about the length of the event's encoding: its strings and
// data, and room for the members' names and the rest.
func (e Event) sizeHint() int {
	n := 224 + len(e.ID) + len(e.Type) + len(e.Subject) + len(e.Time) + len(e.Source) + len(e.Agent) +
		len(e.Session) + len(e.Run) + len(e.Step) + len(e.Cause) + len(e.Traceparent) + len(e.Data)
	for name, v := range e.Extensions {
		n += len(name) + len(v) + 4
	}
	return n
}

// appendJSON appends MarshalJSON's encoding to dst. With compactData it
// appends Data as it is, which must then be compact JSON; otherwise Data
// is compacted, which also checks that it is JSON.
func (e Event) appendJSON(dst []byte, compactData bool) ([]byte, error) {
	w := objectWriter{b: append(dst, '{')}
	for _, kv := range [...]struct {
		n, v   string
		always bool
	}{
		{"aep", e.AEP, true}, {"id", e.ID, true}, {"type", e.Type, true}, {"subject", e.Subject, false},
		{"time", e.Time, true}, {"source", e.Source, true}, {"agent", e.Agent, true},
		{"session", e.Session, false}, {"run", e.Run, false}, {"step", e.Step, false},
	} {
		if err := w.str(kv.n, kv.v, kv.always); err != nil {
			return nil, err
		}
	}
	if e.Seq != nil {
		w.name("seq")
		w.b = strconv.AppendInt(w.b, *e.Seq, 10)
	}
	if e.Epoch != nil {
		w.name("epoch")
		w.b = strconv.AppendInt(w.b, *e.Epoch, 10)
	}
	if err := w.str("cause", e.Cause, false); err != nil {
		return nil, err
	}
	if err := w.str("traceparent", e.Traceparent, false); err != nil {
		return nil, err
	}
	if err := e.writeLevels(&w); err != nil {
		return nil, err
	}
	if err := e.writeExtensions(&w); err != nil {
		return nil, err
	}
	if len(e.Data) > 0 && !bytes.Equal(bytes.TrimSpace(e.Data), []byte("null")) {
		w.name("data")
		if compactData {
			w.b = append(w.b, e.Data...)
		} else {
			buf := bytes.NewBuffer(w.b) // compacted straight into the event's buffer
			if err := json.Compact(buf, e.Data); err != nil {
				return nil, fmt.Errorf("encoding data: %w", err)
			}
			w.b = buf.Bytes()
		}
	}
	return append(w.b, '}'), nil
}

// writeLevels writes severity and capture when set.
func (e Event) writeLevels(w *objectWriter) error {
	if e.Severity != 0 {
		if _, ok := severityNames[e.Severity]; !ok {
			return fmt.Errorf("invalid severity %d", int(e.Severity))
		}
		w.name("severity")
		w.b = strconv.AppendQuote(w.b, e.Severity.String()) // plain ASCII words: quoting is their encoding
	}
	if e.Capture != 0 {
		if _, ok := captureNames[e.Capture]; !ok {
			return fmt.Errorf("invalid capture level %d", int(e.Capture))
		}
		w.name("capture")
		w.b = strconv.AppendQuote(w.b, e.Capture.String())
	}
	return nil
}

// writeExtensions writes the extension attributes sorted by name.
func (e Event) writeExtensions(w *objectWriter) error {
	var small [8]string
	names := small[:0]
	for n := range e.Extensions {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if coreSet[n] {
			return &ValidationError{Rule: "AEP-0001 §5.4", Attr: n, Msg: "extension attribute collides with a core attribute"}
		}
		w.put(n, e.Extensions[n])
	}
	return nil
}

// objectWriter appends the members of one JSON object in order.
type objectWriter struct {
	b       []byte
	started bool
}

// put writes a member whose value is already encoded.
func (w *objectWriter) put(name string, v []byte) {
	w.name(name)
	w.b = append(w.b, v...)
}

// name writes a member's name and colon, after a comma unless first.
func (w *objectWriter) name(name string) {
	if w.started {
		w.b = append(w.b, ',')
	}
	w.started = true
	w.b = append(w.b, '"')
	w.b = append(w.b, name...)
	w.b = append(w.b, '"', ':')
}

// str writes a string member; an empty one only when always is set.
func (w *objectWriter) str(name, v string, always bool) error {
	if v == "" && !always {
		return nil
	}
	w.name(name)
	var err error
	w.b, err = appendString(w.b, v)
	return err
}

// Encode returns the event's encoding, byte for byte what json.Marshal
// of the event returns, without the second pass json.Marshal makes over
// a MarshalJSON's output: MarshalJSON's output is already compact, so
// what that pass changes is only '<', '>', '&', U+2028 and U+2029, which
// it escapes inside strings, as Encode does. An event with an extension
// value that is not one JSON scalar token (one that Validate refuses) is
// encoded by json.Marshal itself.
func (e Event) Encode() ([]byte, error) { return e.encode(false) }

// EncodeWithBuiltData is Encode for an event whose Data is EncodeBuilt's
// output, or nil: one compact JSON object. It returns Encode's bytes
// without compacting the data again. Data that is not an object is
// encoded by Encode, which checks it.
func (e Event) EncodeWithBuiltData() ([]byte, error) {
	if d := e.Data; len(d) > 0 && (d[0] != '{' || d[len(d)-1] != '}') {
		return e.encode(false)
	}
	return e.encode(true)
}

// encode is Encode; with compactData, Data is taken to be compact JSON.
func (e Event) encode(compactData bool) ([]byte, error) {
	for _, v := range e.Extensions {
		if !isScalarJSON(v) || !json.Valid(v) || bytes.ContainsAny(v[len(v)-1:], " \t\r\n") {
			return json.Marshal(e)
		}
	}
	b, err := e.appendJSON(make([]byte, 0, e.sizeHint()), compactData)
	if err != nil {
		return nil, &json.MarshalerError{Type: reflect.TypeFor[Event](), Err: err}
	}
	if !needsHTMLEscape(b) {
		return b, nil
	}
	var out bytes.Buffer
	out.Grow(len(b) + 16)
	json.HTMLEscape(&out, b)
	return out.Bytes(), nil
}

// needsHTMLEscape says whether b holds a byte that json.HTMLEscape may
// change: '<', '>', '&', or the first byte of U+2028 and U+2029.
func needsHTMLEscape(b []byte) bool {
	// Four vectorized scans beat one byte loop on an event's few hundred bytes.
	return bytes.IndexByte(b, '<') >= 0 || bytes.IndexByte(b, '>') >= 0 ||
		bytes.IndexByte(b, '&') >= 0 || bytes.IndexByte(b, 0xE2) >= 0
}

// appendString appends v encoded as a JSON string without HTML escaping,
// as marshalNoEscape encodes it: a string of printable ASCII without '"'
// or '\\' is itself between quotes; any other goes through encoding/json.
func appendString(dst []byte, v string) ([]byte, error) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			enc, err := marshalNoEscape(v)
			return append(dst, enc...), err
		}
	}
	dst = append(dst, '"')
	dst = append(dst, v...)
	return append(dst, '"'), nil
}

// marshalNoEscape encodes a string without HTML escaping, so '<', '>' and '&'
// in prompts survive verbatim on the wire.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// UnmarshalJSON decodes an envelope. It checks the JSON type of every core
// attribute and keeps every other attribute as an extension, so extensions
// survive a decode/encode round trip (AEP-0001 §5.4). It does not apply the
// envelope rules; call Validate for those, or use Parse.
func (e *Event) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return &ValidationError{Rule: "AEP-0001 §5", Msg: "an event must be a JSON object: " + err.Error()}
	}
	if raw == nil {
		return &ValidationError{Rule: "AEP-0001 §5", Msg: "an event must be a JSON object, not null"}
	}
	*e = Event{}
	strs := map[string]*string{
		"aep": &e.AEP, "id": &e.ID, "type": &e.Type, "subject": &e.Subject, "time": &e.Time,
		"source": &e.Source, "agent": &e.Agent, "session": &e.Session, "run": &e.Run,
		"step": &e.Step, "cause": &e.Cause, "traceparent": &e.Traceparent,
	}
	for name, v := range raw {
		if dst, ok := strs[name]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return &ValidationError{Rule: "AEP-0001 §5.1", Attr: name, Msg: "must be a string"}
			}
			if *dst == "" {
				return &ValidationError{Rule: "AEP-0001 §5.1", Attr: name, Msg: "must be a non-empty string"}
			}
			continue
		}
		switch name {
		case "seq", "epoch":
			n, err := decodeNonNegInt(v)
			if err != nil {
				return &ValidationError{Rule: "AEP-0001 §5.1 #11-12", Attr: name, Msg: err.Error()}
			}
			if name == "seq" {
				e.Seq = &n
			} else {
				e.Epoch = &n
			}
		case "severity":
			if err := e.Severity.UnmarshalJSON(v); err != nil {
				return &ValidationError{Rule: "AEP-0001 §8.1", Attr: name, Msg: err.Error()}
			}
		case "capture":
			if err := e.Capture.UnmarshalJSON(v); err != nil {
				return &ValidationError{Rule: "AEP-0001 §8.2", Attr: name, Msg: err.Error()}
			}
		case "data":
			t := bytes.TrimSpace(v)
			if bytes.Equal(t, []byte("null")) {
				return &ValidationError{Rule: "AEP-0001 §5.1", Attr: "data", Msg: "absent data must be omitted, not null"}
			}
			if len(t) == 0 || t[0] != '{' {
				return &ValidationError{Rule: "AEP-0001 §5.1 #17", Attr: "data", Msg: "data must be a JSON object"}
			}
			e.Data = append(json.RawMessage(nil), t...)
		default:
			if e.Extensions == nil {
				e.Extensions = make(map[string]json.RawMessage)
			}
			e.Extensions[name] = append(json.RawMessage(nil), bytes.TrimSpace(v)...)
		}
	}
	return nil
}

func decodeNonNegInt(v json.RawMessage) (int64, error) {
	var num json.Number
	if err := json.Unmarshal(v, &num); err != nil {
		return 0, fmt.Errorf("must be an integer")
	}
	n, err := num.Int64()
	if err != nil {
		return 0, fmt.Errorf("must be an integer, got %s", num)
	}
	if n < 0 {
		return 0, fmt.Errorf("must be >= 0, got %d", n)
	}
	return n, nil
}

// Parse decodes one event and applies the envelope and payload rules, and
// the bridge's envelope hygiene (CheckHygiene) to what peers send. The
// error, when not nil, is a *ValidationError naming the violated rule.
func Parse(b []byte) (*Event, error) {
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		var ve *ValidationError
		if asValidation(err, &ve) {
			return nil, ve
		}
		return nil, &ValidationError{Rule: "AEP-0001 §5", Msg: err.Error()}
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if err := e.CheckHygiene(); err != nil {
		return nil, err
	}
	return &e, nil
}

// EffectiveCapture returns the event's capture level with the default applied.
func (e *Event) EffectiveCapture() Capture { return e.Capture.OrDefault() }

// EffectiveSeverity returns the event's severity with the default applied.
func (e *Event) EffectiveSeverity() Severity { return e.Severity.OrDefault() }

// EpochOrZero returns the event's epoch with the default applied.
func (e *Event) EpochOrZero() int64 {
	if e.Epoch == nil {
		return 0
	}
	return *e.Epoch
}

// Int64 returns a pointer to n, for Seq and Epoch.
func Int64(n int64) *int64 { return &n }

// FormatTime formats t as the RFC 3339 timestamp AEP uses, in UTC with
// millisecond precision.
func FormatTime(t time.Time) string {
	var buf [len("2006-01-02T15:04:05.000Z07:00")]byte
	return string(t.UTC().AppendFormat(buf[:0], "2006-01-02T15:04:05.000Z07:00"))
}
