package sse

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ev is an event in the tables, with Data as a string.
type ev struct{ ID, Type, Data string }

// readAll reads every event of in and the error that ended the stream.
func readAll(t *testing.T, r *Reader) ([]ev, error) {
	t.Helper()
	var got []ev
	for {
		e, err := r.Next()
		if err != nil {
			return got, err
		}
		got = append(got, ev{e.ID, e.Type, string(e.Data)})
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		opts   Options
		want   []ev
		lastID string
	}{
		{name: "one event", in: "data: hello\n\n", want: []ev{{"", "message", "hello"}}},
		{name: "data lines join with LF", in: "data: a\ndata: b\ndata: c\n\n", want: []ev{{"", "message", "a\nb\nc"}}},
		{name: "only one leading space is dropped", in: "data:  two\ndata:none\n\n", want: []ev{{"", "message", " two\nnone"}}},
		{name: "a field with no colon has an empty value", in: "data\ndata\n\n", want: []ev{{"", "message", "\n"}}},
		{name: "an empty data field dispatches an empty event", in: "id: p1\ndata:\n\n", want: []ev{{"p1", "message", ""}}, lastID: "p1"},
		{name: "no data, no event", in: "event: ping\n\nid: 9\n\n", lastID: "9"},
		{name: "the event type does not outlive its event", in: "event: endpoint\nevent: other\ndata: x\n\ndata: y\n\n",
			want: []ev{{"", "other", "x"}, {"", "message", "y"}}},
		{name: "an event type with no data is dropped at the blank line", in: "event: a\n\ndata: y\n\n", want: []ev{{"", "message", "y"}}},
		{name: "the last event id persists", in: "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
			want: []ev{{"1", "message", "a"}, {"1", "message", "b"}, {"", "message", "c"}}},
		{name: "an id with NUL is ignored", in: "id: 1\n\nid: x\x00y\ndata: a\n\n", want: []ev{{"1", "message", "a"}}, lastID: "1"},
		{name: "a colon in the id value stays", in: "id: s1:0:3\ndata: a\n\n", want: []ev{{"s1:0:3", "message", "a"}}, lastID: "s1:0:3"},
		{name: "the last event id is committed only by a blank line", in: "data: a\n\nid: 2\ndata: b", want: []ev{{"", "message", "a"}}},
		{name: "comments are skipped", in: ": hi\n:\ndata: a\n: between\n\n", want: []ev{{"", "message", "a"}}},
		{name: "unknown fields are ignored", in: "Data: no\ndata : no\nfoo: bar\ndata: yes\n\n", want: []ev{{"", "message", "yes"}}},
		{name: "CR ends lines", in: "data: a\rdata: b\r\rdata: c\r\r", want: []ev{{"", "message", "a\nb"}, {"", "message", "c"}}},
		{name: "CRLF ends lines", in: "id: 7\r\ndata: a\r\ndata: b\r\n\r\n", want: []ev{{"7", "message", "a\nb"}}, lastID: "7"},
		{name: "mixed line ends", in: "data: a\r\ndata: b\rdata: c\n\r\n", want: []ev{{"", "message", "a\nb\nc"}}},
		{name: "LF CR is two line ends", in: "data: a\n\rdata: b\n\n", want: []ev{{"", "message", "a"}, {"", "message", "b"}}},
		{name: "a leading BOM is dropped", in: "\uFEFFdata: a\n\n", want: []ev{{"", "message", "a"}}},
		{name: "only one BOM is dropped", in: "\uFEFF\uFEFFdata: a\n\ndata: b\n\n", want: []ev{{"", "message", "b"}}},
		{name: "a BOM later is data", in: "data: \uFEFFa\n\n", want: []ev{{"", "message", "\uFEFFa"}}},
		{name: "a colon in the data value stays", in: `data: {"a":1}` + "\n\n", want: []ev{{"", "message", `{"a":1}`}}},
		{name: "blank lines between events", in: "\n\n\ndata: a\n\n\n\ndata: b\n\n", want: []ev{{"", "message", "a"}, {"", "message", "b"}}},
		{name: "resuming seeds the last event id", in: "data: a\n\n", opts: Options{LastEventID: "e4"},
			want: []ev{{"e4", "message", "a"}}, lastID: "e4"},
		{name: "invalid UTF-8 becomes U+FFFD per maximal subpart", in: "data: a\xE2\x82b\xC0\xAFc\xED\xA0\x80\xF0\x90\x80\n\n",
			want: []ev{{"", "message", "a\uFFFDb\uFFFD\uFFFDc\uFFFD\uFFFD\uFFFD\uFFFD"}}},
		// The expected strings were checked against Node 20's TextDecoder.
		{name: "UTF-8 lead bytes bound the second byte", in: "data: \xE0\x80|\xF4\x90\x80\x80|\xF0\x80A|\xF0\x90\x80A|\xED\x9FA|\xED\xA0A|\xC2|\xE0\xA0\n\n",
			want: []ev{{"", "message", "\uFFFD\uFFFD|\uFFFD\uFFFD\uFFFD\uFFFD|\uFFFD\uFFFDA|\uFFFDA|\uFFFDA|\uFFFD\uFFFDA|\uFFFD|\uFFFD"}}},
		{name: "a literal U+FFFD stays one", in: "data: \uFFFD\n\n", want: []ev{{"", "message", "\uFFFD"}}},
		{name: "an event as large as the limit", in: "data: 12345\n\n", opts: Options{MaxEventSize: 11}, want: []ev{{"", "message", "12345"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte at a time too: line ends split across reads must
			// parse the same.
			for _, src := range []struct {
				name string
				r    io.Reader
			}{{"whole", strings.NewReader(tt.in)}, {"bytewise", iotest.OneByteReader(strings.NewReader(tt.in))}} {
				r := NewReader(src.r, tt.opts)
				got, err := readAll(t, r)
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%s: events (-want +got):\n%s", src.name, diff)
				}
				if err != io.EOF && !errors.Is(err, ErrPartialEvent) {
					t.Errorf("%s: got error %v; want the end of the stream", src.name, err)
				}
				if id := r.LastEventID(); id != tt.lastID {
					t.Errorf("%s: got last event id %q; want %q", src.name, id, tt.lastID)
				}
			}
		})
	}
}

func TestReaderEnd(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		partial bool
	}{
		{name: "empty stream", in: ""},
		{name: "only a BOM", in: "\uFEFF"},
		{name: "after a blank line", in: "data: a\n\n"},
		{name: "after a comment", in: "data: a\n\n: bye\n"},
		{name: "inside an unterminated comment", in: "data: a\n\n: bye"},
		{name: "after a CR", in: "data: a\r\r"},
		{name: "inside an event", in: "data: a\n\ndata: b\n", partial: true},
		{name: "inside a line", in: "data: a\n\ndata: b", partial: true},
		{name: "after an id with no blank line", in: "id: 3\n", partial: true},
		{name: "inside a BOM", in: "\xEF\xBB", partial: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll(t, NewReader(strings.NewReader(tt.in), Options{}))
			if got := errors.Is(err, ErrPartialEvent); got != tt.partial {
				t.Fatalf("got error %v; want partial %v", err, tt.partial)
			}
			if !tt.partial && err != io.EOF {
				t.Fatalf("got error %v; want io.EOF", err)
			}
			if tt.partial && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("got error %v; want it to wrap io.ErrUnexpectedEOF", err)
			}
		})
	}
}

func TestReaderRetry(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{name: "none", in: "data: a\n\n"},
		{name: "milliseconds", in: "retry: 1500\n\n", want: 1500 * time.Millisecond, ok: true},
		{name: "the last valid one wins", in: "retry: 10\nretry: x\nretry: 20\n\nretry: -1\n\n", want: 20 * time.Millisecond, ok: true},
		{name: "empty is ignored", in: "retry:\nretry\n\n"},
		{name: "not only digits is ignored", in: "retry: 1.5\nretry: 15s\nretry: +1\n\n"},
		{name: "zero", in: "retry: 0\n\n", want: 0, ok: true},
		{name: "huge saturates", in: "retry: 99999999999999999999999999\n\n", want: time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.in), Options{})
			readAll(t, r)
			got, ok := r.Retry()
			if got != tt.want || ok != tt.ok {
				t.Fatalf("got %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestReaderTooLarge(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []ev
	}{
		{name: "one long line", in: "data: " + strings.Repeat("x", 100) + "\n\n"},
		{name: "a long line with no end", in: strings.Repeat("x", 100)},
		{name: "a long comment", in: ":" + strings.Repeat("x", 100) + "\n\ndata: a\n\n"},
		{name: "many data lines", in: "data: ok\n\n" + strings.Repeat("data: 1234567\n", 10) + "\n", want: []ev{{"", "message", "ok"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.in), Options{MaxEventSize: 64})
			got, err := readAll(t, r)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			var tl *TooLargeError
			if !errors.As(err, &tl) || tl.Limit != 64 {
				t.Fatalf("got error %v; want a *TooLargeError with Limit 64", err)
			}
			if !strings.Contains(err.Error(), "64-byte limit") {
				t.Errorf("got message %q; want it to name the limit", err)
			}
			if _, again := r.Next(); again != err {
				t.Errorf("got %v on the next call; want the same error again", again)
			}
		})
	}
}

func TestReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)), Options{})
	got, err := readAll(t, r)
	if diff := cmp.Diff([]ev{{"", "message", "a"}}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if err != boom {
		t.Fatalf("got error %v; want %v", err, boom)
	}
}

// TestReaderDispatchesWithoutReadingAhead checks that an event is handed
// over at its blank line, before the next byte of a live stream arrives:
// a CR-terminated blank line must not wait for a possible LF.
func TestReaderDispatchesWithoutReadingAhead(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	r := NewReader(pr, Options{})
	for _, end := range []string{"\n\n", "\r\r", "\r\n\r\n", "\r\n\r"} {
		go pw.Write([]byte("data: x" + end))
		e, err := r.Next()
		if err != nil || string(e.Data) != "x" {
			t.Fatalf("line end %q: got %q, %v; want x", end, e.Data, err)
		}
	}
	go pw.Write([]byte("\ndata: y\n\n")) // the LF of the last CRLF, then an event
	if e, err := r.Next(); err != nil || string(e.Data) != "y" {
		t.Fatalf("got %q, %v; want y", e.Data, err)
	}
	pw.Close()
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("got %v; want io.EOF", err)
	}
}

func TestEventDataIsTheCallers(t *testing.T) {
	r := NewReader(strings.NewReader("data: first\n\ndata: second\n\n"), Options{})
	a, _ := r.Next()
	b, _ := r.Next()
	if string(a.Data) != "first" || string(b.Data) != "second" {
		t.Fatalf("got %q and %q; want first and second", a.Data, b.Data)
	}
}

// BenchmarkReader reads a stream of AEP-sized events as the endpoint
// writes them (id, event, one data line).
func BenchmarkReader(b *testing.B) {
	event := "id: s1:0:42\nevent: progress.status\ndata: {\"aep\":\"0.1\",\"id\":\"01J\",\"type\":\"progress.status\",\"data\":{\"phase\":\"" +
		strings.Repeat("x", 300) + "\"}}\n\n"
	stream := strings.Repeat(event, 1000)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(strings.NewReader(stream), Options{})
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
