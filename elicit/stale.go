package elicit

import (
	"encoding/json"
	"hash/maphash"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonrpc"
)

// Late responses. A response is relayed only when the proxy can place its
// id: never as a second answer to a request that already got one. The
// tables that place responses are bounded (maxTracked), so what they
// forget is remembered apart, more cheaply, as tombstones:
//   - the server's request ids whose client copy was withdrawn, once the
//     client answered late or the withdrawn table forgot them: the
//     client's (further) answer is stale, and the server already has its
//     answer;
//   - the client's request ids the bridge stopped waiting for, once the
//     server answered late or the abandoned table forgot them: the
//     server's (further) response is stale, and the client already got an
//     error;
//   - the ids of the bridge's own retries, which are recognisable: a
//     response to one no longer tracked is stale whatever the tables hold.
//
// A stale response is dropped, with a log line that names no content. A
// new request under a tombstoned id (a peer may reuse ids) revives it.

// maxTombstones bounds each of a Proxy's tombstone sets: 64 times the
// tables whose forgotten entries they remember, at 8 bytes an id however
// long the id.
const maxTombstones = 64 * defaultMaxTracked

// retryPrefix starts the id key of every request the bridge originates.
const retryPrefix = `"aep-mcp-bridge-`

// tombstones remembers ids as 64-bit hashes of their keys under a seed of
// its own, so a peer can neither make an entry large nor choose ids that
// collide: a live id is taken for a tombstoned one with odds of about
// 2^-48 at the bound. Past max ids the oldest is forgotten. The zero value
// is empty and holds up to maxTombstones; the caller holds the lock that
// guards it.
type tombstones struct {
	seed maphash.Seed
	max  int
	// at holds each id's add number; ring the hashes by add number
	// modulo max; n counts the adds.
	at   map[uint64]int
	ring []uint64
	n    int
}

func (t *tombstones) hash(k string) uint64 {
	if t.at == nil {
		t.seed, t.at = maphash.MakeSeed(), map[uint64]int{}
		if t.max == 0 {
			t.max = maxTombstones
		}
	}
	return maphash.String(t.seed, k)
}

// add remembers id key k, forgetting the oldest past the bound.
func (t *tombstones) add(k string) {
	h := t.hash(k)
	if len(t.ring) < t.max {
		t.ring = append(t.ring, h)
	} else {
		i := t.n % t.max
		if old := t.ring[i]; t.at[old] == t.n-t.max {
			delete(t.at, old) // else it was added again since, or removed
		}
		t.ring[i] = h
	}
	t.at[h] = t.n
	t.n++
}

// has reports whether id key k is remembered.
func (t *tombstones) has(k string) bool {
	if t.at == nil {
		return false
	}
	_, ok := t.at[t.hash(k)]
	return ok
}

// remove forgets id key k: a new request uses it.
func (t *tombstones) remove(k string) {
	if t.at != nil {
		delete(t.at, t.hash(k))
	}
}

// staleResult reports whether a server response with id answers a client
// request the proxy stopped waiting for, or a retry of the bridge's own it
// no longer tracks, and forgets that request for good.
func (p *Proxy) staleResult(id json.RawMessage) bool {
	if !jsonrpc.HasID(id) {
		return false
	}
	k := idKey(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight.has(k) {
		return false // never taken for stale: a tombstone is a hash
	}
	if _, ok := p.abandoned.take(k); ok {
		p.goneRequests.add(k) // a second response is stale too
		return true
	}
	return strings.HasPrefix(k, retryPrefix) || p.goneRequests.has(k)
}

// staleAnswer reports whether a client response with id answers a server
// request the proxy stopped tracking; a response to a question pending or
// withdrawn is not stale (clientAnswer handles it).
func (p *Proxy) staleAnswer(id json.RawMessage) bool {
	if !jsonrpc.HasID(id) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.goneQuestions.has(idKey(id))
}

// reviveQuestionID forgets the tombstone of a server request id the
// server uses again: the client's answer to the new request is live.
func (p *Proxy) reviveQuestionID(id json.RawMessage) {
	if !jsonrpc.HasID(id) {
		return
	}
	p.mu.Lock()
	p.goneQuestions.remove(idKey(id))
	p.mu.Unlock()
}
