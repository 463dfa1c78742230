package operator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRequestedMarksIntegerFields: the integer fields a question's
// envelope names are marked on its fields; an ill-formed attribute marks
// none.
func TestRequestedMarksIntegerFields(t *testing.T) {
	const head = `{"aep":"0.1","id":"Q","type":"attention.requested","subject":"srv","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":0,`
	const data = `"data":{"kind":"form","prompt":"p","fields":[{"id":"n","type":"number","label":"n","required":false},{"id":"x","type":"number","label":"x","required":false}]}}`
	tests := []struct {
		name, ext string
		want      []bool
	}{
		{"named", `"aepmcpbridgeint":"[\"n\"]",`, []bool{true, false}},
		{"none", ``, []bool{false, false}},
		{"ill-formed", `"aepmcpbridgeint":"n",`, []bool{false, false}},
		{"not a string", `"aepmcpbridgeint":true,`, []bool{false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, ok := requested([]byte(head + tc.ext + data))
			if !ok {
				t.Fatal("not read as a question")
			}
			var got []bool
			for _, f := range q.Fields {
				got = append(got, f.Integer)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("integer fields (-want +got):\n%s", diff)
			}
		})
	}
}
