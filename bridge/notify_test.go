package bridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/notify"
)

// webhook is a loopback receiver that records each notification's type
// and body.
type webhook struct {
	srv   *httptest.Server
	mu    sync.Mutex
	types []string
	got   chan []byte
}

func newWebhook(t *testing.T, hold <-chan struct{}, entered chan<- struct{}) *webhook {
	t.Helper()
	w := &webhook{got: make(chan []byte, 64)}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if hold != nil {
			entered <- struct{}{}
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		}
		w.mu.Lock()
		w.types = append(w.types, r.Header.Get(notify.EventHeader))
		w.mu.Unlock()
		w.got <- b
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case b := <-w.got:
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("not JSON: %s", b)
		}
		m["raw"] = string(b)
		return m
	case <-t.Context().Done():
	}
	t.Fatal("no notification")
	return nil
}

// TestHostNotifies runs a real bridge session on a Host with two
// webhooks, one of which hangs on its first request. The server's
// question (with a password field) reaches the bus and the other webhook
// while the first still hangs; the operator's answer, the password
// included, reaches the server, and no notification body carries it;
// /healthz counts what was sent.
func TestHostNotifies(t *testing.T) {
	hold, entered := make(chan struct{}), make(chan struct{}, 1)
	hang := newWebhook(t, hold, entered)
	ok := newWebhook(t, nil, nil)
	const secret = "0123456789abcdef0123456789abcdef"
	h, err := NewHost(HostOptions{Listener: loopback(t), Token: "host-token-0123456789abcdef0123456789",
		Notify: &notify.Options{Targets: []notify.Target{
			{Name: "hang", URL: hang.srv.URL, Secret: secret},
			{Name: "ok", URL: ok.srv.URL + "/aep", Secret: secret, Capture: aep.CaptureFull}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(hold)
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	s := startSession(t, sessionConfig{host: h})
	schema := `{"type":"object","properties":{"user":{"type":"string"},"password":{"type":"string","format":"password","title":"Password"}},"required":["password"]}`
	call := s.call("ask", map[string]any{"schema": schema, "message": "Sign in to the database"}, nil)
	req := s.next("attention.requested")
	<-entered // the hanging webhook holds this question's notification
	opened := ok.next(t)
	q, _ := opened["question"].(map[string]any)
	if opened["type"] != "question.opened" || q["id"] != req.ID || q["prompt"] != "Sign in to the database" ||
		q["link"] != "http://"+h.Addr()+"/#question="+req.ID || q["client"] != "e2e-client 1.2.3" {
		t.Errorf("opened: %s", opened["raw"])
	}
	const password = "pw-S3cret-value-never-notified"
	if res, _ := s.respond(req.ID, aep.Answer{Values: map[string]any{"user": "ops", "password": password}}); !res.Accepted() {
		t.Fatalf("the answer was refused: %+v", res)
	}
	got := elicitResult(t, s.result(call))
	if c, _ := got["content"].(map[string]any); c["password"] != password {
		t.Fatalf("the server got %v; want the real password", got)
	}
	answered := ok.next(t)
	if answered["type"] != "question.answered" {
		t.Errorf("answered: %s", answered["raw"])
	}
	for _, b := range []map[string]any{opened, answered} {
		if strings.Contains(b["raw"].(string), password) {
			t.Errorf("a notification carries the password: %s", b["raw"])
		}
	}
	// ok has read both bodies; the notifier counts one as sent once it has
	// read ok's response, which may be a moment later: ask /healthz again
	// until it says so, for a bounded time.
	var health struct {
		Notify map[string]int `json:"notify"`
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err := http.Get("http://" + h.Addr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		health.Notify = nil
		err = json.NewDecoder(resp.Body).Decode(&health)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("/healthz: %v", err)
		}
		if health.Notify["sent"] >= 2 || time.Now().After(deadline) {
			break
		}
		<-tick.C
	}
	if health.Notify["targets"] != 2 || health.Notify["sent"] < 2 {
		t.Errorf("/healthz notify = %v; want 2 targets and at least the 2 sent to ok", health.Notify)
	}
}
