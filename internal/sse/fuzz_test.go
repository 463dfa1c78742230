package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// model is a deliberately naive reading of the spec's event stream
// interpretation, on a whole string at once: the Reader, which streams,
// must agree with it on every input. It returns the events, the last
// event ID, and whether the input ended inside an event.
func model(s string) (events []ev, lastID string, partial bool) {
	s = string(toValidUTF8([]byte(s)))
	s = strings.TrimPrefix(s, "\uFEFF")
	var lines []string
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break
		}
		lines = append(lines, s[:i])
		if strings.HasPrefix(s[i:], "\r\n") {
			i++
		}
		s = s[i+1:]
	}
	var data, typ, idBuf string
	var hasData, fields bool
	for _, l := range lines {
		switch {
		case l == "":
			lastID, fields = idBuf, false
			if hasData {
				if typ == "" {
					typ = "message"
				}
				events = append(events, ev{lastID, typ, strings.TrimSuffix(data, "\n")})
			}
			data, typ, hasData = "", "", false
			continue
		case strings.HasPrefix(l, ":"):
			continue
		}
		fields = true
		name, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			typ = value
		case "data":
			data, hasData = data+value+"\n", true
		case "id":
			if !strings.Contains(value, "\x00") {
				idBuf = value
			}
		}
	}
	return events, lastID, fields || (s != "" && s[0] != ':')
}

// FuzzReader feeds arbitrary server bytes to the Reader. It must never
// panic, agree with the naive model whatever the chunking of the input,
// keep within its size limit, and yield only well-formed values: valid
// UTF-8, no CR in data, no line break in an id or a type, no NUL in an id.
func FuzzReader(f *testing.F) {
	f.Add("id: e1\ndata: {\"jsonrpc\":\"2.0\"}\n\n")
	f.Add("event: endpoint\ndata: /message?sessionId=1\n\n: ping\n\n")
	f.Add("data:\ndata\n\n\n")
	f.Add("\uFEFFid: a\r\nretry: 10\rdata: x\r\n\r\nid: b\x00\ndata: \xE2\x82\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		want, wantID, wantPartial := model(s)
		for _, src := range []struct {
			name string
			r    io.Reader
		}{{"whole", strings.NewReader(s)}, {"bytewise", iotest.OneByteReader(strings.NewReader(s))}} {
			r := NewReader(src.r, Options{})
			got, err := readAll(t, r)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s: events differ from the model (-model +reader):\n%s", src.name, diff)
			}
			if r.LastEventID() != wantID {
				t.Fatalf("%s: got last event id %q; the model says %q", src.name, r.LastEventID(), wantID)
			}
			if errors.Is(err, ErrPartialEvent) != wantPartial || !errors.Is(err, ErrPartialEvent) && err != io.EOF {
				t.Fatalf("%s: got end %v; the model says partial=%v", src.name, err, wantPartial)
			}
		}
		checkBounded(t, s, want)
	})
}

// checkBounded reads s with a small limit: what the Reader yields before
// it stops is a prefix of the model's events, within the limit and well
// formed, and it stops only with a *TooLargeError or at the end.
func checkBounded(t *testing.T, s string, want []ev) {
	t.Helper()
	const limit = 32
	r := NewReader(strings.NewReader(s), Options{MaxEventSize: limit})
	for i := 0; ; i++ {
		e, err := r.Next()
		if err != nil {
			var tl *TooLargeError
			if err != io.EOF && !errors.Is(err, ErrPartialEvent) && (!errors.As(err, &tl) || tl.Limit != limit) {
				t.Fatalf("bounded: got error %v; want the end or a *TooLargeError with Limit %d", err, limit)
			}
			return
		}
		if i >= len(want) || !cmp.Equal(want[i], ev{e.ID, e.Type, string(e.Data)}) {
			t.Fatalf("bounded: event %d %+v is not the model's", i, e)
		}
		if len(e.Data) > limit || len(e.ID) > limit || len(e.Type) > limit {
			t.Fatalf("bounded: event %d is over the %d-byte limit: %d, %d, %d bytes", i, limit, len(e.Data), len(e.ID), len(e.Type))
		}
		switch {
		case strings.ContainsRune(string(e.Data), '\r'):
			t.Fatalf("bounded: data holds a CR: %q", e.Data)
		case strings.ContainsAny(e.ID, "\r\n\x00") || strings.ContainsAny(e.Type, "\r\n"):
			t.Fatalf("bounded: id %q or type %q holds a line break or NUL", e.ID, e.Type)
		case !utf8.Valid(e.Data) || !utf8.ValidString(e.ID) || !utf8.ValidString(e.Type):
			t.Fatalf("bounded: invalid UTF-8 in %+v", e)
		}
	}
}

// FuzzToValidUTF8 checks the decoder: its output is valid UTF-8, equal to
// the input when that is valid, and keeps every valid rune and every
// line break in place.
func FuzzToValidUTF8(f *testing.F) {
	f.Add([]byte("a\xE2\x82b\xC0\xAFc\xED\xA0\x80\xF0\x90\x80\n"))
	f.Add([]byte("\xF4\x90\x80\x80\xEF\xBF\xBD"))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := append([]byte(nil), b...)
		out := toValidUTF8(b)
		if !utf8.Valid(out) {
			t.Fatalf("%q -> %q: not valid UTF-8", in, out)
		}
		if utf8.Valid(in) && string(out) != string(in) {
			t.Fatalf("%q -> %q: valid input changed", in, out)
		}
		if strings.Count(string(out), "\n") != strings.Count(string(in), "\n") ||
			strings.Count(string(out), "\r") != strings.Count(string(in), "\r") {
			t.Fatalf("%q -> %q: line breaks changed", in, out)
		}
		if len(out) > 3*len(in) {
			t.Fatalf("%q -> %q: grew more than threefold", in, out)
		}
	})
}
