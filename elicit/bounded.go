package elicit

import "slices"

// defaultMaxTracked bounds each per-request map of a Proxy whose entries a
// peer ends (a client that never answers a withdrawn question, a server
// that never answers a retry): past it, the oldest entry is forgotten, with
// a log line that names no content, and what waited on it is answered.
const defaultMaxTracked = 1024

// admit records key k, just set in m, in order (oldest first) and forgets
// the oldest entries past max, which it returns, oldest first. Keys m no
// longer holds are dropped from order as it grows, so order stays within
// twice max. The caller holds the lock that guards m.
func admit[V any](m map[string]V, order *[]string, k string, max int) []V {
	var gone []V
	admitFunc(m, order, k, max, func(_ string, v V) { gone = append(gone, v) })
	return gone
}

// admitFunc is admit, calling forget with each entry it forgets instead.
func admitFunc[V any](m map[string]V, order *[]string, k string, max int, forget func(k string, v V)) {
	*order = append(*order, k)
	if len(*order) > 2*max {
		*order = slices.DeleteFunc(*order, func(k string) bool { _, ok := m[k]; return !ok })
	}
	for len(m) > max && len(*order) > 0 {
		old := (*order)[0]
		*order = (*order)[1:]
		if v, ok := m[old]; ok {
			delete(m, old)
			forget(old, v)
		}
	}
}
