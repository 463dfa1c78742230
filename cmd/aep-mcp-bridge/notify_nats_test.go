package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/notify"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// hookLog is a loopback webhook receiver that keeps every delivery.
type hookLog struct {
	mu      sync.Mutex
	got     []string // "TYPE QUESTION", in arrival order
	changed chan struct{}
}

func (h *hookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body struct {
		Question struct{ ID string } `json:"question"`
	}
	json.Unmarshal(b, &body)
	h.mu.Lock()
	h.got = append(h.got, r.Header.Get(notify.EventHeader)+" "+body.Question.ID)
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// count returns how many deliveries say what, and a channel closed at
// the next delivery.
func (h *hookLog) count(what string) (int, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, g := range h.got {
		if g == what {
			n++
		}
	}
	return n, h.changed
}

// TestNotifyOnceAcrossDoors: three gateways on one NATS plane, each
// given the same --notify webhook, see every question; the question
// asked on door C reaches the webhook once when it opens and once when
// the operator on door A answers it, not once per door. The counts are
// read once every door has decided: the two that did not send say so.
func TestNotifyOnceAcrossDoors(t *testing.T) {
	t.Parallel()
	bin := bridgeBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	urlOf := natsFleet(t, ctx, dir)
	hooks := &hookLog{changed: make(chan struct{})}
	recv := httptest.NewServer(hooks)
	t.Cleanup(recv.Close) // after the doors stop
	const token, mcpToken = "fleet-token-0123456789abcdefghijklmnop", "fleet-mcp-token-0123456789abcdefghijklm"
	var endpoints, mcpURLs []string
	var logs []*lockedBuffer
	for i := range 3 {
		p := startProcess(t, bin, "serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--agent", fmt.Sprintf("door%d", i),
			"--nats", urlOf(i), "--nats-prefix", "notifyfleet", "--token", token, "--mcp-token", mcpToken, "--notify", recv.URL+"/hook",
			"--log-level", "debug", "--state-dir", filepath.Join(dir, fmt.Sprint(i)), "--log-dir", "off", "--route", "remote", "--", bin, "demo-server")
		endpoints = append(endpoints, "http://"+p.stderr.boundAddr(t, "AEP endpoint on http://"))
		mcpURLs = append(mcpURLs, "http://"+p.stderr.boundAddr(t, "MCP gateway on http://")+"/mcp")
		logs = append(logs, p.stderr)
	}
	// decided waits until every door decided on the notification of type
	// typ of question q: one delivered it, the two others said another
	// door sends it.
	decided := func(typ notify.Type, q string) {
		t.Helper()
		line := fmt.Sprintf("notify_type=%s question=%s", typ, q)
		guard := time.After(60 * time.Second)
		for {
			sent, next := hooks.count(string(typ) + " " + q)
			skipped := 0
			var changed []<-chan struct{}
			for _, l := range logs {
				changed = append(changed, l.Changed())
				for _, s := range strings.Split(l.String(), "\n") {
					if strings.Contains(s, "another front door sends this notification") && strings.Contains(s, line) {
						skipped++
					}
				}
			}
			if sent+skipped >= len(logs) {
				if sent != 1 {
					t.Fatalf("%s of %s reached the webhook %d times (and %d doors left it to another); want once", typ, q, sent, skipped)
				}
				return
			}
			select {
			case <-next:
			case <-changed[0]:
			case <-changed[1]:
			case <-changed[2]:
			case <-guard:
				t.Fatalf("%s of %s: %d deliveries and %d doors that left it to another, after 60s", typ, q, sent, skipped)
			}
		}
	}

	got := make(chan string, 1)
	go func() {
		r, err := deployThrough(ctx, mcpURLs[2], mcpToken, "client-of-c")
		if err != nil {
			r = "error: " + err.Error()
		}
		got <- r
	}()
	op := &operator.Client{Endpoint: endpoints[0], Token: token, Agent: "fleet-operator"}
	var question string
	err := op.Stream(ctx, operator.StreamOptions{Filter: json.RawMessage(`{"type":["attention.requested"]}`), From: aep.FromAll}, func(ev *aep.Event, _ []byte) bool {
		question = ev.ID
		decided(notify.Opened, question)
		ack, err := op.Respond(ctx, operator.Question{ID: ev.ID, Session: ev.Session}, aep.Answer{Values: map[string]any{"service": "svc-notified"}}, 30*time.Second, nil)
		if err != nil || !ack.Accepted {
			t.Errorf("answering on door A: %v %+v", err, ack)
		}
		return false
	})
	if err != nil {
		t.Fatalf("door A's stream: %v", err)
	}
	select {
	case r := <-got:
		if !strings.Contains(r, "svc-notified") {
			t.Fatalf("door C's client got %s", r)
		}
	case <-ctx.Done():
		t.Fatal("no result at door C's client")
	}
	decided(notify.Answered, question)
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	if len(hooks.got) != 2 {
		t.Errorf("the webhook got %v; want the question opened and answered, once each", hooks.got)
	}
}
