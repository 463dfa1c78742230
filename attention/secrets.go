package attention

import "github.com/agenteventprotocol/aep-mcp-bridge/aep"

// maxSecretQuestions bounds how many questions' secret field ids a Manager
// remembers for scrubbing commands, as the control intake bounds its
// dedupe state.
const maxSecretQuestions = 4096

// rememberSecretsLocked keeps the ids of q's secret fields, so commands
// answering q are recorded without their values, even after q settled.
func (m *Manager) rememberSecretsLocked(q *question) {
	var ids []string
	for _, f := range q.fields {
		if f.Secret {
			ids = append(ids, f.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	m.secrets[q.id] = ids
	m.secretOrder = append(m.secretOrder, q.id)
	if len(m.secretOrder) > maxSecretQuestions {
		delete(m.secrets, m.secretOrder[0])
		m.secretOrder = m.secretOrder[1:]
	}
}

// SecretKeys returns which of keys, the value keys of a command answering
// question subject, hold values the session history must never record
// (control.Target): the question's secret fields, and any key that names a
// credential (aep.IsCredentialName), which covers questions that are
// unknown or long settled.
func (m *Manager) SecretKeys(subject string, keys []string) []string {
	m.mu.Lock()
	ids := m.secrets[subject]
	m.mu.Unlock()
	var out []string
	for _, k := range keys {
		if contains(ids, k) || aep.IsCredentialName(k) {
			out = append(out, k)
		}
	}
	return out
}
