package relay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorilla/websocket"
)

// TestDialJoinWaitsOutABusyEndpoint: while an endpoint answers 503 (every
// slot for proving the token taken), the proof's dial tries again, and
// gets in once a slot is free; a refusal of another kind ends it at once.
func TestDialJoinWaitsOutABusyEndpoint(t *testing.T) {
	var busy atomic.Int32
	busy.Store(3)
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/forbidden":
			http.Error(w, "no", http.StatusForbidden)
		case busy.Add(-1) >= 0:
			http.Error(w, "limit-exceeded", http.StatusServiceUnavailable)
		default:
			if c, err := up.Upgrade(w, r, nil); err == nil {
				c.Close()
			}
		}
	}))
	defer srv.Close()
	base := "ws" + strings.TrimPrefix(srv.URL, "http")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := dialJoin(ctx, websocket.DefaultDialer, base+"/join")
	if err != nil {
		t.Fatalf("a busy endpoint that frees a slot: %v; want the dial through", err)
	}
	c.Close()
	if n := busy.Load(); n != -1 {
		t.Fatalf("%d tries left; want the dial to try until the endpoint let it in", n+1)
	}
	if _, err := dialJoin(ctx, websocket.DefaultDialer, base+"/forbidden"); err == nil || !strings.Contains(err.Error(), "bad handshake") {
		t.Fatalf("a 403: %v; want the error at once", err)
	}
}
