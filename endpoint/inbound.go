package endpoint

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
)

// Flood control: each connection may send frameBurst commands and requests
// (subscribe, unsubscribe, roster, and frames of unknown type) at once, and
// frameRate per second after that. Each one beyond is refused in-band, one
// reply per frame: a command gets an error frame naming its id (cause), a
// request one naming its id, both with code limit-exceeded. Events, hello,
// ping and closing are not counted: an emitter's events are never refused
// for their rate.
const (
	frameBurst = 512
	frameRate  = 256
)

// bucket is a token bucket.
type bucket struct {
	tokens float64
	last   time.Time
}

func (b *bucket) take(now time.Time) bool {
	if b.last.IsZero() {
		b.tokens, b.last = frameBurst, now
	}
	b.tokens = min(frameBurst, b.tokens+now.Sub(b.last).Seconds()*frameRate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// overLimit is the detail of a frame refused for its rate.
func overLimit(what string) string {
	return fmt.Sprintf("this connection may send %d commands and requests per second, in bursts of %d; %s was not processed: send it again after a pause (a command with the same id)",
		frameRate, frameBurst, what)
}

func (s *socket) readLoop() {
	wait := s.e.opts.pongWait
	// Until hello, the handshake deadline holds: a pong does not extend
	// it, and any other frame before hello ends the connection.
	s.conn.SetReadDeadline(s.helloBy)
	s.conn.SetPongHandler(func(string) error {
		s.mu.Lock()
		hello := s.hello
		s.mu.Unlock()
		if !hello {
			return nil
		}
		return s.conn.SetReadDeadline(time.Now().Add(wait))
	})
	for {
		kind, data, err := s.conn.ReadMessage()
		if err != nil {
			return
		}
		s.conn.SetReadDeadline(time.Now().Add(wait))
		if kind == websocket.BinaryMessage {
			if s.allowed(aep.Frame{}) {
				s.errorFrame("", "", "unsupported", "binary frames are reserved in AEP 0.1; send JSON text frames")
			}
			continue
		}
		if !s.dispatch(data) {
			return
		}
	}
}

// allowed counts f against the connection's rate and, when it is over,
// refuses it in-band: one error frame per command or request, naming it. A
// frame with nothing to name gets at most one warning a second.
func (s *socket) allowed(f aep.Frame) bool {
	switch {
	case f.Type == aep.FrameHello || f.Type == aep.FramePing || f.Type == aep.FrameClosing:
		return true
	case aep.IsEventType(f.Type) && !aep.IsCommand(f.Type):
		return true
	}
	now := s.e.opts.now()
	if s.flood.take(now) {
		return true
	}
	switch {
	case aep.IsCommand(f.Type) && f.ID != "":
		s.errorFrame("", f.ID, "limit-exceeded", overLimit("command "+f.ID))
	case f.ID != "":
		s.errorFrame(f.ID, "", "limit-exceeded", overLimit(f.Type+" "+f.ID))
	case now.Sub(s.warned) > time.Second:
		s.warned = now
		s.errorFrame("", "", "limit-exceeded", overLimit("a frame without an id (and any others until the rate allows)"))
	}
	return false
}

// dispatch handles one text frame; it returns false to end the connection.
func (s *socket) dispatch(data []byte) bool {
	f, err := aep.DecodeFrame(data)
	if err != nil {
		if s.allowed(aep.Frame{}) {
			s.errorFrame("", "", "invalid-frame", err.Error())
		}
		return true
	}
	s.mu.Lock()
	hello := s.hello
	s.mu.Unlock()
	if !hello {
		if f.Type != aep.FrameHello {
			s.errorFrame("", "", "hello-required", "the first frame must be hello (AEP-0003 §3.5)")
			s.shutdown("hello required")
			return false
		}
		return s.handleHello(f)
	}
	if !s.allowed(f) {
		return true
	}
	if aep.IsEventType(f.Type) {
		s.handleEvent(data)
		return true
	}
	switch f.Type {
	case aep.FrameSubscribe:
		s.subscribe(f)
	case aep.FrameUnsubscribe:
		s.unsubscribe(f.ID)
	case aep.FramePing:
		s.send(aep.Ping{Type: aep.FramePong, T: f.T})
	case aep.FrameRoster:
		s.roster(f.ID)
	case aep.FrameClosing:
		return false
	default:
		// Unknown frame types are ignored (AEP-0003 §2).
	}
	return true
}

func (s *socket) handleHello(f aep.Frame) bool {
	if !slices.Contains(f.Versions, aep.Version) {
		s.send(aep.ErrorFrame{Type: aep.FrameError, Code: "version-unsupported", Versions: []string{aep.Version},
			Detail: "this endpoint speaks AEP " + aep.Version})
		s.shutdown("version unsupported")
		return false
	}
	caps := s.e.capabilities()
	resume := ""
	if f.Role == aep.RoleEmitter || f.Role == aep.RoleBoth {
		resume = presentedSecret(f.Capabilities.Experimental)
		if resume == "" {
			resume = newSecret()
		}
		caps.Experimental = withResumeSecret(caps.Experimental, resume)
	}
	caps.Experimental = withPrincipal(aep.WithSenders(caps.Experimental), s.e.access.Principal(s.auth))
	s.mu.Lock()
	s.hello, s.role = true, f.Role
	s.senders = aep.AdvertisesSenders(f.Capabilities.Experimental)
	s.agent, s.instance, s.emits = f.Identity.Agent, f.Identity.Instance, f.Capabilities.Emits
	if c := f.Capabilities.Control; len(c) > 0 && string(c) != "null" {
		s.control = c
		s.accepts = f.Capabilities.Accepts()
	}
	s.mu.Unlock()
	s.e.access.SayHello(s.auth, authority.Hello{Emitter: resume != "", Agent: f.Identity.Agent, Instance: f.Identity.Instance, Resume: resume})
	s.send(aep.NewHello(aep.RoleBoth, aep.Identity{Agent: s.e.opts.Agent}, caps))
	return true
}

// resumeSecretLen is the length of a resume secret: 32 bytes, base64url.
var resumeSecretLen = base64.RawURLEncoding.EncodedLen(32)

// presentedSecret returns the resume secret a hello's experimental
// capabilities present, or "" when there is none or it is malformed.
func presentedSecret(experimental json.RawMessage) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(experimental, &members) != nil {
		return ""
	}
	var secret string
	if json.Unmarshal(members[resumeCapability], &secret) != nil || len(secret) != resumeSecretLen {
		return ""
	}
	if _, err := base64.RawURLEncoding.DecodeString(secret); err != nil {
		return ""
	}
	return secret
}

// newSecret returns a fresh resume secret.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// PrincipalCapability is the key under the experimental capabilities of
// the endpoint's hello that tells the connection who it authenticated as
// (AEP-0003 §4 rule 6): {"name": NAME, "answer": BOOL, "servers": [GLOB…]}.
// The inbox shows it, and offers no answer to an operator that may only
// read.
const PrincipalCapability = "aep-mcp-bridge-principal"

// withPrincipal adds p, as PrincipalCapability, to the endpoint's
// experimental capabilities, for one connection's hello.
func withPrincipal(experimental json.RawMessage, p authority.Principal) json.RawMessage {
	members := map[string]json.RawMessage{}
	json.Unmarshal(experimental, &members)
	members[PrincipalCapability], _ = json.Marshal(struct {
		Name    string   `json:"name"`
		Answer  bool     `json:"answer"`
		Servers []string `json:"servers"`
	}{p.Name, p.Rights&authority.Command != 0, p.Scope.Patterns()})
	b, _ := json.Marshal(members) // raw members of valid JSON always encode
	return b
}

// withResumeSecret adds the resume secret to the endpoint's experimental
// capabilities, for one connection's hello.
func withResumeSecret(experimental json.RawMessage, secret string) json.RawMessage {
	members := map[string]json.RawMessage{}
	json.Unmarshal(experimental, &members)
	members[resumeCapability], _ = json.Marshal(secret)
	b, _ := json.Marshal(members) // raw members of valid JSON always encode
	return b
}

// handleEvent takes an event sent on the connection: a command is routed
// to the session that owns it; any other event is ingested when this
// connection may write it, and refused in-band (naming the event's id)
// when it may not.
func (s *socket) handleEvent(data []byte) {
	ev, err := aep.Parse(data)
	if err != nil {
		var probe struct {
			ID string `json:"id"`
		}
		json.Unmarshal(data, &probe)
		s.errorFrame("", probe.ID, "invalid-event", err.Error())
		return
	}
	if aep.IsCommand(ev.Type) {
		s.command(ev, data)
		return
	}
	if why := s.e.writtenElsewhere(ev); why != "" {
		s.errorFrame("", ev.ID, "unauthorized", why)
		return
	}
	if why := s.e.authorize(s, ev); why != "" {
		s.errorFrame("", ev.ID, "unauthorized", why)
		return
	}
	// An emitter owns the sessions it sequences: commands for them are
	// routed to this connection. The claim is made before the event is
	// published, so an operator who answers the moment it arrives finds
	// the route.
	claimed := ev.Session != "" && ev.Seq != nil && s.e.access.Sequenced(s.auth, ev.Source, ev.Session)
	writer := s.e.access.Writer(s.auth)
	if err := s.e.opts.Hub.IngestFrom(writer, []*aep.Event{ev}, [][]byte{data}); err != nil {
		if claimed {
			s.e.access.Unsequenced(s.auth, ev.Session)
		}
		var ie *bus.IngestError
		if errors.As(err, &ie) {
			s.errorFrame("", ev.ID, ie.Code, ie.Detail)
		}
		return
	}
	// Operators on the plane's other front doors see it too, and their
	// commands for the session come here.
	s.e.relayEvent(s, writer, ev, data, claimed)
}

// command routes a command to the one session that claims it (AEP-0004
// §4), with who sent it: the principal the connection authenticated. A
// command the principal may not send is refused on its own connection and
// never reaches the session: outside its scope, or from a principal that
// may not command; a read-only operator's too, with an error naming its
// right, so a reader cannot fill a session's history (and its log) with
// commands and their rejections.
func (s *socket) command(ev *aep.Event, data []byte) {
	p := s.e.access.Principal(s.auth)
	if why := p.MayCommand(ev, s.e.opts.Hub); why != nil {
		s.errorFrame("", ev.ID, why.Code(), why.Detail)
		return
	}
	from := control.Sender{Authenticated: true, By: p.Name, Groups: p.Groups}
	claim, why := s.e.route(ev.Session)
	if why != nil && why.Reason == authority.ReasonNoRoute && s.e.opts.Plane != nil {
		// Another process of the operator plane may own the session.
		if code, detail := s.e.planeCommand(p, ev, data); code != "" {
			s.errorFrame("", ev.ID, code, detail)
		}
		return
	}
	if why != nil {
		// AEP-0004 §4.2: a connection-scoped refusal; it never enters
		// the session's history.
		s.errorFrame("", ev.ID, why.Code(), why.Detail)
		return
	}
	if !slices.Contains(claim.Accepts, ev.Type) {
		s.errorFrame("", ev.ID, "unsupported", fmt.Sprintf("session %q accepts %v, not %s", ev.Session, claim.Accepts, ev.Type))
		return
	}
	var code2, detail2 string
	if rt, ok := claim.Target.(RawTarget); ok {
		code2, detail2 = rt.SubmitRaw(ev, data, from)
	} else {
		code2, detail2 = claim.Target.Submit(*ev, from)
	}
	if code2 != "" {
		s.errorFrame("", ev.ID, code2, detail2)
	}
}

func (s *socket) roster(id string) {
	if id == "" {
		s.errorFrame("", "", "invalid-filter", "roster needs an id")
		return
	}
	s.mu.Lock()
	role := s.role
	s.mu.Unlock()
	if role == aep.RoleEmitter {
		s.errorFrame(id, "", "unauthorized", "roster is answered on consumer connections only")
		return
	}
	s.send(aep.Roster{Type: aep.FrameRoster, ID: id, Entries: s.e.rosterEntries(s.e.access.Principal(s.auth))})
}
