package identity

import (
	"crypto/subtle"
	"slices"
	"strconv"
	"time"
)

// Directory answers who a presented credential, or a name a trusted proxy
// sent, is: one Document, indexed. It is immutable and safe for concurrent
// use; a changed document is a new Directory.
type Directory struct {
	doc       *Document
	operators map[string]int // credential id → index in doc.Operators
	clients   map[string]int // credential id → index in doc.Clients
}

// NewDirectory indexes d, which it keeps: the caller must not change d
// after. A nil d is the empty document.
func NewDirectory(d *Document) *Directory {
	if d == nil {
		d = &Document{}
	}
	dir := &Directory{doc: d, operators: map[string]int{}, clients: map[string]int{}}
	for i, o := range d.Operators {
		if o.Credential != nil {
			dir.operators[o.Credential.ID] = i
		}
	}
	for i, c := range d.Clients {
		dir.clients[c.Credential.ID] = i
	}
	return dir
}

// Document returns the document the directory indexes. The caller must
// not change it.
func (d *Directory) Document() *Document { return d.doc }

// Empty reports whether there is no record at all.
func (d *Directory) Empty() bool { return len(d.doc.Operators) == 0 && len(d.doc.Clients) == 0 }

// Reason says why a directory refused.
type Reason uint8

// The reasons of an AuthError.
const (
	// ReasonMalformed: the text is not a credential of this bridge.
	ReasonMalformed Reason = iota + 1
	// ReasonUnknown: no record has this credential (it was revoked, or
	// never issued, or its secret is wrong: the directory does not say
	// which).
	ReasonUnknown
	// ReasonKind: an operator credential where a client's is wanted, or
	// the other way round.
	ReasonKind
	// ReasonExpired: the record's access ended.
	ReasonExpired
	// ReasonNoRecord: no operator has the name a proxy sent.
	ReasonNoRecord
	// ReasonNotProxy: the operator a proxy named authenticates with a
	// credential, not by a proxy's header.
	ReasonNotProxy
)

var reasonText = map[Reason]string{
	ReasonMalformed: "malformed", ReasonUnknown: "unknown", ReasonKind: "wrong-kind", ReasonExpired: "expired",
	ReasonNoRecord: "no-record", ReasonNotProxy: "not-proxy",
}

// String names the reason, for logs.
func (r Reason) String() string {
	if s, ok := reasonText[r]; ok {
		return s
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// AuthError is a refusal to authenticate. It names the record when there
// is one (for the operator's own log line), never the credential.
type AuthError struct {
	Reason Reason
	// Name is the record's name, when one was found.
	Name string
}

func (e *AuthError) Error() string {
	switch e.Reason {
	case ReasonMalformed:
		return ErrNotCredential.Error()
	case ReasonUnknown:
		return "no record has this credential: it was revoked, or never issued"
	case ReasonKind:
		return "this credential opens another kind of record"
	case ReasonExpired:
		return strconv.Quote(e.Name) + "'s access has expired"
	case ReasonNoRecord:
		return "no operator has the name the proxy sent; add one with operators add NAME --proxy"
	case ReasonNotProxy:
		return strconv.Quote(e.Name) + " authenticates with its credential, not by a proxy's header; add a proxy operator under another name"
	}
	return "refused"
}

// dummy is the verifier checked against when no record has a presented
// credential's id, so an unknown id costs what a wrong secret does.
var dummy = Verifier{Salt: make([]byte, saltSize), Hash: make([]byte, hashSize)}

// Authenticate returns the operator whose credential text is, at now.
// It compares the secret in constant time; the error is an *AuthError.
func (d *Directory) Authenticate(text string, now time.Time) (Operator, error) {
	i, err := find(text, KindOperator, d.operators, func(i int) *Verifier { return d.doc.Operators[i].Credential })
	if err != nil {
		return Operator{}, err
	}
	o := d.doc.Operators[i]
	if o.Expired(now) {
		return Operator{}, &AuthError{Reason: ReasonExpired, Name: o.Name}
	}
	return o, nil
}

// AuthenticateClient returns the gateway client whose credential text is,
// at now, as Authenticate does for operators.
func (d *Directory) AuthenticateClient(text string, now time.Time) (Client, error) {
	i, err := find(text, KindClient, d.clients, func(i int) *Verifier { return &d.doc.Clients[i].Credential })
	if err != nil {
		return Client{}, err
	}
	c := d.doc.Clients[i]
	if c.Expired(now) {
		return Client{}, &AuthError{Reason: ReasonExpired, Name: c.Name}
	}
	return c, nil
}

// find returns the index of the record of kind whose credential text is:
// index maps credential ids to records, verifier returns a record's. An
// unknown id is checked against a dummy verifier, so it costs what a
// wrong secret does.
func find(text string, kind Kind, index map[string]int, verifier func(int) *Verifier) (int, error) {
	p, err := ParseCredential(text)
	if err != nil {
		return 0, &AuthError{Reason: ReasonMalformed}
	}
	if p.Kind != kind {
		return 0, &AuthError{Reason: ReasonKind}
	}
	i, ok := index[p.ID]
	v := &dummy
	if ok {
		v = verifier(i)
	}
	if !v.Matches(p) || !ok {
		return 0, &AuthError{Reason: ReasonUnknown}
	}
	return i, nil
}

// Proxy returns the proxy operator named name (the value of the trusted
// proxy's header), at now. The name is compared exactly.
func (d *Directory) Proxy(name string, now time.Time) (Operator, error) {
	o, ok := d.doc.Operator(name)
	switch {
	case !ok:
		return Operator{}, &AuthError{Reason: ReasonNoRecord}
	case !o.Proxy:
		return Operator{}, &AuthError{Reason: ReasonNotProxy, Name: o.Name}
	case o.Expired(now):
		return Operator{}, &AuthError{Reason: ReasonExpired, Name: o.Name}
	}
	return o, nil
}

// ProofKey returns what the credential proof (package proof) needs for
// the operator credential whose public id is id, at now: the operator,
// the salt its verifier was made with (the prover derives the key from
// it) and the key, the verifier's hash.
func (d *Directory) ProofKey(id string, now time.Time) (o Operator, salt, key []byte, err error) {
	i, ok := d.operators[id]
	if !ok {
		return Operator{}, nil, nil, &AuthError{Reason: ReasonUnknown}
	}
	o = d.doc.Operators[i]
	if o.Expired(now) {
		return Operator{}, nil, nil, &AuthError{Reason: ReasonExpired, Name: o.Name}
	}
	return o, slices.Clone(o.Credential.Salt), slices.Clone(o.Credential.Hash), nil
}

// Operator returns the operator named name, whatever its state.
func (d *Directory) Operator(name string) (Operator, bool) { return d.doc.Operator(name) }

// Current reports whether o is still what the directory says of o.Name at
// now: the same record (right, scope, groups, expiry, credential or proxy), not
// revoked and not expired. A connection whose operator is no longer
// current is closed.
func (d *Directory) Current(o Operator, now time.Time) bool {
	cur, ok := d.doc.Operator(o.Name)
	return ok && !cur.Expired(now) && cur.Equal(o)
}

// Equal reports whether o and p are the same record: name, right, scope,
// groups, expiry, proxy or not, and credential.
func (o Operator) Equal(p Operator) bool {
	if o.Name != p.Name || o.Can != p.Can || o.Proxy != p.Proxy || !o.Expires.Equal(p.Expires) || !slices.Equal(o.Groups, p.Groups) ||
		!slices.Equal(o.Servers.Patterns(), p.Servers.Patterns()) || (o.Credential == nil) != (p.Credential == nil) {
		return false
	}
	return o.Credential == nil || (o.Credential.ID == p.Credential.ID &&
		subtle.ConstantTimeCompare(o.Credential.Hash, p.Credential.Hash) == 1)
}

// Clients reports whether the directory holds any gateway client.
func (d *Directory) Clients() bool { return len(d.doc.Clients) > 0 }

// CurrentClient reports whether c is still what the directory says of
// c.Name at now, as Current does for operators. A session of a client no
// longer current ends.
func (d *Directory) CurrentClient(c Client, now time.Time) bool {
	cur, ok := d.doc.Client(c.Name)
	return ok && !cur.Expired(now) && cur.Equal(c)
}

// Equal reports whether c and k are the same record: name, scope, expiry
// and credential.
func (c Client) Equal(k Client) bool {
	return c.Name == k.Name && c.Expires.Equal(k.Expires) && slices.Equal(c.Servers.Patterns(), k.Servers.Patterns()) &&
		c.Credential.ID == k.Credential.ID && subtle.ConstantTimeCompare(c.Credential.Hash, k.Credential.Hash) == 1
}
