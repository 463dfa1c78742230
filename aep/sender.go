package aep

import "encoding/json"

// Who sent a command is the authenticating endpoint's knowledge, and the
// session that records the answer is often in another process: a bridge
// joined to the hub the operator connected to. A command must reach it
// byte-identically (AEP-0004 §4 item 4), so the hub says who sent it in a
// frame of its own, just before it, on the emitter's connection: a frame
// type without a dot, which an endpoint or emitter that does not know it
// ignores (AEP-0003 §2). Both sides advertise it under
// capabilities.experimental (AEP-0003 §4 rule 6): the emitter that
// honours it, so the hub sends it (and refuses to forward a command it
// cannot attribute where that matters); the hub that sends it, so the
// emitter takes no command from it unattributed.

// FrameSender is the frame that names the sender of the command that
// follows it.
const FrameSender = "aep-mcp-bridge-sender"

// SendersCapability is the key under capabilities.experimental that
// advertises sender frames; its value is {"versions":[1]}.
const SendersCapability = "aep-mcp-bridge-senders"

// Sender is a FrameSender frame: the command it names is the one with
// this Source and ID (Cause), sent by By, an operator that may only read
// when ReadOnly, in the identity groups Groups (which an approval
// policy's approvers may name).
type Sender struct {
	Type     string   `json:"type"`
	Cause    string   `json:"cause"`
	Source   string   `json:"source"`
	By       string   `json:"by"`
	Groups   []string `json:"groups,omitempty"`
	ReadOnly bool     `json:"read_only,omitempty"`
}

// NewSender returns the sender frame of the command cmd, sent by by, an
// operator in groups.
func NewSender(cmd *Event, by string, groups []string, readOnly bool) Sender {
	return Sender{Type: FrameSender, Cause: cmd.ID, Source: cmd.Source, By: by, Groups: groups, ReadOnly: readOnly}
}

// DecodeSender reads a sender frame; ok is false for anything else.
func DecodeSender(b []byte) (Sender, bool) {
	var s Sender
	if json.Unmarshal(b, &s) != nil || s.Type != FrameSender || s.Cause == "" || s.By == "" {
		return Sender{}, false
	}
	return s, true
}

// WithSenders adds the SendersCapability to an experimental capability
// block (nil or an object).
func WithSenders(experimental json.RawMessage) json.RawMessage {
	members := map[string]json.RawMessage{}
	json.Unmarshal(experimental, &members)
	members[SendersCapability] = json.RawMessage(`{"versions":[1]}`)
	b, _ := json.Marshal(members) // raw members of valid JSON always encode
	return b
}

// AdvertisesSenders reports whether an experimental capability block
// advertises sender frames of version 1.
func AdvertisesSenders(experimental json.RawMessage) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(experimental, &members) != nil {
		return false
	}
	var v struct {
		Versions []int `json:"versions"`
	}
	if json.Unmarshal(members[SendersCapability], &v) != nil {
		return false
	}
	for _, n := range v.Versions {
		if n == 1 {
			return true
		}
	}
	return false
}
