package natsplane

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// Relayed statements carry what an emitter connected to a front door
// (a bridge joined with --relay, any AEP emitter on /socket) writes: its
// events, its leaving, and its sessions' claims. The door that holds the
// emitter's connection checked its authority (package authority); it
// states what it admitted, signed with its key and MAC'd with a key
// derived from the fleet's token, which the cluster's credentials do not
// give. Every other door puts the events in its hub as that door's
// emitter's writing ("relay <door> <emitter>"), so the hub's rules hold
// there too, and routes a command for such a session to the door, which
// hands it to the emitter's connection.
//
// A relayed statement's body (after the envelope's signed head):
//
//	op      1 byte   relayEvent, relayLeft or relayBinding
//	flags   1 byte   relayKeepDated: the emitter's dated questions wait
//	                 for their expiry when it leaves (a proved bridge)
//	n       1 byte   the length of the emitter's name, 1-64
//	emitter n bytes  the emitter's name on the door (a digest)
//	mac     32 bytes HMAC-SHA256 under the relay key of all the above,
//	                 the plane, the name it is put under, the door's key
//	                 and the payload
//	payload          the event, or the binding (JSON); empty for relayLeft
const (
	relayEvent   byte = 'e'
	relayLeft    byte = 'l'
	relayBinding byte = 'b'

	relayKeepDated byte = 1

	relayMaxName = 64
	relayMACSize = sha256.Size
	// relayOverhead is what a relayed statement adds to an envelope.
	relayOverhead = 3 + relayMaxName + relayMACSize
)

// relayKeyOf derives the relay key of the plane prefix from the fleet's
// token.
func relayKeyOf(token, prefix string) ([]byte, error) {
	return hkdf.Key(sha256.New, []byte(token), []byte("aep-mcp-bridge operator plane"), "relayed v1 "+prefix, 32)
}

// relayed is a relayed statement, opened.
type relayed struct {
	door      string // the fingerprint of the door's key
	signedAt  time.Time
	op        byte
	keepDated bool
	emitter   string
	payload   []byte
}

// relayMAC is the MAC of a relayed statement's parts.
func relayMAC(key []byte, prefix, name, door string, head, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(adOf(prefix, name, door, string(head)))
	h.Write(payload)
	return h.Sum(nil)
}

// sealRelayed makes a relayed statement under name, signed by key.
func sealRelayed(key *proof.Key, macKey []byte, prefix, name string, now time.Time, op byte, keepDated bool, emitter string, payload []byte) []byte {
	flags := byte(0)
	if keepDated {
		flags = relayKeepDated
	}
	head := append([]byte{op, flags, byte(len(emitter))}, emitter...)
	body := append(append(head, relayMAC(macKey, prefix, name, key.Fingerprint(), head, payload)...), payload...)
	return seal(key, kindRelay, prefix, name, now, body)
}

// openRelayed checks that b is a relayed statement under name, signed by
// its door's key and MAC'd with the relay key, and reads it. It trusts
// nothing in b before both verify.
func openRelayed(macKey []byte, prefix, name string, b []byte) (relayed, error) {
	env, err := open(b, kindRelay, prefix, name)
	if err != nil {
		return relayed{}, err
	}
	body := env.body
	if len(body) < 3 {
		return relayed{}, fmt.Errorf("%w: a relayed statement without its head", errEnvelope)
	}
	n := int(body[2])
	if n == 0 || n > relayMaxName || len(body) < 3+n+relayMACSize {
		return relayed{}, fmt.Errorf("%w: a relayed statement's emitter name is out of bounds", errEnvelope)
	}
	head, mac, payload := body[:3+n], body[3+n:3+n+relayMACSize], body[3+n+relayMACSize:]
	if !hmac.Equal(mac, relayMAC(macKey, prefix, name, env.fp, head, payload)) {
		return relayed{}, fmt.Errorf("%w: a relayed statement not made with the fleet's token", errEnvelope)
	}
	switch op := head[0]; {
	case op != relayEvent && op != relayLeft && op != relayBinding:
		return relayed{}, fmt.Errorf("%w: a relayed statement of unknown kind %q", errEnvelope, op)
	case head[1]&^relayKeepDated != 0:
		return relayed{}, fmt.Errorf("%w: a relayed statement with unknown flags", errEnvelope)
	}
	return relayed{door: env.fp, signedAt: env.signedAt, op: head[0], keepDated: head[1]&relayKeepDated != 0,
		emitter: string(head[3:]), payload: payload}, nil
}

// emitterName names an emitter of this door on the plane: a digest of
// its writer's name on the door, which may name an operator.
func emitterName(writer string) string {
	sum := sha256.Sum256([]byte("relayed emitter\x00" + writer))
	return hex.EncodeToString(sum[:16])
}

// relayWriterOf names to the hub the emitter of the door fp.
func relayWriterOf(door, emitter string) string { return "relay " + door + " " + emitter }

// leftToken is the events stream's subject token of an emitter's leaving.
func leftToken(door, emitter string) string { return token("relayed emitter left "+door, emitter) }

// Relay states on the plane an event that an emitter connected to this
// front door wrote, which the door's hub admitted: writer is the
// emitter's name on the door, keepDated what its leaving does to its
// dated questions. Events of sessions without an id, and commands, stay
// on the door.
func (m *Member) Relay(writer string, keepDated bool, ev aep.Event, raw []byte) {
	if ev.Session == "" || aep.IsCommand(ev.Type) {
		return
	}
	if len(raw) > bus.DefaultMaxEvent {
		// The stream takes no more (Options.Hub bounds the hub alike).
		m.log.Warn("an event an emitter wrote to this door is larger than the operator plane carries; it stays on this door",
			"type", ev.Type, "id", ev.ID, "bytes", len(raw), "bound", bus.DefaultMaxEvent)
		return
	}
	m.enqueue(item{op: opRelayEvent, tok: token(ev.Source, ev.Session), id: ev.ID, conn: emitterName(writer),
		keepDated: keepDated, raw: raw, keep: bus.MustDeliver(&ev)})
}

// RelayLeft states on the plane that the emitter writer's last
// connection to this door ended: its questions follow the abandoned rule
// on every door.
func (m *Member) RelayLeft(writer string, keepDated bool) {
	m.enqueue(item{op: opRelayLeft, conn: emitterName(writer), keepDated: keepDated, keep: true})
}

// ClaimRelayed makes this member the route of the commands of a session
// that an emitter connected to this door writes (t hands them to its
// connection), and states the claim on the plane. A session certified to
// this member's key is its own sessions', never an emitter's.
func (m *Member) ClaimRelayed(writer string, b plane.Binding, t plane.Target) error {
	if proof.SessionKey(b.Session) == m.fp {
		return fmt.Errorf("session %q is certified to this process's key; an emitter may not claim it", b.Session)
	}
	return m.claim(b, t, item{op: opRelayBind, conn: emitterName(writer)})
}

// ClaimedElsewhere returns the fingerprint of the other door (or member)
// whose live claim on the plane holds the session of source, or "": an
// emitter writes a session through one front door at a time.
func (m *Member) ClaimedElsewhere(source, session string) string {
	m.ingest.Lock()
	defer m.ingest.Unlock()
	return m.claimantLocked(token(source, session), "")
}

// claimantLocked returns the live member, other than except, whose claim
// holds the session tok, or "". Callers hold m.ingest.
func (m *Member) claimantLocked(tok, except string) string {
	if rb, ok := m.remote[tok]; ok && rb.fp != except && !m.peerLocked(rb.fp).gone {
		return rb.fp
	}
	return ""
}

// carryRelayed carries out a relayed operation.
func (m *Member) carryRelayed(it item, now time.Time, put func(subject string, data []byte, id string) error) error {
	switch it.op {
	case opRelayEvent:
		data := sealRelayed(m.key, m.relayKey, m.n.prefix, it.tok, now, relayEvent, it.keepDated, it.conn, it.raw)
		return put(m.n.eventSubject(it.tok), data, "r."+it.tok+"."+it.id)
	case opRelayLeft:
		tok := leftToken(m.fp, it.conn)
		return put(m.n.eventSubject(tok), sealRelayed(m.key, m.relayKey, m.n.prefix, tok, now, relayLeft, it.keepDated, it.conn, nil), "")
	}
	return fmt.Errorf("not a relayed operation: %d", it.op)
}

// isRelayed reports whether b is a relayed statement (it still has to
// open).
func isRelayed(b []byte) bool { return len(b) > 4 && b[4] == kindRelay }

// known reports whether fp is a member of the plane: its sessions are
// its own, and no door relays them. Callers hold m.ingest.
func (m *Member) knownLocked(fp string) bool {
	if fp == "" {
		return false
	}
	_, ok := m.peers[fp]
	return ok || fp == m.fp
}

// takeRelayed puts in the hub what another door relayed of its
// emitters, stored under subject at stored.
func (m *Member) takeRelayed(subject string, data []byte, stored time.Time) {
	tok, ok := cutPrefix(subject, m.n.prefix+".ev.")
	if !ok {
		return
	}
	r, err := openRelayed(m.relayKey, m.n.prefix, tok, data)
	if err != nil || r.door == m.fp {
		if err != nil {
			m.log.Debug("ignored a relayed statement that does not verify", "subject", subject, "err", err)
		}
		return
	}
	w := relayWriterOf(r.door, r.emitter)
	m.ingest.Lock()
	defer m.ingest.Unlock()
	switch r.op {
	case relayLeft:
		if tok == leftToken(r.door, r.emitter) && m.fresh(r.signedAt, stored) {
			m.hub.Left(w, r.keepDated)
		}
		return
	case relayBinding:
		return // bindings live in the sessions' bucket
	}
	ev, err := aep.Parse(r.payload)
	if err != nil || ev.Session == "" || aep.IsCommand(ev.Type) || token(ev.Source, ev.Session) != tok ||
		m.knownLocked(proof.SessionKey(ev.Session)) {
		m.log.Debug("ignored a relayed event that is not its subject's, or of a member's session", "subject", subject)
		return
	}
	if owner := m.claimantLocked(tok, r.door); owner != "" {
		m.log.Warn("ignored an event a door relayed into a session another door's emitter claims", "door", r.door, "claimant", owner,
			"id", ev.ID)
		return
	}
	if ev.Type == "attention.requested" && !m.admitQuestion(envelope{signedAt: r.signedAt}, ev, tok, stored) {
		return
	}
	m.relayedBy(r.door)[w] = r.keepDated
	err = m.hub.IngestFrom(w, []*aep.Event{ev}, [][]byte{r.payload})
	if m.peerLocked(r.door).gone {
		m.hub.Left(w, r.keepDated)
	}
	if err != nil {
		m.refusals++
		m.log.Warn("the front door's hub refused an event another door relayed", "type", ev.Type, "id", ev.ID, "err", err,
			"refused_total", m.refusals)
		return
	}
	if _, claimed := m.remote[tok]; !claimed {
		// The door's claim travels through the sessions' bucket, apart
		// from this event: until it is read, the door that relayed the
		// session's events routes its commands (relayedOwner).
		m.relayedFrom.add(ev.Session, tok, r.door)
	}
	m.settledLocked(ev, tok)
}

// relayedBy returns the emitters the door fp relayed, by their writer
// in the hub, with what their leaving does to their dated questions.
// Callers hold m.ingest.
func (m *Member) relayedBy(door string) map[string]bool {
	ws := m.relayers[door]
	if ws == nil {
		ws = map[string]bool{}
		m.relayers[door] = ws
	}
	return ws
}

// takeRelayedBinding keeps a claim another door stated for its
// emitter's session, for the roster and the routing of its commands.
func (m *Member) takeRelayedBinding(e entry) {
	r, err := openRelayed(m.relayKey, m.n.prefix, e.key, e.value)
	if err != nil || r.op != relayBinding || r.door == m.fp {
		return
	}
	var b plane.Binding
	if json.Unmarshal(r.payload, &b) != nil || token(b.Source, b.Session) != e.key {
		return
	}
	m.ingest.Lock()
	defer m.ingest.Unlock()
	if m.knownLocked(proof.SessionKey(b.Session)) || m.ended.has(e.key) || m.claimantLocked(e.key, r.door) != "" {
		// A member's session, ended, or claimed first through another
		// door: the claim is read and refused, so the door that relayed
		// the session no longer routes its commands.
		if h, ok := m.relayedFrom.of(b.Session); ok && h.tok == e.key {
			m.relayedFrom.drop(b.Session)
		}
		return
	}
	m.remote[e.key] = remoteBinding{fp: r.door, b: b, relayed: true}
	m.relayedFrom.drop(b.Session)
}

// relayedOwner returns the door whose emitter claims session, or "":
// the door its claim names; before the claim is read, the door that
// relayed the session's events, which holds the claim since before it
// relayed them (the endpoint claims first) and checks again that it
// does.
func (m *Member) relayedOwner(session string) string {
	m.ingest.Lock()
	defer m.ingest.Unlock()
	for _, rb := range m.remote {
		if rb.relayed && rb.b.Session == session && !m.peerLocked(rb.fp).gone {
			return rb.fp
		}
	}
	// A session certified to a member is that member's, whatever door
	// relayed events under its id before this one knew the member.
	if h, ok := m.relayedFrom.of(session); ok && !m.knownLocked(proof.SessionKey(session)) && !m.ended.has(h.tok) &&
		!m.peerLocked(h.door).gone && m.claimantLocked(h.tok, h.door) == "" {
		return h.door
	}
	return ""
}

// relayHint is the door that relayed a session's events, whose claim
// on it is not read yet.
type relayHint struct {
	tok, door string
	n         uint64 // the order it was added in (relayHints.order)
}

// relayHints are the doors that relayed sessions whose claims are not
// read yet, by session: the first door to relay a session keeps it, as
// the first claim read does. A session whose events come without a claim
// (events POSTed to a door) stays until the oldest go, past max.
type relayHints struct {
	max int
	by  map[string]relayHint
	// order holds the hints in the order they came, some dropped since:
	// a session dropped and added again is in it twice, and only the
	// entry of its current hint (n) may evict it.
	order []hintAt
	n     uint64
}

// hintAt is the n-th hint added, for session.
type hintAt struct {
	session string
	n       uint64
}

func newRelayHints(n int) *relayHints { return &relayHints{max: n, by: map[string]relayHint{}} }

// current says whether at is the session's hint in force.
func (r *relayHints) current(at hintAt) bool {
	h, ok := r.by[at.session]
	return ok && h.n == at.n
}

func (r *relayHints) add(session, tok, door string) {
	if _, ok := r.by[session]; ok {
		return
	}
	r.n++
	r.by[session] = relayHint{tok: tok, door: door, n: r.n}
	r.order = append(r.order, hintAt{session, r.n})
	for len(r.by) > r.max {
		if r.current(r.order[0]) {
			delete(r.by, r.order[0].session)
		}
		r.order = r.order[1:]
	}
	if len(r.order) > 2*len(r.by)+1024 { // forget the dropped
		r.order = slices.DeleteFunc(r.order, func(at hintAt) bool { return !r.current(at) })
	}
}

func (r *relayHints) drop(session string) { delete(r.by, session) }

func (r *relayHints) of(session string) (relayHint, bool) {
	h, ok := r.by[session]
	return h, ok
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) <= len(prefix) || s[:len(prefix)] != prefix {
		return "", false
	}
	return s[len(prefix):], true
}
