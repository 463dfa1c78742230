package sse

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"runtime"
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

// streamedEv is an event of the streaming tables: Data is the whole data
// (Data, then Rest), Streamed says whether it came with a Rest, and
// LastID is the last event ID once it was read to its end.
type streamedEv struct {
	ID, Type, Data string
	Streamed       bool
	LastID         string
}

// readStreamed reads every event of r, each Rest through wrap.
func readStreamed(r *Reader, wrap func(io.Reader) io.Reader) ([]streamedEv, error) {
	var got []streamedEv
	for {
		e, err := r.Next()
		if err != nil {
			return got, err
		}
		data := string(e.Data)
		if e.Rest != nil {
			rest, err := io.ReadAll(wrap(e.Rest))
			if err != nil {
				return got, err
			}
			data += string(rest)
		}
		got = append(got, streamedEv{e.ID, e.Type, data, e.Rest != nil, r.LastEventID()})
	}
}

func TestReaderStreamsLargeEvents(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		above int
		want  []streamedEv
	}{
		{name: "an event at the threshold is held whole", in: "data: 12345\n\n", above: 5,
			want: []streamedEv{{"", "message", "12345", false, ""}}},
		{name: "one past it is streamed", in: "id: 1\nevent: big\ndata: 123456\n\n", above: 5,
			want: []streamedEv{{"1", "big", "123456", true, "1"}}},
		{name: "data lines join with LF across the hand-over", in: "data: abc\ndata: def\ndata: ghi\n\n", above: 5,
			want: []streamedEv{{"", "message", "abc\ndef\nghi", true, ""}}},
		{name: "the hand-over can fall on an empty line", in: "data: abcde\ndata\ndata: x\n\n", above: 5,
			want: []streamedEv{{"", "message", "abcde\n\nx", true, ""}}},
		{name: "the final LF is dropped", in: "data: abcdefgh\ndata\n\n", above: 5,
			want: []streamedEv{{"", "message", "abcdefgh\n", true, ""}}},
		{name: "an id after the hand-over sets the last event id", in: "id: 1\ndata: abcdefgh\nid: 2\n\ndata: s\n\n", above: 5,
			want: []streamedEv{{"1", "message", "abcdefgh", true, "2"}, {"2", "message", "s", false, "2"}}},
		{name: "an event field after the hand-over does not change the type given", in: "event: a\ndata: abcdefgh\nevent: b\n\ndata: s\n\n", above: 5,
			want: []streamedEv{{"", "a", "abcdefgh", true, ""}, {"", "message", "s", false, ""}}},
		{name: "comments and unknown fields inside are skipped", in: "data: abcdefgh\n: ping\nfoo: bar\ndata: z\n\n", above: 5,
			want: []streamedEv{{"", "message", "abcdefgh\nz", true, ""}}},
		{name: "CR and CRLF line ends", in: "data: abcdefgh\rdata: y\r\ndata: z\r\n\r\ndata: s\r\r", above: 5,
			want: []streamedEv{{"", "message", "abcdefgh\ny\nz", true, ""}, {"", "message", "s", false, ""}}},
		{name: "a field named like data is not data", in: "database: x\ndata: abcdefgh\n\n", above: 5,
			want: []streamedEv{{"", "message", "abcdefgh", true, ""}}},
		{name: "invalid UTF-8 is replaced in the rest too", in: "data: abcde\xE2\x82\xAC\xE2\x82|\xF0\x9F\x98\x80\n\n", above: 5,
			want: []streamedEv{{"", "message", "abcde€\uFFFD|😀", true, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, src := range []struct {
				name string
				r    io.Reader
				rest func(io.Reader) io.Reader
			}{
				{"whole", strings.NewReader(tt.in), func(r io.Reader) io.Reader { return r }},
				{"bytewise", iotest.OneByteReader(strings.NewReader(tt.in)), iotest.OneByteReader},
			} {
				got, err := readStreamed(NewReader(src.r, Options{StreamAbove: tt.above}), src.rest)
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%s: events (-want +got):\n%s", src.name, diff)
				}
				if err != io.EOF {
					t.Errorf("%s: got error %v; want io.EOF", src.name, err)
				}
			}
		})
	}
}

// TestReaderStreamedEventEnds checks how a streamed event's Rest ends
// when the stream does not reach the event's blank line: the error is
// the one Next would have returned, and Next returns it again after.
func TestReaderStreamedEventEnds(t *testing.T) {
	boom := errors.New("connection reset")
	tests := []struct {
		name    string
		in      io.Reader
		partial bool
		err     error
	}{
		{name: "the stream ends inside the line", in: strings.NewReader("data: abcdefgh"), partial: true},
		{name: "the stream ends after a line", in: strings.NewReader("data: abcdefgh\ndata: x\n"), partial: true},
		{name: "the connection breaks", in: io.MultiReader(strings.NewReader("data: abcdefgh"), iotest.ErrReader(boom)), err: boom},
		{name: "a line inside is over the limit", in: strings.NewReader("data: abcdefgh\nid: " + strings.Repeat("x", 40) + "\n\n"), err: &TooLargeError{Limit: 32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(tt.in, Options{StreamAbove: 5, MaxEventSize: 32})
			e, err := r.Next()
			if err != nil || e.Rest == nil {
				t.Fatalf("got %+v, %v; want an event with a Rest", e, err)
			}
			_, err = io.ReadAll(e.Rest)
			switch {
			case tt.partial && (!errors.Is(err, ErrPartialEvent) || !errors.Is(err, io.ErrUnexpectedEOF)):
				t.Fatalf("Rest ended with %v; want ErrPartialEvent wrapping io.ErrUnexpectedEOF", err)
			case tt.err != nil && !cmp.Equal(err, tt.err, cmp.Comparer(func(a, b error) bool { return a.Error() == b.Error() })):
				t.Fatalf("Rest ended with %v; want %v", err, tt.err)
			}
			if _, again := r.Next(); again != err {
				t.Fatalf("Next returned %v after Rest ended with %v; want the same", again, err)
			}
		})
	}
}

// TestReaderDiscardsAnUnreadRest: Next reads past what the caller left
// of a streamed event, and the next event is whole.
func TestReaderDiscardsAnUnreadRest(t *testing.T) {
	r := NewReader(strings.NewReader("id: 1\ndata: abcdefgh\ndata: more\nid: 2\n\ndata: next\n\n"), Options{StreamAbove: 5})
	e, err := r.Next()
	if err != nil || e.Rest == nil {
		t.Fatalf("got %+v, %v; want an event with a Rest", e, err)
	}
	b := make([]byte, 2)
	if _, err := io.ReadFull(e.Rest, b); err != nil {
		t.Fatal(err)
	}
	e, err = r.Next()
	if err != nil || string(e.Data) != "next" || e.ID != "2" || e.Rest != nil {
		t.Fatalf("got %+v, %v; want the whole event next with id 2", e, err)
	}
}

// patternReader yields n bytes of a repeating pattern, then EOF.
type patternReader struct {
	pattern []byte
	n, off  int
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.n == 0 {
		return 0, io.EOF
	}
	k := 0
	for k < len(b) && p.n > 0 {
		c := copy(b[k:min(len(b), k+p.n)], p.pattern[p.off:])
		k, p.n, p.off = k+c, p.n-c, (p.off+c)%len(p.pattern)
	}
	return k, nil
}

// TestReaderStreamsInBoundedMemory streams one 64 MiB event, its data
// as one line with multi-byte runes across every read boundary, and
// checks every byte, and that what the Reader allocated is bounded by
// StreamAbove (at most four times it), not by the event's size.
func TestReaderStreamsInBoundedMemory(t *testing.T) {
	const size, above = 64 << 20, 4 << 20
	pattern := []byte(`{"k":"välue ✓ 😀"},`) // 1-, 2-, 3- and 4-byte runes
	want := sha256.New()
	io.Copy(want, &patternReader{pattern: pattern, n: size})
	in := io.MultiReader(strings.NewReader("id: big\ndata: "), &patternReader{pattern: pattern, n: size}, strings.NewReader("\n\ndata: after\n\n"))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := NewReader(in, Options{StreamAbove: above})
	e, err := r.Next()
	if err != nil || e.Rest == nil {
		t.Fatalf("got %v; want an event with a Rest", err)
	}
	got := sha256.New()
	got.Write(e.Data)
	n, err := io.Copy(got, e.Rest)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if total := int64(len(e.Data)) + n; total != size || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("got %d bytes of data that differ from the %d sent", total, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*above {
		t.Fatalf("the Reader allocated %d MiB to stream a %d MiB event with StreamAbove %d MiB; want at most %d", alloc>>20, size>>20, above>>20, 4*above>>20)
	}
	if e, err := r.Next(); err != nil || string(e.Data) != "after" || e.ID != "big" {
		t.Fatalf("got %+v, %v; want the next event whole", e, err)
	}
}

func TestCompleteUTF8(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"ab\xE2", 2},
		{"ab\xE2\x82", 2},
		{"ab\xE2\x82\xAC", 5},
		{"\xF0\x9F\x98", 0},
		{"\xF0\x9F\x98\x80", 4},
		{"a\xE2\x28", 3},     // E2 cannot take 28: nothing more completes it
		{"a\xE0\x80", 3},     // E0 80 is an overlong start: already invalid
		{"a\xED\xA0", 3},     // a surrogate: already invalid
		{"a\xC0", 2},         // C0 leads nothing
		{"a\x80\x80\x80", 4}, // continuation bytes with no lead in reach
	}
	for _, tt := range tests {
		if got := completeUTF8([]byte(tt.in)); got != tt.want {
			t.Errorf("completeUTF8(%q) = %d; want %d", tt.in, got, tt.want)
		}
	}
}
