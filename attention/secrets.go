package attention

import "github.com/agenteventprotocol/aep-mcp-bridge/aep"

// RecordedAnswer returns answer a, given in a command about question
// subject, as the session history may record it (control.Target): gated
// for the attention ceiling against the question's fields exactly as
// attention.answered is (GateAnswer: free text only at redacted or above,
// secret values as the AEP-0003 §9.4 placeholder at any level, keys with
// no field dropped). An answer to a question that is not pending keeps no
// values: without the question's fields nothing tells a secret from a
// number.
func (m *Manager) RecordedAnswer(subject string, a aep.Answer) aep.Answer {
	m.mu.Lock()
	var fields []aep.FieldSpec
	if q, ok := m.pending[subject]; ok {
		fields = q.fields
	}
	m.mu.Unlock()
	return GateAnswer(fields, a, m.ceiling, m.red)
}
