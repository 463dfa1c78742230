package endpoint

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
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
	body, err := io.ReadAll(io.LimitReader(r.Body, e.opts.MaxBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid-event", "reading the body: "+err.Error())
		return
	}
	if int64(len(body)) > e.opts.MaxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "too-large",
			fmt.Sprintf("the body exceeds %d bytes; send smaller batches", e.opts.MaxBody))
		return
	}
	lines := [][]byte{body}
	if mt == "application/x-ndjson" {
		lines = splitLines(body, int(e.opts.MaxBody))
	}
	evs := make([]*aep.Event, 0, len(lines))
	for i, l := range lines {
		ev, err := aep.Parse(l)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, httpError{Error: "invalid-event", Line: &i, Detail: err.Error()})
			return
		}
		if aep.IsCommand(ev.Type) {
			// Control flows only on the duplex binding (AEP-0004 §4.1).
			writeJSON(w, http.StatusBadRequest, httpError{Error: "invalid-event", Line: &i,
				Detail: "commands are accepted only on the WebSocket binding /socket"})
			return
		}
		evs = append(evs, ev)
	}
	for i, ev := range evs {
		e.opts.Hub.Write(*ev, lines[i])
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"accepted": len(evs)})
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
