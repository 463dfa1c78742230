package translate

import (
	"encoding/json"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// FormatPassword marks a secret string (OpenAPI's format, which servers
// use for password inputs): any string passes, and the field is secret.
const FormatPassword = "password"

// classifySecret sets fld.Secret (DESIGN decision 10). The schema makes any
// field secret with format "password" or writeOnly: true; the key or title
// of a string or number field does when it names a credential in the §9.4
// vocabulary (aep.IsCredentialName). A select or boolean carries
// server-defined ids and flags, never a credential, so only its schema
// makes it secret.
func (fld *Field) classifySecret(m *members, unsupported func(string) error) error {
	if raw, ok := m.vals["writeOnly"]; ok {
		var w bool
		if json.Unmarshal(raw, &w) != nil {
			return unsupported("writeOnly must be a boolean")
		}
		fld.Secret = w
	}
	fld.Secret = fld.Secret || fld.Format == FormatPassword
	switch fld.Kind {
	case KindString, KindNumber, KindInteger:
		fld.Secret = fld.Secret || aep.IsCredentialName(fld.ID) || aep.IsCredentialName(fld.Title)
	}
	return nil
}
