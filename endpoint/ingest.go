package endpoint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// ingest is POST /events (AEP-0003 §3.2): one event, or NDJSON.
func (e *Endpoint) ingest(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get("AEP-Version"); v != aep.Version {
		writeJSON(w, http.StatusUpgradeRequired, map[string]any{"versions": []string{aep.Version},
			"detail": "send the header AEP-Version: " + aep.Version})
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/json" && mt != "application/x-ndjson" {
		writeError(w, http.StatusUnsupportedMediaType, "unsupported-media-type",
			"POST application/json (one event) or application/x-ndjson (one event per line)")
		return
	}
	limit, tooLarge := e.opts.MaxBody, fmt.Sprintf("the body exceeds %d bytes (%s); send smaller batches", e.opts.MaxBody, sizeName(e.opts.MaxBody))
	if mt == "application/json" {
		limit, tooLarge = e.opts.MaxEvent, fmt.Sprintf("the event exceeds %d bytes (%s), the most this endpoint takes per event; send smaller events", e.opts.MaxEvent, sizeName(e.opts.MaxEvent))
	}
	body, err := readBody(r, limit)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid-event", "reading the body: "+err.Error())
		return
	}
	if int64(len(body)) > limit {
		writeError(w, http.StatusRequestEntityTooLarge, "too-large", tooLarge)
		return
	}
	lines := [][]byte{bytes.TrimSpace(body)}
	if mt == "application/x-ndjson" {
		lines = splitLines(body, int(e.opts.MaxBody))
	}
	evs, refusal := e.parseBatch(principalOf(r), lines)
	if refusal != nil {
		writeJSON(w, refusal.status, refusal.body)
		return
	}
	if err := e.opts.Hub.Ingest(evs, lines); err != nil {
		var ie *bus.IngestError
		if !errors.As(err, &ie) {
			writeError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		status := http.StatusForbidden
		if ie.Code == "limit-exceeded" {
			status = http.StatusTooManyRequests
		}
		writeJSON(w, status, httpError{Error: ie.Code, Line: &ie.Index, Detail: ie.Detail})
		return
	}
	e.relayPosted(evs, lines)
	writeJSON(w, http.StatusAccepted, map[string]int{"accepted": len(evs)})
}

// ingestRefusal is an HTTP refusal of a batch, naming its first bad line.
type ingestRefusal struct {
	status int
	body   httpError
}

// parseBatch parses and checks every line that p posted before any is
// written: a batch is accepted whole or refused whole (AEP-0003 §3.2),
// with the first failing line's index.
func (e *Endpoint) parseBatch(p authority.Principal, lines [][]byte) ([]*aep.Event, *ingestRefusal) {
	refuse := func(status int, code string, i int, detail string) *ingestRefusal {
		return &ingestRefusal{status, httpError{Error: code, Line: &i, Detail: detail}}
	}
	evs := make([]*aep.Event, 0, len(lines))
	for i, l := range lines {
		if int64(len(l)) > e.opts.MaxEvent {
			return nil, refuse(http.StatusRequestEntityTooLarge, "too-large", i, fmt.Sprintf(
				"event %d is %d bytes; this endpoint takes events of at most %d bytes (%s): send smaller events", i, len(l), e.opts.MaxEvent, sizeName(e.opts.MaxEvent)))
		}
		ev, err := aep.Parse(l)
		if err != nil {
			return nil, refuse(http.StatusBadRequest, "invalid-event", i, err.Error())
		}
		if aep.IsCommand(ev.Type) {
			// Control flows only on the duplex binding (AEP-0004 §4.1).
			return nil, refuse(http.StatusBadRequest, "invalid-event", i, "commands are accepted only on the WebSocket binding /socket")
		}
		if why := e.access.Post(p, ev.Source, ev.Session); why != nil {
			return nil, refuse(http.StatusForbidden, why.Code(), i, why.Detail)
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// sizeName writes a byte count for people: 1 MiB, 64 KiB, or bytes.
func sizeName(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readBody reads at most limit+1 bytes of a request body, in one
// allocation when the request says its length.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= limit {
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	return buf.Bytes(), err
}

// splitLines returns the non-blank lines of an NDJSON body.
func splitLines(body []byte, max int) [][]byte {
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), max+1)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			lines = append(lines, append([]byte(nil), l...))
		}
	}
	return lines
}
