package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/sse"
)

// raw is a hand-driven streamable HTTP client, for the tests that need to
// see and break the transport itself.
type raw struct {
	t  *testing.T
	g  *gw
	id string // Mcp-Session-Id
	hd http.Header
}

// header returns the headers of a raw client's requests.
func (c *raw) header() http.Header {
	h := http.Header{"Authorization": {"Bearer " + mcpToken}, "Content-Type": {"application/json"},
		"Accept": {"application/json, text/event-stream"}}
	if c.id != "" {
		h.Set(mcp.HeaderSessionID, c.id)
		h.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	}
	for k, v := range c.hd {
		h[k] = v
	}
	return h
}

// rawSession initializes a session as name; elicit declares elicitation.
func rawSession(t *testing.T, g *gw, name string, elicit bool) *raw {
	t.Helper()
	c := &raw{t: t, g: g}
	caps := `{}`
	if elicit {
		caps = `{"elicitation":{"form":{}}}`
	}
	resp := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":%s,"clientInfo":{"name":%q,"version":"1"}}}`, caps, name))
	c.id = resp.Header.Get(mcp.HeaderSessionID)
	if c.id == "" {
		t.Fatalf("initialize: no Mcp-Session-Id (status %s)", resp.Status)
	}
	msgs := readAll(t, resp)
	if len(msgs) != 1 || !strings.Contains(msgs[0], `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize result: %v", msgs)
	}
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: got %s; want 202", r.Status)
	}
	return c
}

// post POSTs body in the session.
func (c *raw) post(body string) *http.Response {
	c.t.Helper()
	return c.g.request(c.t, "POST", "/mcp", c.header(), body)
}

// get opens the session's GET stream, resuming after lastID when set.
func (c *raw) get(lastID string) *http.Response {
	c.t.Helper()
	h := c.header()
	h.Del("Content-Type")
	h.Set("Accept", "text/event-stream")
	if lastID != "" {
		h.Set(mcp.HeaderLastEventID, lastID)
	}
	return c.g.request(c.t, "GET", "/mcp", h, "")
}

// rawEvent is one message of a response and its SSE event id.
type rawEvent struct {
	id, data string
}

// events returns a reader of a response's messages: the JSON body, or
// each event of the stream (priming events included, with empty data).
func events(t *testing.T, resp *http.Response) func() (rawEvent, bool) {
	t.Helper()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		sent := false
		return func() (rawEvent, bool) {
			if sent {
				return rawEvent{}, false
			}
			sent = true
			return rawEvent{data: string(b)}, true
		}
	case "text/event-stream":
		r := sse.NewReader(resp.Body, sse.Options{})
		return func() (rawEvent, bool) {
			ev, err := r.Next()
			if err != nil {
				resp.Body.Close()
				return rawEvent{}, false
			}
			return rawEvent{id: r.LastEventID(), data: string(ev.Data)}, true
		}
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Errorf("response %s with Content-Type %q: %s", resp.Status, resp.Header.Get("Content-Type"), b)
	return func() (rawEvent, bool) { return rawEvent{}, false }
}

// readAll returns every message of a finished response.
func readAll(t *testing.T, resp *http.Response) []string {
	t.Helper()
	next := events(t, resp)
	var out []string
	for {
		ev, ok := next()
		if !ok {
			return out
		}
		if ev.data != "" {
			out = append(out, ev.data)
		}
	}
}

// status reads a refused response: its status and JSON-RPC error message.
func status(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &e)
	return resp.StatusCode, e.Error.Message
}
