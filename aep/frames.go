package aep

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Frame types of the WebSocket binding (AEP-0003 §3.5, §4, §4.1, §5, §6.5).
// Frames carry a type without a dot; events always have one (AEP-0001 §6).
const (
	FrameHello           = "hello"
	FrameSubscribe       = "subscribe"
	FrameSubscribed      = "subscribed"
	FrameUnsubscribe     = "unsubscribe"
	FrameUnsubscribed    = "unsubscribed"
	FrameError           = "error"
	FrameClosing         = "closing"
	FrameRoster          = "roster"
	FramePing            = "ping"
	FramePong            = "pong"
	FrameReplayExhausted = "replay-exhausted"
)

// Roles a party declares in its hello (AEP-0003 §4 rule 2).
const (
	RoleEmitter  = "emitter"
	RoleConsumer = "consumer"
	RoleBoth     = "both"
)

// AckWindow is the ack window the bridge declares for the commands it
// accepts (AEP-0004 §3): a sender that hears nothing within it times out.
const AckWindow = 10 * time.Second

// IsEventType reports whether a frame's type names an event rather than a
// binding frame: event types always contain a dot (AEP-0001 §6).
func IsEventType(t string) bool { return strings.Contains(t, ".") }

// Identity is who a hello speaks for (AEP-0003 §4 rule 3).
type Identity struct {
	Agent    string `json:"agent,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// ControlCaps is the control block of a capability set: the commands a
// party accepts, authoritatively (AEP-0003 §4 rule 5, AEP-0004 §4).
type ControlCaps struct {
	Accepts     []string `json:"accepts"`
	AckWindowMS int64    `json:"ack_window_ms,omitempty"`
}

// NewControlCaps returns the control block for accepts with the bridge's
// ack window.
func NewControlCaps(accepts []string) ControlCaps {
	if accepts == nil {
		accepts = []string{}
	}
	return ControlCaps{Accepts: accepts, AckWindowMS: AckWindow.Milliseconds()}
}

// Raw encodes the control block for a Capabilities or roster entry.
func (c ControlCaps) Raw() json.RawMessage {
	b, _ := json.Marshal(c) // a struct of strings and an int always encodes
	return b
}

// ReplayCaps advertises a replay buffer (AEP-0003 §5).
type ReplayCaps struct {
	Buffer int  `json:"buffer"`
	All    bool `json:"all"`
}

// ResumeSecretCapability names the member of a hello's experimental
// capabilities that carries an emitter's resume secret: an endpoint gives
// one to each emitter connection, and an emitter that presents it again
// on a later connection takes back the sources it left with questions
// open. Only the connection it was given on ever carries it.
const ResumeSecretCapability = "resume-secret"

// Capabilities is the capability set of hello and of the discovery document
// (AEP-0003 §3.4, §4). Control stays raw: a roster relays a claimant's
// declaration verbatim (AEP-0003 §4.1 rule 4). Unknown keys are ignored on
// decoding (§4 rule 4).
type Capabilities struct {
	Emits        []string        `json:"emits,omitempty"`
	Filters      []string        `json:"filters,omitempty"`
	Replay       *ReplayCaps     `json:"replay,omitempty"`
	Capture      []string        `json:"capture,omitempty"`
	Control      json.RawMessage `json:"control,omitempty"`
	Roster       json.RawMessage `json:"roster,omitempty"`
	Experimental json.RawMessage `json:"experimental,omitempty"`
}

// Accepts returns the commands the control block declares, or nil.
func (c Capabilities) Accepts() []string {
	if len(c.Control) == 0 || string(c.Control) == "null" {
		return nil
	}
	var cc ControlCaps
	if json.Unmarshal(c.Control, &cc) != nil {
		return nil
	}
	return cc.Accepts
}

// Hello opens a WebSocket connection in each direction (AEP-0003 §4).
type Hello struct {
	Type         string        `json:"type"`
	Versions     []string      `json:"versions"`
	Role         string        `json:"role,omitempty"`
	Identity     Identity      `json:"identity"`
	Capabilities *Capabilities `json:"capabilities,omitempty"`
}

// NewHello returns a hello offering this implementation's version.
func NewHello(role string, id Identity, caps *Capabilities) Hello {
	return Hello{Type: FrameHello, Versions: []string{Version}, Role: role, Identity: id, Capabilities: caps}
}

// Subscribe opens a subscription (AEP-0003 §6.5). From is "all" or an array
// of positions (§5); Capture is a ceiling name.
type Subscribe struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Filter  json.RawMessage `json:"filter,omitempty"`
	From    json.RawMessage `json:"from,omitempty"`
	Capture string          `json:"capture,omitempty"`
}

// FromAll is the replay-all value of a subscribe's from (AEP-0003 §5).
var FromAll = json.RawMessage(`"all"`)

// Ref is a frame that only names a subscription or request: unsubscribe
// and unsubscribed (and subscribed, from endpoints that add nothing to it).
type Ref struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Subscribed confirms a subscription (AEP-0003 §6.5). Open and Replay are
// members this bridge's endpoint adds (advertised as the experimental
// capability "open-questions"): the subscription's first Open events are
// every open question it matches, the next Replay events are the replay it
// asked for, and live events follow. Receivers that do not know them
// ignore them.
type Subscribed struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Open   int    `json:"open"`
	Replay int    `json:"replay"`
}

// ErrorFrame refuses a frame or a command in-band (AEP-0003 §6.5, AEP-0004
// §4.2). ID names the refused frame's id, Cause the refused command's id.
type ErrorFrame struct {
	Type     string   `json:"type"`
	ID       string   `json:"id,omitempty"`
	Cause    string   `json:"cause,omitempty"`
	Code     string   `json:"code"`
	Detail   string   `json:"detail,omitempty"`
	Versions []string `json:"versions,omitempty"`
}

// NewError returns an error frame.
func NewError(id, cause, code, detail string) ErrorFrame {
	return ErrorFrame{Type: FrameError, ID: id, Cause: cause, Code: code, Detail: detail}
}

// Delivered is a subscription's last delivered position, in a closing
// frame.
type Delivered struct {
	Sub     string `json:"sub"`
	Session string `json:"session"`
	Epoch   int64  `json:"epoch"`
	Seq     int64  `json:"seq"`
}

// Closing announces an orderly close (AEP-0003 §3.5 rule 4).
type Closing struct {
	Type      string      `json:"type"`
	Reason    string      `json:"reason"`
	Delivered []Delivered `json:"delivered"`
}

// NewClosing returns a closing frame; delivered may be nil.
func NewClosing(reason string, delivered []Delivered) Closing {
	if delivered == nil {
		delivered = []Delivered{}
	}
	return Closing{Type: FrameClosing, Reason: reason, Delivered: delivered}
}

// RosterEntry is one live claim in a roster reply (AEP-0003 §4.1 rule 4).
type RosterEntry struct {
	Session  string          `json:"session"`
	Agent    string          `json:"agent,omitempty"`
	Instance string          `json:"instance,omitempty"`
	Control  json.RawMessage `json:"control,omitempty"`
	Emits    []string        `json:"emits,omitempty"`
}

// Roster is the reply to a roster request (AEP-0003 §4.1). A request is a
// Ref of type roster.
type Roster struct {
	Type    string        `json:"type"`
	ID      string        `json:"id"`
	Entries []RosterEntry `json:"entries"`
}

// Ping asks for liveness; the pong echoes T (AEP-0003 §3.5 rule 5).
type Ping struct {
	Type string          `json:"type"`
	T    json.RawMessage `json:"t,omitempty"`
}

// Earliest is the earliest position a replay buffer holds.
type Earliest struct {
	Epoch int64 `json:"epoch"`
	Seq   int64 `json:"seq"`
}

// ReplayExhausted says a resume position predates the buffer (AEP-0003 §5).
type ReplayExhausted struct {
	Type     string   `json:"type"`
	Sub      string   `json:"sub"`
	Session  string   `json:"session"`
	Earliest Earliest `json:"earliest"`
}

// Frame is the union of every frame's members, for decoding a frame of
// unknown type and dispatching on Type. Events decode too (Type has a dot);
// parse them with Parse.
type Frame struct {
	Type         string          `json:"type"`
	ID           string          `json:"id"`
	Cause        string          `json:"cause"`
	Code         string          `json:"code"`
	Detail       string          `json:"detail"`
	Reason       string          `json:"reason"`
	Versions     []string        `json:"versions"`
	Role         string          `json:"role"`
	Identity     Identity        `json:"identity"`
	Capabilities Capabilities    `json:"capabilities"`
	Filter       json.RawMessage `json:"filter"`
	From         json.RawMessage `json:"from"`
	Capture      string          `json:"capture"`
	T            json.RawMessage `json:"t"`
	Entries      []RosterEntry   `json:"entries"`
	Delivered    []Delivered     `json:"delivered"`
	Sub          string          `json:"sub"`
	Session      string          `json:"session"`
}

// ErrNotAFrame is returned by DecodeFrame for text that is not a JSON
// object with a string type.
var ErrNotAFrame = errors.New("a frame is a JSON object with a string type")

// DecodeFrame reads a text frame's members.
func DecodeFrame(data []byte) (Frame, error) {
	var f Frame
	if err := json.Unmarshal(data, &f); err != nil || f.Type == "" {
		return Frame{}, ErrNotAFrame
	}
	return f, nil
}

// EncodeFrame encodes a frame. Frames are plain structs of strings, numbers and
// raw JSON taken from already-valid input, so encoding cannot fail for the
// types in this file; a failure is reported as an error frame's bytes.
func EncodeFrame(frame any) []byte {
	b, err := json.Marshal(frame)
	if err != nil {
		b, _ = json.Marshal(NewError("", "", "internal", "the frame could not be encoded"))
	}
	return b
}
