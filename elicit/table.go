package elicit

import (
	"maps"
	"slices"
)

// defaultMaxTracked bounds each per-request table of a Proxy whose entries
// a peer ends (a client that never answers a withdrawn question, a server
// that never answers a retry): past it, the oldest entry is forgotten,
// with a log line that names no content, and what waited on it is
// answered.
const defaultMaxTracked = 1024

// table is a map from keys (JSON-RPC id keys, elicitationIds, request
// states) to the exchanges a Proxy tracks, bounded in count: it keeps
// its entries in the order they came, and past max a put forgets the
// oldest and returns it, for the caller to answer what waited on it.
// Every operation costs O(1). A key put again while it is held keeps its
// place; one put after it was removed is the newest.
// The zero value is not usable: make one with newTable. The caller holds
// the lock that guards it.
type table[V any] struct {
	max int
	m   map[string]*entry[V]
	// oldest and newest end the list of entries in the order they came.
	oldest, newest *entry[V]
	// free holds up to maxFree unused entries, so a steady stream of
	// requests allocates none.
	free  *entry[V]
	nfree int
}

type entry[V any] struct {
	key          string
	val          V
	older, newer *entry[V]
}

// maxFree bounds the unused entries a table keeps for reuse.
const maxFree = 64

func newTable[V any](max int) *table[V] {
	return &table[V]{max: max, m: map[string]*entry[V]{}}
}

// len returns how many entries the table holds.
func (t *table[V]) len() int { return len(t.m) }

// get returns the value under k.
func (t *table[V]) get(k string) (V, bool) {
	if e, ok := t.m[k]; ok {
		return e.val, true
	}
	var zero V
	return zero, false
}

// has reports whether k is in the table.
func (t *table[V]) has(k string) bool {
	_, ok := t.m[k]
	return ok
}

// put sets k to v: in its place when k is held, otherwise as the newest
// entry. When that takes the table past its bound, the oldest entry is
// forgotten and returned (evicted).
func (t *table[V]) put(k string, v V) (oldKey string, old V, evicted bool) {
	if e, ok := t.m[k]; ok {
		e.val = v
		return "", old, false
	}
	e := t.free
	if e != nil {
		t.free, t.nfree = e.newer, t.nfree-1
		e.newer = nil
	} else {
		e = &entry[V]{}
	}
	e.key, e.val = k, v
	t.m[k] = e
	t.link(e)
	if len(t.m) <= t.max {
		return "", old, false
	}
	o := t.oldest
	oldKey, old = o.key, o.val
	t.remove(o)
	return oldKey, old, true
}

// take removes k and returns what it held.
func (t *table[V]) take(k string) (V, bool) {
	e, ok := t.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	v := e.val
	t.remove(e)
	return v, true
}

// del removes k.
func (t *table[V]) del(k string) {
	if e, ok := t.m[k]; ok {
		t.remove(e)
	}
}

// delIf removes k when it holds v; pointer values only make sense here.
func delIf[V comparable](t *table[V], k string, v V) {
	if e, ok := t.m[k]; ok && e.val == v {
		t.remove(e)
	}
}

// keys returns the keys in sorted order, for work that must be done the
// same way every time (failing requests at shutdown, keepalive ticks).
func (t *table[V]) keys() []string {
	return slices.Sorted(maps.Keys(t.m))
}

// link makes e the newest entry.
func (t *table[V]) link(e *entry[V]) {
	e.older, e.newer = t.newest, nil
	if t.newest != nil {
		t.newest.newer = e
	} else {
		t.oldest = e
	}
	t.newest = e
}

// unlink takes e out of the order.
func (t *table[V]) unlink(e *entry[V]) {
	if e.older != nil {
		e.older.newer = e.newer
	} else {
		t.oldest = e.newer
	}
	if e.newer != nil {
		e.newer.older = e.older
	} else {
		t.newest = e.older
	}
	e.older, e.newer = nil, nil
}

// remove forgets e and keeps it for reuse.
func (t *table[V]) remove(e *entry[V]) {
	delete(t.m, e.key)
	t.unlink(e)
	var zero V
	e.key, e.val = "", zero
	if t.nfree < maxFree {
		e.newer, t.free = t.free, e
		t.nfree++
	}
}
