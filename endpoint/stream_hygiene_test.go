package endpoint

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// sseMessage is one parsed server-sent event (the WHATWG parsing rules:
// field "name: value", data lines joined with \n, comments dropped).
type sseMessage struct {
	fields map[string]string
	data   []string
}

func readStream(t *testing.T, url string) (msgs []sseMessage, comments []string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cur := sseMessage{fields: map[string]string{}}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(cur.fields) > 0 || cur.data != nil {
				msgs = append(msgs, cur)
			}
			cur = sseMessage{fields: map[string]string{}}
		case strings.HasPrefix(line, ":"):
			comments = append(comments, line)
		default:
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			if name == "data" {
				cur.data = append(cur.data, value)
			} else {
				cur.fields[name] = value
			}
		}
	}
	return msgs, comments
}

// TestStreamCannotBeInjected writes, as an in-process emitter would, events
// that slipped past validation: a session name holding SSE lines, and raw
// bytes with line breaks between JSON tokens. The stream keeps its framing:
// no forged field, no forged message, and every event's data whole.
func TestStreamCannotBeInjected(t *testing.T) {
	srv, hub, _, _ := newTestEndpoint(t)
	hostile := aep.Event{AEP: aep.Version, ID: "E1", Type: "session.started", Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/a", Agent: "a", Session: "s\nid: 999\nevent: forged\ndata: {\"x\":1}\n\nretry: 1", Seq: aep.Int64(0)}
	raw, err := json.Marshal(hostile)
	if err != nil {
		t.Fatal(err)
	}
	hub.Write(hostile, raw)
	spaced := "{\"aep\":\"0.1\",\r\n\"id\":\"E2\",\n\"type\":\"session.started\",\r\"time\":\"2026-01-01T00:00:00Z\",\n\"source\":\"aep://h/agent/a\",\"agent\":\"a\",\"session\":\"s2\",\"seq\":0}"
	ev, err := aep.Parse([]byte(spaced))
	if err != nil {
		t.Fatal(err)
	}
	hub.Write(*ev, []byte(spaced))

	msgs, comments := readStream(t, srv.URL+"/stream?live=0&from=all&access_token="+testToken)
	if len(msgs) != 2 {
		t.Fatalf("got %d messages %+v; want 2", len(msgs), msgs)
	}
	for i, want := range []string{"E1", "E2"} {
		m := msgs[i]
		if m.fields["event"] != "session.started" || m.fields["retry"] != "" {
			t.Errorf("message %d fields %v; want event session.started and nothing forged", i, m.fields)
		}
		var got aep.Event
		if err := json.Unmarshal([]byte(strings.Join(m.data, "\n")), &got); err != nil || got.ID != want {
			t.Errorf("message %d data %q: %v; want the whole event %s", i, m.data, err, want)
		}
	}
	if _, ok := msgs[0].fields["id"]; ok {
		t.Errorf("the hostile session's message carries id %q; want it left out", msgs[0].fields["id"])
	}
	if msgs[1].fields["id"] != "s2:0:0" {
		t.Errorf("second message id %q; want s2:0:0", msgs[1].fields["id"])
	}
	if !strings.Contains(strings.Join(comments, "\n"), "id left out") {
		t.Errorf("comments %q; want one saying the id was left out", comments)
	}
}

// TestIngestAndSocketRefuseControlCharacters: an event whose session holds
// a line break is refused on POST and on the WebSocket, naming the field,
// and never reaches the hub.
func TestIngestAndSocketRefuseControlCharacters(t *testing.T) {
	srv, hub, _, _ := newTestEndpoint(t)
	sub := hub.Subscribe(func(ev *aep.Event) bool { return strings.HasPrefix(ev.Session, "evil") }, 8)
	defer sub.Close()
	ev := `{"aep":"0.1","id":"H1","type":"session.started","time":"2026-01-01T00:00:00Z","source":"aep://x/agent/x","agent":"x","session":"evil\nid: 9","seq":0}`
	req, _ := http.NewRequest("POST", srv.URL+"/events", strings.NewReader(ev))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("AEP-Version", "0.1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var herr httpError
	json.NewDecoder(resp.Body).Decode(&herr)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(herr.Detail, "session: holds the control character U+000A") {
		t.Errorf("POST: %d %+v; want 400 naming session and the character", resp.StatusCode, herr)
	}
	c := dial(t, srv)
	c.send(`{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"x"}}`)
	c.read()
	c.send(strings.Replace(ev, "H1", "H2", 1))
	if f := c.read(); f["type"] != "error" || f["code"] != "invalid-event" || !strings.Contains(f["detail"].(string), "session: holds the control character") {
		t.Errorf("WebSocket: %v; want an invalid-event frame naming session", f)
	}
	c.send(`{"type":"ping","t":1}`)
	c.read() // the pong: the refused event was handled before it
	select {
	case d := <-sub.C:
		t.Fatalf("the hub received %s", d.Raw)
	default:
	}
}
