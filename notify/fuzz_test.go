package notify

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// FuzzRender: whatever an emitter puts in an attention.requested (any
// prompt, labels, field shapes, at any ceiling), every format renders a
// JSON body within its service's bounds, or refuses; it never panics.
func FuzzRender(f *testing.F) {
	f.Add([]byte(`{"kind":"form","prompt":"Deploy?","fields":[{"id":"env","type":"select","label":"Env","choices":[{"id":"a","label":"A"}]}],"expires_at":"2026-01-01T00:00:00Z"}`), "srv", uint8(3))
	f.Add([]byte(`{"kind":"permission","prompt":"<!channel> [x](y) \u0000\u2028","options":[{"id":"ok","label":"@everyone"}]}`), "<@1>", uint8(4))
	f.Add([]byte(`{"prompt":7}`), "", uint8(1))
	red := aep.NewRedactor(aep.RedactOptions{})
	f.Fuzz(func(t *testing.T, data []byte, server string, level uint8) {
		ev := aep.Event{AEP: aep.Version, ID: "01J00000000000000000000000", Type: "attention.requested", Subject: server,
			Time: "2026-01-01T00:00:00.000Z", Source: "aep://h/agent/a/session/s", Agent: "a", Session: "s",
			Capture: aep.Capture(level%4 + 1), Data: data}
		q, err := questionOf(ev, aep.Capture(level%4+1), red, server)
		if err != nil {
			return
		}
		q.Link = "https://inbox.example/#question=x"
		for _, typ := range Types {
			n := &Notification{ID: "x", Type: typ, Time: time.Unix(0, 0), Question: q, Outcome: &Outcome{Resolution: "answered", By: server}}
			for _, f := range Formats {
				b, err := render(f, n, "topic")
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if !json.Valid(b) {
					t.Fatalf("%s: not JSON: %s", f, b)
				}
				if len(b) > 64<<10 {
					t.Fatalf("%s: %d bytes", f, len(b))
				}
			}
		}
	})
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "7", "-1", "Sun, 06 Nov 1994 08:49:37 GMT", "99999999999999999999", "1e3"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d := retryAfter(v, now); d < 0 || d > 366*24*time.Hour {
			t.Fatalf("retryAfter(%q) = %s", v, d)
		}
	})
}

func FuzzVerify(f *testing.F) {
	body := []byte(`{"a":1}`)
	now := time.Unix(1_800_000_000, 0)
	f.Add(Sign([]byte(testSecret), now, body), body)
	f.Add("t=1,v1=00,v1=zz", body)
	f.Add("garbage", []byte{})
	f.Fuzz(func(t *testing.T, header string, b []byte) {
		err := Verify([]byte(testSecret), header, b, now, 0)
		if err == nil && header != Sign([]byte(testSecret), now, b) {
			// Only a header carrying the MAC of this body verifies.
			want := "v1=" + Sign([]byte(testSecret), now, b)[len("t=1800000000,v1="):]
			if !containsField(header, want) {
				t.Fatalf("Verify accepted %q for %q", header, b)
			}
		}
	})
}

// containsField reports whether a comma-separated header has field f.
func containsField(header, f string) bool {
	for i := 0; i+len(f) <= len(header); i++ {
		if header[i:i+len(f)] == f && (i == 0 || header[i-1] == ',' || header[i-1] == ' ') {
			return true
		}
	}
	return false
}
