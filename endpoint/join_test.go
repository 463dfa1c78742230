package endpoint

import (
	"crypto/rand"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// dialJoin opens /join of srv without any credential.
func dialJoin(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http")+proof.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c
}

// readUntilClosed reads frames until the endpoint closes the connection and
// returns them.
func readUntilClosed(t *testing.T, c *websocket.Conn) []string {
	t.Helper()
	var frames []string
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				t.Fatalf("the endpoint kept the connection open: %v", err)
			}
			return frames
		}
		frames = append(frames, string(b))
	}
}

// joinConn proves the token at /join of srv by hand, as a bridge's link
// does, and says hello as the emitter agent/instance.
func joinConn(t *testing.T, srv *httptest.Server, instance string) *wsClient {
	t.Helper()
	c, _ := joinResuming(t, srv, instance, "")
	return c
}

// joinResuming is joinConn presenting the resume secret secret unless it
// is ""; it also returns the resume secret the endpoint gave it.
func joinResuming(t *testing.T, srv *httptest.Server, instance, secret string) (*wsClient, string) {
	t.Helper()
	return joinWith(t, srv, instance, secret, nil)
}

// joinWith is joinResuming that also proves key, unless it is nil.
func joinWith(t *testing.T, srv *httptest.Server, instance, secret string, key *proof.Key) (*wsClient, string) {
	t.Helper()
	c := dialJoin(t, srv.URL)
	b, challenge, err := proof.NewBridge(testToken, strings.TrimPrefix(srv.URL, "http://"), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b.Claim(key)
	c.WriteMessage(websocket.TextMessage, challenge)
	_, response, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	finish, err := b.Verify(response)
	if err != nil {
		t.Fatalf("the endpoint's proof: %v", err)
	}
	c.WriteMessage(websocket.TextMessage, finish)
	c.WriteMessage(websocket.TextMessage, []byte(emitterHello("b", instance, secret)))
	_, hello, err := c.ReadMessage()
	if err != nil || !strings.Contains(string(hello), `"type":"hello"`) || !strings.Contains(string(hello), proof.Capability) {
		t.Fatalf("got %s, %v; want the endpoint's hello advertising %s", hello, err, proof.Capability)
	}
	var f map[string]any
	json.Unmarshal(hello, &f)
	return &wsClient{t, c}, resumeSecretOf(t, f)
}

// TestJoinAdmitsAProvenBridge: once both proved the token, the connection
// is an AEP connection whose events reach the hub.
func TestJoinAdmitsAProvenBridge(t *testing.T) {
	srv, hub, _, _ := newTestEndpoint(t)
	sub := hub.Subscribe(func(ev *aep.Event) bool { return ev.Session == "joined" }, 8)
	defer sub.Close()
	c := joinConn(t, srv, "")
	c.send(`{"aep":"0.1","id":"E1","type":"session.started","time":"2026-01-01T00:00:00Z","source":"aep://b/agent/b","agent":"b","session":"joined","seq":0}`)
	select {
	case d := <-sub.C:
		if d.Event.ID != "E1" {
			t.Fatalf("the hub got %s; want E1", d.Event.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the proven bridge's event never reached the hub")
	}
}

// TestJoinRefusesWhoCannotProve plays peers without the token: each gets an
// unauthorized error frame and a closed connection, and nothing it sends
// after reaches the hub.
func TestJoinRefusesWhoCannotProve(t *testing.T) {
	event := `{"aep":"0.1","id":"E9","type":"session.started","time":"2026-01-01T00:00:00Z","source":"aep://x/agent/x","agent":"x","session":"intruder","seq":0}`
	for _, tc := range []struct {
		name string
		play func(t *testing.T, c *websocket.Conn, host string)
	}{
		{name: "a plain AEP client", play: func(t *testing.T, c *websocket.Conn, _ string) {
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"x"}}`))
		}},
		{name: "a wrong token", play: func(t *testing.T, c *websocket.Conn, host string) {
			b, challenge, _ := proof.NewBridge("not-the-token", host, rand.Reader)
			c.WriteMessage(websocket.TextMessage, challenge)
			_, response, _ := c.ReadMessage()
			if _, err := b.Verify(response); err == nil {
				t.Fatal("a bridge with another token accepted the endpoint's proof")
			}
			// Answer anyway, with the endpoint's own proof reflected.
			var f proof.Frame
			json.Unmarshal(response, &f)
			reflected, _ := json.Marshal(proof.Frame{Type: proof.TypeFinish, V: proof.Version, MAC: f.MAC})
			c.WriteMessage(websocket.TextMessage, reflected)
		}},
		{name: "an oversized frame", play: func(t *testing.T, c *websocket.Conn, _ string) {
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"proof-challenge","pad":"`+strings.Repeat("x", 4096)+`"}`))
		}},
		{name: "a binary frame", play: func(t *testing.T, c *websocket.Conn, _ string) {
			c.WriteMessage(websocket.BinaryMessage, []byte{1})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, hub, _, _ := newTestEndpoint(t)
			sub := hub.Subscribe(func(ev *aep.Event) bool { return ev.Session == "intruder" }, 8)
			defer sub.Close()
			c := dialJoin(t, srv.URL)
			tc.play(t, c, strings.TrimPrefix(srv.URL, "http://"))
			c.WriteMessage(websocket.TextMessage, []byte(event))
			frames := readUntilClosed(t, c)
			for _, f := range frames {
				if strings.Contains(f, `"type":"hello"`) {
					t.Fatalf("the endpoint said hello to a peer that did not prove the token: %v", frames)
				}
			}
			if tc.name != "an oversized frame" { // refused unread, with close code 1009
				if last := frames[len(frames)-1]; !strings.Contains(last, `"code":"unauthorized"`) {
					t.Fatalf("last frame %s; want an unauthorized error", last)
				}
			}
			select {
			case d := <-sub.C:
				t.Fatalf("the hub received %s from a peer that did not prove the token", d.Raw)
			default:
			}
		})
	}
}

// newProofKey makes a bridge's session key.
func newProofKey(t *testing.T) *proof.Key {
	t.Helper()
	k, err := proof.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
