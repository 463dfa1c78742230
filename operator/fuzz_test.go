package operator

import (
	"testing"
)

// FuzzSnapshotFrames feeds arbitrary frames through what Pending decodes
// from an endpoint: the subscribed and error frames of its subscription,
// and attention.requested events. Nothing may panic; a question is read
// only from an attention.requested with an id and a session.
func FuzzSnapshotFrames(f *testing.F) {
	f.Add([]byte(`{"type":"subscribed","id":"pending","open":3,"replay":0}`))
	f.Add([]byte(`{"type":"subscribed","id":"pending"}`))
	f.Add([]byte(`{"type":"error","id":"pending","code":"limit-exceeded","detail":"x"}`))
	f.Add([]byte(`{"aep":"0.1","id":"Q","type":"attention.requested","subject":"srv","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":0,"data":{"kind":"form","prompt":"p","fields":[{"id":"n","type":"number"}]}}`))
	f.Add([]byte(`{"type":"attention.requested","data":{"fields":"not a list"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := snapshotFrame(b, -1); err != nil && len(err.Error()) == 0 {
			t.Fatal("an error without a message")
		}
		if q, ok := requested(b); ok && (q.ID == "" || q.Session == "") {
			t.Fatalf("a question without id or session: %+v", q)
		}
	})
}
