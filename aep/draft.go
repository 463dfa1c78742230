package aep

// Draft is an event before its emitter stamps it: the parts a stage decides
// (type, subject, cause, severity, capture, data), without the identity and
// position the session emitter assigns (id, time, source, agent, session,
// seq, epoch). Data is any JSON-encodable value, or nil.
type Draft struct {
	Type     string
	Subject  string
	Cause    string
	Severity Severity
	Capture  Capture
	Data     any
}
