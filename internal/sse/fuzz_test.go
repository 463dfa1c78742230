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
	all, lastID, partial := modelEvents(s)
	for _, e := range all {
		events = append(events, e.ev)
	}
	return events, lastID, partial
}

// modelEvent is an event the model dispatched, with its data lines.
type modelEvent struct {
	ev
	lines []modelLine
}

// modelLine is one data line of an event, with the last event ID buffer
// and the event type buffer as they were when the line began: what an
// event handed over as a stream during that line carries.
type modelLine struct{ value, id, typ string }

// streamed returns what a Reader with Options.StreamAbove above yields
// for e: e itself, or, when its data passes above during one of its
// lines, e with that line's id and type, and true.
func (e modelEvent) streamed(above int) (ev, bool) {
	n := 0
	for _, l := range e.lines {
		if n+len(l.value) > above {
			if l.typ == "" {
				l.typ = "message"
			}
			return ev{l.id, l.typ, e.Data}, true
		}
		n += len(l.value) + 1
	}
	return e.ev, false
}

func modelEvents(s string) (events []modelEvent, lastID string, partial bool) {
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
	var dataLines []modelLine
	var hasData, fields bool
	for _, l := range lines {
		switch {
		case l == "":
			lastID, fields = idBuf, false
			if hasData {
				if typ == "" {
					typ = "message"
				}
				events = append(events, modelEvent{ev{lastID, typ, strings.TrimSuffix(data, "\n")}, dataLines})
			}
			data, typ, hasData, dataLines = "", "", false, nil
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
			dataLines = append(dataLines, modelLine{value, idBuf, typ})
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
	f.Add("event: a\nid: 1\ndata: hello world\n: note\ndata\ndata: 2nd\rid: 2\nevent: b\nretry: 5\r\n\r\ndata: \xE2\x82\xAC\xF0\x9F\x98\x80\xF0\x9F\n\n")
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
		all, _, _ := modelEvents(s)
		checkBounded(t, s, all)
		for _, above := range []int{1, 7} {
			checkStreamed(t, s, above, all, wantID, wantPartial)
		}
	})
}

// checkStreamed reads s with Options.StreamAbove above, each way of
// chunking the input and of reading an event's Rest: the data (Data, then
// Rest) must be the model's, each event handed over as a stream exactly
// when its data passes above, carrying the id and type in force then, and
// the last event ID after each event (once its Rest ended) the model's.
func checkStreamed(t *testing.T, s string, above int, want []modelEvent, wantID string, wantPartial bool) {
	t.Helper()
	for _, src := range []struct {
		name string
		r    io.Reader
		rest func(io.Reader) io.Reader
	}{
		{"whole", strings.NewReader(s), func(r io.Reader) io.Reader { return r }},
		{"bytewise", iotest.OneByteReader(strings.NewReader(s)), iotest.OneByteReader},
	} {
		r := NewReader(src.r, Options{StreamAbove: above})
		for i := 0; ; i++ {
			e, err := r.Next()
			var rerr error
			if err == nil && e.Rest != nil {
				var rest []byte
				rest, rerr = io.ReadAll(src.rest(e.Rest))
				e.Data = append(e.Data, rest...)
			}
			if err == nil && rerr != nil {
				if _, again := r.Next(); again != rerr {
					t.Fatalf("above %d, %s: Rest ended with %v, then Next returned %v; want the same error", above, src.name, rerr, again)
				}
				err = rerr
			}
			if err != nil {
				if i != len(want) {
					t.Fatalf("above %d, %s: %d events, then %v; the model has %d", above, src.name, i, err, len(want))
				}
				if errors.Is(err, ErrPartialEvent) != wantPartial || !errors.Is(err, ErrPartialEvent) && err != io.EOF {
					t.Fatalf("above %d, %s: got end %v; the model says partial=%v", above, src.name, err, wantPartial)
				}
				if r.LastEventID() != wantID {
					t.Fatalf("above %d, %s: got last event id %q; the model says %q", above, src.name, r.LastEventID(), wantID)
				}
				return
			}
			if i >= len(want) {
				t.Fatalf("above %d, %s: event %d %+v is past the model's %d", above, src.name, i, e, len(want))
			}
			w, streamed := want[i].streamed(above)
			if diff := cmp.Diff(w, ev{e.ID, e.Type, string(e.Data)}); diff != "" || streamed != (e.Rest != nil) {
				t.Fatalf("above %d, %s: event %d differs from the model (streamed %v, model %v) (-model +reader):\n%s", above, src.name, i, e.Rest != nil, streamed, diff)
			}
			if r.LastEventID() != want[i].ID {
				t.Fatalf("above %d, %s: after event %d the last event id is %q; the model says %q", above, src.name, i, r.LastEventID(), want[i].ID)
			}
		}
	}
}

// checkBounded reads s with a small limit, held whole and with the data
// streamed past a smaller threshold: what the Reader yields before it
// stops is a prefix of the model's events, within the limit (the data of
// an event handed over as a stream excepted) and well formed, and it
// stops only with a *TooLargeError or at the end.
func checkBounded(t *testing.T, s string, want []modelEvent) {
	t.Helper()
	const limit, above = 32, 8
	for _, o := range []Options{{MaxEventSize: limit}, {MaxEventSize: limit, StreamAbove: above}} {
		r := NewReader(strings.NewReader(s), o)
		for i := 0; ; i++ {
			e, err := r.Next()
			streamed := err == nil && e.Rest != nil
			if streamed {
				if len(e.Data) > above+readBuffer {
					t.Fatalf("bounded: event %d holds %d bytes of data before its Rest; want at most %d", i, len(e.Data), above+readBuffer)
				}
				var rest []byte
				rest, err = io.ReadAll(e.Rest)
				e.Data = append(e.Data, rest...)
			}
			if err != nil {
				var tl *TooLargeError
				if err != io.EOF && !errors.Is(err, ErrPartialEvent) && (!errors.As(err, &tl) || tl.Limit != limit) {
					t.Fatalf("bounded: got error %v; want the end or a *TooLargeError with Limit %d", err, limit)
				}
				break
			}
			if i >= len(want) {
				t.Fatalf("bounded: event %d %+v is past the model's events", i, e)
			}
			w, _ := want[i].streamed(o.StreamAbove)
			if o.StreamAbove == 0 {
				w = want[i].ev
			}
			if !cmp.Equal(w, ev{e.ID, e.Type, string(e.Data)}) {
				t.Fatalf("bounded: event %d %+v is not the model's %+v", i, e, w)
			}
			if !streamed && len(e.Data) > limit || len(e.ID) > limit || len(e.Type) > limit {
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
		// Decoding in pieces cut where completeUTF8 says, as the Reader
		// streams data, decodes as the whole does, wherever the input
		// breaks off.
		for i := range len(in) + 1 {
			n := completeUTF8(in[:i])
			if n > i || i-n >= utf8.UTFMax {
				t.Fatalf("completeUTF8(%q) = %d: it may hold back at most 3 bytes", in[:i], n)
			}
			pieces := string(toValidUTF8(append([]byte(nil), in[:n]...))) + string(toValidUTF8(append([]byte(nil), in[n:]...)))
			if pieces != string(out) {
				t.Fatalf("%q cut at %d (of %d) decodes to %q; whole, %q", in, n, i, pieces, out)
			}
		}
	})
}
