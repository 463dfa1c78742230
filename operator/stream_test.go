package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/sse"
)

// envelope returns a valid AEP event with the given id.
func envelope(id string) string {
	return fmt.Sprintf(`{"aep":"0.1","id":"%s","type":"progress.status","time":"2026-01-01T00:00:00Z","source":"aep://h/agent/a/session/s1","agent":"a","session":"s1","seq":1,"capture":"metadata","data":{}}`, id)
}

// streamServer serves body as the endpoint's /stream to the right token.
func streamServer(t *testing.T, body string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" || r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return &Client{Endpoint: srv.URL, Token: "tok", HTTP: srv.Client()}
}

// TestStreamReadsTheWholeFormat checks that Stream reads any event stream
// the SSE rules allow, not only "data: " lines ending in LF: CR and CRLF
// line ends, data without the space, an envelope split over data lines,
// comments, and events that carry no AEP envelope (skipped).
func TestStreamReadsTheWholeFormat(t *testing.T) {
	e1, e2, e3 := envelope("E1"), envelope("E2"), envelope("E3")
	half := strings.Index(e3, `,"type"`) + 1 // between two members: the LF is JSON whitespace
	body := ": replay-exhausted s0 0:0\n\n" +
		"id: s1:0:1\r\nevent: progress.status\r\ndata: " + e1 + "\r\n\r\n" +
		"data:" + e2 + "\r\r" +
		"data: not an event\n\n" +
		"data: " + e3[:half] + "\ndata:" + e3[half:] + "\n\n" +
		": replay-complete\n\n"
	c := streamServer(t, body)
	var ids []string
	var raws []string
	err := c.Stream(context.Background(), url.Values{"live": {"0"}}, func(ev *aep.Event, raw []byte) bool {
		ids = append(ids, ev.ID)
		raws = append(raws, string(raw))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"E1", "E2", "E3"}, ids); diff != "" {
		t.Errorf("event ids (-want +got):\n%s", diff)
	}
	// raw is the envelope's bytes, for --json output: the split one is
	// joined with the LF the SSE rules put between data lines.
	if diff := cmp.Diff([]string{e1, e2, e3[:half] + "\n" + e3[half:]}, raws); diff != "" {
		t.Errorf("raw envelopes (-want +got):\n%s", diff)
	}
}

func TestStreamStopsWhenFnSaysSo(t *testing.T) {
	c := streamServer(t, "data: "+envelope("E1")+"\n\ndata: "+envelope("E2")+"\n\n")
	n := 0
	err := c.Stream(context.Background(), nil, func(*aep.Event, []byte) bool { n++; return false })
	if err != nil || n != 1 {
		t.Fatalf("got %d events, %v; want 1, nil", n, err)
	}
}

func TestStreamErrors(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		token string
		want  string
		is    error
	}{
		{name: "refused token", token: "wrong", want: "pass --token or set AEP_TOKEN"},
		{name: "cut inside an event", token: "tok", body: "data: " + envelope("E1"), want: "reading the event stream of", is: sse.ErrPartialEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := streamServer(t, tt.body)
			c.Token = tt.token
			err := c.Stream(context.Background(), nil, func(*aep.Event, []byte) bool {
				t.Error("got an event; want none")
				return true
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want an error containing %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("got %v; want it to wrap %v", err, tt.is)
			}
		})
	}
}
