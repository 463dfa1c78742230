package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/translate"
)

// waitLimit bounds every wait; it is a failure guard, not a
// synchronisation.
const waitLimit = 30 * time.Second

// testSecret signs the json targets of these tests.
const testSecret = "0123456789abcdef0123456789abcdef-test"

// received is one request a receiver got.
type received struct {
	Path   string
	Header http.Header
	Body   []byte
}

// receiver is a real loopback HTTP server that records what it is sent
// and answers with status (default 200).
type receiver struct {
	srv  *httptest.Server
	got  chan received
	mu   sync.Mutex
	all  []received
	next func(n int, w http.ResponseWriter, r *http.Request) // nil: 200
}

func newReceiver(t *testing.T, next func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{got: make(chan received, 256), next: next}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		g := received{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
		rc.mu.Lock()
		rc.all = append(rc.all, g)
		n := len(rc.all)
		rc.mu.Unlock()
		rc.got <- g
		if rc.next != nil {
			rc.next(n, w, r)
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// wait returns the next request.
func (rc *receiver) wait(t *testing.T) received {
	t.Helper()
	select {
	case g := <-rc.got:
		return g
	case <-time.After(waitLimit):
		t.Fatalf("the receiver got nothing within %s", waitLimit)
	}
	return received{}
}

// waitType returns the next request of notification type typ, skipping
// others.
func (rc *receiver) waitType(t *testing.T, typ Type) received {
	t.Helper()
	for {
		g := rc.wait(t)
		if g.Header.Get(EventHeader) == string(typ) {
			return g
		}
	}
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.all)
}

// world is a hub with one session's emitter and attention manager: the
// real path a question takes onto the bus.
type world struct {
	hub *bus.Hub
	em  *bus.Emitter
	mgr *attention.Manager
}

func newWorld(t *testing.T, ceiling aep.Capture, timeout time.Duration) *world {
	t.Helper()
	hub := bus.NewHub()
	em, err := bus.NewEmitter(bus.EmitterOptions{Agent: "aep-mcp-bridge", Session: "s-" + strings.ToLower(aep.NewID()[20:]),
		AttentionCapture: ceiling, Sinks: []bus.Sink{hub}})
	if err != nil {
		t.Fatal(err)
	}
	mgr := attention.NewManager(attention.ManagerOptions{Agent: "aep-mcp-bridge", Publisher: em, Ceiling: ceiling, Timeout: timeout})
	w := &world{hub: hub, em: em, mgr: mgr}
	t.Cleanup(func() { mgr.Close(); hub.Close() })
	return w
}

// ask raises a form question from server with schema and returns its id.
func (w *world) ask(t *testing.T, server, message, schema string) string {
	t.Helper()
	form, err := translate.Parse(message, json.RawMessage(schema))
	if err != nil {
		t.Fatalf("parsing the schema: %v", err)
	}
	id, err := w.mgr.Raise(attention.Spec{Form: form, Subject: server, RespondVia: []string{"control"}, Deliver: func(attention.Resolution) {}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// answer answers question id as an operator does.
func (w *world) answer(t *testing.T, id string, a aep.Answer) {
	t.Helper()
	cmd := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: "control.attention.respond", Subject: id,
		Source: "aep://test/agent/operator", Agent: "operator", Session: w.em.Session()}
	var refused string
	w.mgr.Respond(cmd, a, "operator", func(reason, detail string) error { refused = reason + detail; return nil })
	if refused != "" {
		t.Fatalf("the answer was refused: %s", refused)
	}
}

// start starts a notifier on w's hub with o, closing it when the test
// ends.
func (w *world) start(t *testing.T, o Options) *Notifier {
	t.Helper()
	o.Hub = w.hub
	n, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	// The session starts once the notifier follows the hub, as a Host's
	// sessions do.
	w.em.Emit(aep.Draft{Type: "session.started", Data: map[string]any{"client": map[string]any{"name": "claude-code", "version": "2.1"}}})
	return n
}

// logBuffer is a logger at debug level whose output a test reads.
func logBuffer() (*slog.Logger, *testenv.Buffer) {
	b := &testenv.Buffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// decode reads a JSON body into a generic value.
func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("the body is not a JSON object: %v\n%s", err, body)
	}
	return m
}

// path reads a member of a decoded body by keys and indexes.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}
