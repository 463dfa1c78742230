package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// streamKind says what opened a stream.
type streamKind int

const (
	// postStream answers one POST that carried requests: it ends once
	// each of them is answered.
	postStream streamKind = iota
	// getStream is the session's standing stream for messages that
	// relate to no open request (the GET stream of MCP 2025-03-26 to
	// 2025-11-25); it lives as long as the session.
	getStream
	// legacyStream is the one event stream of the 2024-11-05 HTTP+SSE
	// transport; every server message goes there.
	legacyStream
)

// mode is how a POST stream answers: undecided until its first message,
// then one JSON body or an event stream.
type mode int

const (
	modeUndecided mode = iota
	modeJSON
	modeSSE
)

// event is one message queued on a stream. Its seq is its place in the
// stream, and with the stream's id its SSE event id.
type event struct {
	seq       int
	data      []byte // nil for a priming event
	response  bool   // the response to one of the stream's requests
	delivered bool   // written to a connection
}

// stream is one logical SSE stream of a session: the response stream of
// a POST, or the session's standing stream. Its events outlive the
// connection that carries them, within a bounded window, so a client
// that lost the connection resumes with GET and Last-Event-ID (MCP
// basic/transports, Resumability and Redelivery). All fields are guarded
// by the session's mu.
type stream struct {
	id        string
	kind      streamKind
	resumable bool // events carry ids (not for 2026-07-28 one-shot sessions)
	jsonOnly  bool // the client accepts no event stream: responses only
	events    []*event
	next      int
	pending   int // bytes of events no connection carried yet
	// backlog is the bytes of events queued since the connection last
	// took what was pending to write, and backlogFirst the first one's:
	// what waits behind the connection (see closeUnreadLocked).
	backlog, backlogFirst int
	// awaiting holds the id keys of the stream's requests not yet
	// answered; finished is set when none is left (or the session ended).
	awaiting map[string]bool
	finished bool
	mode     mode
	// orphan is set for a POST answered with JSON (or not decided yet)
	// whose client went away: no event id was given, so nothing can
	// resume it.
	orphan bool
	// request binds the requestState wrappers of the stream's one
	// 2026-07-28 request to it (its method and name).
	request binding
	// modern is set for a one-shot session's MCP 2026-07-28 request,
	// whose JSON-RPC errors carry their HTTP status (errorStatus).
	modern bool
	// listsTools is set for a one-shot session's tools/list, whose
	// result teaches the gateway's toolHeaders.
	listsTools bool
	// A shared session's request goes upstream under an id of the
	// gateway's own (upID), and a progress token too (upToken); the
	// client's are clientID and clientToken. listens is set for a
	// subscriptions/listen, whose notifications the server tags with
	// its id.
	clientID, clientToken, upID, upToken json.RawMessage
	listens                              bool
	// gen counts the connections that attached; a connection whose gen
	// is no longer current was taken over by a resumption (or closed for
	// not reading) and stops. stop, set while a connection writes the
	// stream, fails the write it may be blocked in.
	gen      int
	attached bool
	stop     func()
	notify   chan struct{}
}

// replyID is the id under which the client gets the response to the
// request whose id key (as it went upstream) is k.
func (st *stream) replyID(k string) json.RawMessage {
	if st.clientID != nil {
		return st.clientID
	}
	return json.RawMessage(k)
}

func newStream(id string, kind streamKind, resumable bool) *stream {
	return &stream{id: id, kind: kind, resumable: resumable, awaiting: map[string]bool{}, notify: make(chan struct{}, 1)}
}

// open reports whether the stream can still carry a message that relates
// to one of its requests.
func (st *stream) open() bool { return !st.finished && !st.jsonOnly && !st.orphan }

// unhook stops the connection carrying the stream, if any: its pump
// sees a gen of another connection, and a write it is blocked in fails
// at once.
func (st *stream) unhook() {
	st.gen++
	st.attached = false
	st.backlog, st.backlogFirst = 0, 0
	if st.stop != nil {
		st.stop()
		st.stop = nil
	}
	st.wake()
}

// wake tells the stream's connection, if any, that there is news.
func (st *stream) wake() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// eventID is the SSE event id of seq on this stream; it names the stream,
// so a Last-Event-ID finds it again.
func (st *stream) eventID(seq int) string { return st.id + "_" + strconv.Itoa(seq) }

// parseEventID splits an event id the gateway gave into its stream id and
// seq.
func parseEventID(id string) (stream string, seq int, ok bool) {
	sid, n, found := strings.Cut(id, "_")
	if !found || sid == "" || len(sid) > 24 {
		return "", 0, false
	}
	seq, err := strconv.Atoi(n)
	if err != nil || seq < 0 {
		return "", 0, false
	}
	return sid, seq, true
}

// after returns the retained events after seq cursor, and whether the
// window still holds every one of them (false: some were evicted).
func (st *stream) after(cursor int) (evs []*event, complete bool) {
	if cursor >= st.next-1 {
		return nil, true
	}
	if len(st.events) == 0 || st.events[0].seq > cursor+1 {
		return nil, false
	}
	return st.events[cursor+1-st.events[0].seq:], true
}

// undeliveredCursor is the cursor a connection that attaches without
// Last-Event-ID starts from: just before the first event no connection
// has carried yet (events are delivered in order).
func (st *stream) undeliveredCursor() int {
	for _, ev := range st.events {
		if !ev.delivered {
			return ev.seq - 1
		}
	}
	return st.next - 1
}

// writeSSE writes one event: its id (when the stream is resumable), its
// type (legacy streams name it "message"), and its data, one data line per
// line of the message.
func writeSSE(w io.Writer, st *stream, ev *event) error {
	var b bytes.Buffer
	if st.resumable {
		fmt.Fprintf(&b, "id: %s\n", st.eventID(ev.seq))
	}
	if st.kind == legacyStream {
		b.WriteString("event: message\n")
	}
	data := ev.data
	if len(data) == 0 {
		b.WriteString("data: \n\n")
		_, err := w.Write(b.Bytes())
		return err
	}
	for len(data) > 0 {
		line := data
		i := bytes.IndexAny(data, "\r\n")
		if i >= 0 {
			line = data[:i]
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			data = data[i+1:]
		} else {
			data = nil
		}
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}
