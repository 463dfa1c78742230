package upstream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBodyOfANotificationsAnswerIsNotAMessage: a server that answers the
// client's notification with 200 and a JSON body (as the conformance
// suite's test servers do with {"jsonrpc":"2.0","result":{}}), where the
// transport wants 202 and no body, answers nothing the client asked: the
// bridge drops that body and the client's next message is the response
// to its request. Relayed, the id-less response ended go-sdk clients'
// sessions ("invalid request"). Two requests follow the notification, so
// a relayed body, which the notification's own POST delivers, comes
// before the second one's response.
func TestBodyOfANotificationsAnswerIsNotAMessage(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"an empty result", `{"jsonrpc":"2.0","result":{}}`},
		{"an error", `{"jsonrpc":"2.0","error":{"code":-32600,"message":"no"}}`},
		{"a response with an id", `{"jsonrpc":"2.0","id":7,"result":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "application/json")
				if strings.Contains(string(b), `"notifications/initialized"`) {
					io.WriteString(w, tc.body)
					return
				}
				id := "after"
				if strings.Contains(string(b), `"again"`) {
					id = "again"
				}
				io.WriteString(w, `{"jsonrpc":"2.0","id":"`+id+`","result":{"ok":true}}`)
			}))
			t.Cleanup(srv.Close)
			c := dial(t, Options{URL: srv.URL, Transport: "streamable"})
			c.writeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			c.writeMessage([]byte(`{"jsonrpc":"2.0","id":"after","method":"tools/list"}`))
			for _, id := range []string{"after", "again"} {
				if id == "again" {
					c.writeMessage([]byte(`{"jsonrpc":"2.0","id":"again","method":"tools/list"}`))
				}
				if got, want := next(t, c), `{"jsonrpc":"2.0","id":"`+id+`","result":{"ok":true}}`; got != want {
					t.Fatalf("the client's next message: %s; want %s", got, want)
				}
			}
		})
	}
}
