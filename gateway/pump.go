package gateway

import (
	"net/http"
	"time"
)

// writeTimeout bounds each write to a client's connection.
const writeTimeout = 30 * time.Second

// servePost answers a POST's requests. Until the first message for them
// the answer is undecided: when it is the response to the POST's one
// request, the answer is that JSON body; when anything else comes first
// (a progress notification, a question for the client), or the response
// takes longer than StreamAfter, it becomes an event stream whose events
// carry ids, so a dropped connection resumes with Last-Event-ID.
func (sess *session) servePost(w http.ResponseWriter, r *http.Request, st *stream, gen int) {
	var after <-chan time.Time
	if st.resumable && !st.jsonOnly {
		t := time.NewTimer(sess.srv.opts.StreamAfter)
		defer t.Stop()
		after = t.C
	}
	for {
		sess.mu.Lock()
		if st.mode == modeUndecided && len(st.events) > 0 {
			if st.jsonOnly || (st.finished && len(st.events) == 1 && st.events[0].response) {
				st.mode = modeJSON
			} else if !st.jsonOnly {
				st.mode = modeSSE
			}
		}
		m, finished := st.mode, st.finished
		var evs []*event
		if m == modeJSON && finished {
			evs = append(evs, st.events...)
		}
		sess.mu.Unlock()
		switch {
		case m == modeSSE:
			sess.pump(w, r, st, gen, -1)
			return
		case m == modeJSON && finished:
			http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
			if writeJSON(w, st, evs) == nil {
				sess.delivered(st, evs)
			}
			sess.detach(st, gen, true)
			return
		}
		select {
		case <-st.notify:
		case <-after:
			sess.prime(st)
		case <-r.Context().Done():
			sess.detach(st, gen, false)
			return
		}
	}
}

// prime turns an undecided POST into an event stream that opens with a
// priming event (an id and empty data; MCP basic/transports, Sending
// Messages to the Server), so the client can resume it.
func (sess *session) prime(st *stream) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if st.mode != modeUndecided {
		return
	}
	st.mode = modeSSE
	st.events = append(st.events, &event{seq: st.next})
	st.next++
	st.wake()
}

// pump writes a stream's events after cursor to the connection until the
// stream is finished and written, the client goes away, or a resumption
// takes the stream over.
func (sess *session) pump(w http.ResponseWriter, r *http.Request, st *stream, gen, cursor int) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// Until detach, the session may stop this connection (unhook): a
	// deadline in the past fails the write it is blocked in. Deadlines
	// are set under the session's lock, after the gen check, so a stop
	// is never overridden by a later deadline.
	sess.mu.Lock()
	if st.gen == gen {
		st.stop = func() { rc.SetWriteDeadline(time.Unix(1, 0)) }
	}
	sess.mu.Unlock()
	if rc.Flush() != nil {
		sess.detach(st, gen, false)
		return
	}
	if st.kind == legacyStream {
		if !sess.writeEndpoint(w, rc) {
			sess.detach(st, gen, false)
			return
		}
	}
	ping := time.NewTicker(sess.srv.opts.Ping)
	defer ping.Stop()
	for {
		sess.mu.Lock()
		if st.gen != gen {
			sess.mu.Unlock()
			st.wake() // the notice may have been meant for the new connection
			return
		}
		pending, complete := st.after(cursor)
		if !complete {
			// What followed the cursor was carried by an earlier
			// connection and no longer kept (the byte bound): go on from
			// what is kept.
			cursor = st.next - 1
			if len(st.events) > 0 {
				cursor = st.events[0].seq - 1
			}
			pending, _ = st.after(cursor)
		}
		evs := append([]*event(nil), pending...)
		done := st.finished && len(evs) == 0
		if len(evs) > 0 {
			st.backlog, st.backlogFirst = 0, 0 // this connection takes it all
			rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		}
		sess.mu.Unlock()
		if len(evs) > 0 {
			var err error
			for _, ev := range evs {
				if err = writeSSE(w, st, ev); err != nil {
					break
				}
			}
			if err == nil {
				err = rc.Flush()
			}
			if err != nil {
				sess.detach(st, gen, false)
				return
			}
			sess.delivered(st, evs)
			cursor = evs[len(evs)-1].seq
			continue
		}
		if done {
			sess.detach(st, gen, true)
			return
		}
		select {
		case <-st.notify:
		case <-ping.C:
			sess.mu.Lock()
			current := st.gen == gen
			if current {
				rc.SetWriteDeadline(time.Now().Add(writeTimeout))
			}
			sess.mu.Unlock()
			if !current {
				continue // the loop's check stops
			}
			if _, err := w.Write([]byte(": ping\n\n")); err != nil || rc.Flush() != nil {
				sess.detach(st, gen, false)
				return
			}
		case <-r.Context().Done():
			sess.detach(st, gen, false)
			return
		}
	}
}

// detach records that a connection stopped carrying st; complete says it
// wrote the stream to its end. A one-shot session's request whose stream
// the client closed early is cancelled (MCP 2026-07-28: closing the
// response stream is the cancellation), and a legacy session ends with
// its one stream.
func (sess *session) detach(st *stream, gen int, complete bool) {
	sess.mu.Lock()
	if st.gen == gen {
		st.attached = false
		st.stop = nil
	}
	kind, open := sess.kind, !st.finished
	switch {
	case kind == shared && !complete && open:
		// MCP 2026-07-28: closing the response stream cancels the
		// request; the others on the shared server go on.
		sess.cancelSharedLocked(st, "the client closed the request's stream before the response")
	case kind == shared:
		sess.forgetStreamLocked(st)
	case !complete && st.kind == postStream && st.mode != modeSSE:
		sess.orphanLocked(st)
	}
	sess.mu.Unlock()
	switch {
	case kind == legacySSE && st.kind == legacyStream:
		sess.end("the client closed its event stream (HTTP+SSE)")
	case kind == shared:
	case kind == oneShot && !complete && open:
		sess.end("the client closed its request's stream before the response (a cancellation under MCP 2026-07-28)")
	case !complete && open:
		sess.log.Debug("a client connection dropped; its stream can be resumed with Last-Event-ID")
	}
}

// orphanLocked gives up a POST stream no connection will resume: what it
// holds, and the responses still to come for it, are discarded with a
// warning rather than kept for a client that cannot or did not ask for
// them.
func (sess *session) orphanLocked(st *stream) {
	st.orphan = true
	for _, ev := range st.events {
		if !ev.delivered {
			ev.delivered = true
			st.pending -= len(ev.data)
			sess.retained += len(ev.data)
		}
	}
	if len(st.events) > 0 || len(st.awaiting) > 0 {
		sess.log.Warn("a client closed a request's stream and cannot or did not resume it; what it held is discarded", "stream", st.id)
	}
}
