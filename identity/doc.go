// Package identity says who is acting on the bridge besides the shared
// token's holder: named operators, who read and answer questions, and
// named clients of the gateway. It is pure (no I/O, no goroutines): the
// records, their credentials, their rights and scopes, and the document
// that holds them. Package identity/store keeps that document in the state
// folder and in step with the running bridge.
//
// An operator is a name with a right (Read, or Answer, which includes
// reading) and a scope: server globs (package internal/glob) that say
// which MCP servers' questions it sees and answers, by the name the
// session shows (the subject of its attention.requested). It
// authenticates either with a credential the bridge generated, or, for a
// proxy operator, by the name an authenticating reverse proxy puts in a
// header (the endpoint decides which peers it trusts for that).
//
// A credential is random (crypto/rand, 256 bits of secret), recognisable
// by its prefix (PrefixOperator, PrefixClient) and self-checking (a CRC-32
// at its end, so a secret scanner can tell a real one from noise without
// asking the bridge). The document never holds it: only its public id and
// a salted hash of it (Verifier), compared in constant time. Nothing in
// this package puts a credential in an error or a String.
//
// The rights and scopes here are the data; who may do what with them is
// package authority's Principal, which the endpoint builds from a record.
package identity
