package identity

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// Operator is a named operator's record.
type Operator struct {
	// Name names the operator on every record it makes (the by of its
	// answers). Unique among operators.
	Name string
	// Can is its right.
	Can Right
	// Servers is its scope.
	Servers Scope
	// Groups are the groups it is in (a policy's approvers name them as
	// group:NAME): valid (ValidGroup), sorted and each once (ParseGroups).
	Groups []string
	// Created is when it was added; Expires when its access ends (zero:
	// never).
	Created, Expires time.Time
	// Proxy is set for an operator whose name comes from a trusted
	// proxy's header: it has no credential.
	Proxy bool
	// Credential is its credential's verifier; nil for a proxy operator.
	Credential *Verifier
}

// Expired reports whether the record's access has ended at now.
func (o Operator) Expired(now time.Time) bool { return !o.Expires.IsZero() && !now.Before(o.Expires) }

// Client is a named client of the gateway's record: its MCP sessions, and
// their rounds, are its own.
type Client struct {
	// Name names the client on its sessions. Unique among clients.
	Name string
	// Servers is its scope.
	Servers Scope
	// Created is when it was added; Expires when its access ends (zero:
	// never).
	Created, Expires time.Time
	// Credential is its token's verifier.
	Credential Verifier
}

// Expired reports whether the record's access has ended at now.
func (c Client) Expired(now time.Time) bool { return !c.Expires.IsZero() && !now.Before(c.Expires) }

// Document is every record: what the state folder keeps. Its zero value
// is the empty document.
type Document struct {
	Operators []Operator
	Clients   []Client
}

// Version is the document format this package reads and writes.
const Version = 1

// MaxDocument bounds an encoded document in bytes; MaxRecords the
// records of each kind.
const (
	MaxDocument = 4 << 20
	MaxRecords  = 4096
)

// The document's JSON: one object, the version, then each record with its
// verifier's parts in unpadded base64url. Times are RFC 3339 UTC.
type docJSON struct {
	Version   int          `json:"version"`
	Operators []recordJSON `json:"operators"`
	Clients   []recordJSON `json:"clients"`
}

type recordJSON struct {
	Name       string        `json:"name"`
	Can        string        `json:"can,omitempty"`
	Servers    []string      `json:"servers"`
	Groups     []string      `json:"groups,omitempty"`
	Created    time.Time     `json:"created"`
	Expires    *time.Time    `json:"expires,omitempty"`
	Proxy      bool          `json:"proxy,omitempty"`
	Credential *verifierJSON `json:"credential,omitempty"`
}

type verifierJSON struct {
	ID   string `json:"id"`
	Salt string `json:"salt"`
	Hash string `json:"hash"`
}

var b64 = base64.RawURLEncoding

// Encode writes d as the state folder keeps it: indented JSON, records in
// the order added. It holds no credential, only verifiers.
func (d *Document) Encode() []byte {
	out := docJSON{Version: Version, Operators: []recordJSON{}, Clients: []recordJSON{}}
	for _, o := range d.Operators {
		r := recordJSON{Name: o.Name, Can: o.Can.String(), Servers: o.Servers.Patterns(), Groups: o.Groups, Created: o.Created.UTC(), Proxy: o.Proxy,
			Expires: timePtr(o.Expires), Credential: verifierOut(o.Credential)}
		out.Operators = append(out.Operators, r)
	}
	for _, c := range d.Clients {
		out.Clients = append(out.Clients, recordJSON{Name: c.Name, Servers: c.Servers.Patterns(), Created: c.Created.UTC(),
			Expires: timePtr(c.Expires), Credential: verifierOut(&c.Credential)})
	}
	b, _ := json.MarshalIndent(out, "", "  ") // strings, times and slices always encode
	return append(b, '\n')
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func verifierOut(v *Verifier) *verifierJSON {
	if v == nil {
		return nil
	}
	return &verifierJSON{ID: v.ID, Salt: b64.EncodeToString(v.Salt), Hash: b64.EncodeToString(v.Hash)}
}

// DecodeError says what is wrong with a document, and where: it names the
// record and the member, never a verifier's bytes.
type DecodeError struct {
	// Where is "operators[2] \"alice\"" or the like; "" for the whole.
	Where  string
	Reason string
}

func (e *DecodeError) Error() string {
	if e.Where == "" {
		return e.Reason
	}
	return e.Where + ": " + e.Reason
}

// Decode reads a document: exactly the members Encode writes (unknown
// ones are refused, so a typo never silently widens or narrows access),
// every name valid and unique in its kind, every scope and verifier well
// formed, every operator either a proxy one or one with a credential.
func Decode(data []byte) (*Document, error) {
	if len(data) > MaxDocument {
		return nil, &DecodeError{Reason: fmt.Sprintf("the document is %d bytes; at most %d are allowed", len(data), MaxDocument)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in docJSON
	if err := dec.Decode(&in); err != nil {
		return nil, &DecodeError{Reason: "not a document of identities: " + jsonReason(err)}
	}
	if dec.More() {
		return nil, &DecodeError{Reason: "not a document of identities: it holds more than one JSON value"}
	}
	if in.Version != Version {
		return nil, &DecodeError{Reason: fmt.Sprintf("version %d; this bridge reads version %d (a newer bridge wrote it?)", in.Version, Version)}
	}
	if len(in.Operators) > MaxRecords || len(in.Clients) > MaxRecords {
		return nil, &DecodeError{Reason: fmt.Sprintf("at most %d records of each kind are allowed", MaxRecords)}
	}
	d := &Document{}
	for i, r := range in.Operators {
		where := fmt.Sprintf("operators[%d]", i)
		o, err := r.operator()
		if err == nil && slices.ContainsFunc(d.Operators, func(x Operator) bool { return x.Name == r.Name }) {
			err = errors.New("another operator has this name")
		}
		if err != nil {
			return nil, &DecodeError{Where: named(where, r.Name), Reason: err.Error()}
		}
		d.Operators = append(d.Operators, o)
	}
	for i, r := range in.Clients {
		where := fmt.Sprintf("clients[%d]", i)
		c, err := r.client()
		if err == nil && slices.ContainsFunc(d.Clients, func(x Client) bool { return x.Name == r.Name }) {
			err = errors.New("another client has this name")
		}
		if err != nil {
			return nil, &DecodeError{Where: named(where, r.Name), Reason: err.Error()}
		}
		d.Clients = append(d.Clients, c)
	}
	return d, nil
}

// named adds a record's name to where, when it is one that may be shown.
func named(where, name string) string {
	if ValidName(name) != nil {
		return where
	}
	return where + " " + fmt.Sprintf("%q", name)
}

// jsonReason says what encoding/json refused, without quoting the input.
func jsonReason(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the JSON ends early"
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s holds a %s where a %s belongs", te.Field, te.Value, te.Type)
	}
	// DisallowUnknownFields: `json: unknown field "x"` names the member,
	// which is the reader's own key, not a secret.
	return err.Error()
}

func (r recordJSON) common() (Scope, time.Time, time.Time, error) {
	if err := ValidName(r.Name); err != nil {
		return Scope{}, time.Time{}, time.Time{}, err
	}
	s, err := ParseScope(r.Servers)
	if err != nil {
		return Scope{}, time.Time{}, time.Time{}, err
	}
	var exp time.Time
	if r.Expires != nil {
		exp = *r.Expires
	}
	return s, r.Created, exp, nil
}

func (r recordJSON) operator() (Operator, error) {
	s, created, exp, err := r.common()
	if err != nil {
		return Operator{}, err
	}
	can, err := ParseRight(r.Can)
	if err != nil {
		return Operator{}, err
	}
	groups, err := ParseGroups(r.Groups)
	if err != nil {
		return Operator{}, err
	}
	o := Operator{Name: r.Name, Can: can, Servers: s, Groups: groups, Created: created, Expires: exp, Proxy: r.Proxy}
	switch {
	case r.Proxy && r.Credential != nil:
		return Operator{}, errors.New("a proxy operator has no credential: its name comes from the trusted proxy's header")
	case !r.Proxy && r.Credential == nil:
		return Operator{}, errors.New("it has no credential and is not a proxy operator")
	case r.Credential != nil:
		v, err := r.Credential.verifier()
		if err != nil {
			return Operator{}, err
		}
		o.Credential = &v
	}
	return o, nil
}

func (r recordJSON) client() (Client, error) {
	s, created, exp, err := r.common()
	if err != nil {
		return Client{}, err
	}
	switch {
	case r.Can != "" || r.Proxy || r.Groups != nil:
		return Client{}, errors.New("a client has no right, no groups and is never a proxy one; can, groups and proxy are operators' members")
	case r.Credential == nil:
		return Client{}, errors.New("it has no credential")
	}
	v, err := r.Credential.verifier()
	if err != nil {
		return Client{}, err
	}
	return Client{Name: r.Name, Servers: s, Created: created, Expires: exp, Credential: v}, nil
}

func (v verifierJSON) verifier() (Verifier, error) {
	salt, err1 := b64.DecodeString(v.Salt)
	hash, err2 := b64.DecodeString(v.Hash)
	if err1 != nil || err2 != nil {
		return Verifier{}, errors.New("its credential's salt and hash are not unpadded base64url")
	}
	out := Verifier{ID: v.ID, Salt: salt, Hash: hash}
	if err := out.valid(); err != nil {
		return Verifier{}, err
	}
	return out, nil
}

// Operator returns the operator named name.
func (d *Document) Operator(name string) (Operator, bool) {
	i := slices.IndexFunc(d.Operators, func(o Operator) bool { return o.Name == name })
	if i < 0 {
		return Operator{}, false
	}
	return d.Operators[i], true
}

// Client returns the client named name.
func (d *Document) Client(name string) (Client, bool) {
	i := slices.IndexFunc(d.Clients, func(c Client) bool { return c.Name == name })
	if i < 0 {
		return Client{}, false
	}
	return d.Clients[i], true
}

// AddOperator adds o, whose name no operator has yet.
func (d *Document) AddOperator(o Operator) error {
	if err := ValidName(o.Name); err != nil {
		return err
	}
	if _, ok := d.Operator(o.Name); ok {
		return fmt.Errorf("an operator named %q exists; revoke it first to give the name new access", o.Name)
	}
	if len(d.Operators) >= MaxRecords {
		return fmt.Errorf("there are %d operators, the most a bridge keeps; revoke some first", MaxRecords)
	}
	if (o.Credential == nil) != o.Proxy {
		return errors.New("an operator has a credential unless it is a proxy one, which has none")
	}
	if o.Can != Read && o.Can != Answer {
		return errors.New("an operator's right is read or answer")
	}
	groups, err := ParseGroups(o.Groups)
	if err != nil {
		return err
	}
	o.Groups = groups
	d.Operators = append(d.Operators, o)
	return nil
}

// RemoveOperator removes the operator named name; it reports whether
// there was one.
func (d *Document) RemoveOperator(name string) bool {
	n := len(d.Operators)
	d.Operators = slices.DeleteFunc(d.Operators, func(o Operator) bool { return o.Name == name })
	return len(d.Operators) < n
}

// AddClient adds c, whose name no client has yet.
func (d *Document) AddClient(c Client) error {
	if err := ValidName(c.Name); err != nil {
		return err
	}
	if _, ok := d.Client(c.Name); ok {
		return fmt.Errorf("a client named %q exists; revoke it first to give the name a new token", c.Name)
	}
	if len(d.Clients) >= MaxRecords {
		return fmt.Errorf("there are %d clients, the most a bridge keeps; revoke some first", MaxRecords)
	}
	if err := c.Credential.valid(); err != nil {
		return fmt.Errorf("client %q: %w", c.Name, err)
	}
	d.Clients = append(d.Clients, c)
	return nil
}

// RemoveClient removes the client named name; it reports whether there
// was one.
func (d *Document) RemoveClient(name string) bool {
	n := len(d.Clients)
	d.Clients = slices.DeleteFunc(d.Clients, func(c Client) bool { return c.Name == name })
	return len(d.Clients) < n
}
