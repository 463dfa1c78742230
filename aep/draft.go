package aep

// Draft is an event before its emitter stamps it: the parts a stage decides
// (type, subject, cause, severity, capture, extension attributes, data),
// without the identity and position the session emitter assigns (id, time,
// source, agent, session, seq, epoch). Data is any JSON-encodable value, or
// nil. Extensions are extension attributes (AEP-0001 §5.4), each a string,
// an integer or a boolean; nil means none.
type Draft struct {
	Type       string
	Subject    string
	Cause      string
	Severity   Severity
	Capture    Capture
	Extensions map[string]any
	Data       any
}
