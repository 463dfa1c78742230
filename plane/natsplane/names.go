package natsplane

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
)

// names are the streams, buckets and subjects of one plane prefix.
type names struct {
	prefix string
	// events is the stream of every session's events, one subject per
	// session (P.ev.<token>), so its per-subject bound is a session's
	// replay depth.
	events, eventSubjects string
	// open, sessions, commands and members are the key-value buckets of
	// the open questions, the claimed sessions, the commands' recorded
	// acks, and the members' heartbeats.
	open, sessions, commands, members string
	// identities is the bucket of the named operators and clients;
	// notified the claims of the notifications sent (notified.go).
	identities, notified string
}

// validPrefix is what --nats-prefix takes: it names streams and buckets,
// and starts subjects.
var validPrefix = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

func namesOf(prefix string) (names, error) {
	if !validPrefix.MatchString(prefix) {
		return names{}, fmt.Errorf("the plane prefix %q must be 1-32 characters of [A-Za-z0-9_-], starting alphanumeric", prefix)
	}
	return names{prefix: prefix, events: prefix + "_events", eventSubjects: prefix + ".ev.*",
		open: prefix + "_open", sessions: prefix + "_sessions", commands: prefix + "_commands", members: prefix + "_members",
		identities: prefix + "_identities", notified: prefix + "_notified"}, nil
}

// token names a session (source and session: session ids are unique per
// emitter only, AEP-0001 §5.2) in one subject token or key: session ids
// may hold dots, which NATS reads as token separators.
func token(source, session string) string {
	sum := sha256.Sum256([]byte(source + "\x00" + session))
	return hex.EncodeToString(sum[:16])
}

// eventSubject is the subject of a session's events.
func (n names) eventSubject(tok string) string { return n.prefix + ".ev." + tok }

// redeliverSubject carries re-sent acks, live only (nothing stores them:
// the history holds each event once).
func (n names) redeliverSubject(tok string) string { return n.prefix + ".redeliver." + tok }

// commandSubject is where the member whose key is fp takes commands.
func (n names) commandSubject(fp string) string { return n.prefix + ".cmd." + fp }

// openKey is the key of the open question id asked by the member fp:
// each member's keys start with its fingerprint, so it watches its own.
func openKey(fp, id string) string { return fp + "." + id }

// recordKey is the key of the recorded ack of a command (source, id) to
// a session of the member fp (AEP-0004 §3: commands are deduped on
// source and id).
func recordKey(fp, source, id string) string {
	sum := sha256.Sum256([]byte(source + "\x00" + id))
	return fp + "." + hex.EncodeToString(sum[:16])
}
