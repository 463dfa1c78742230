package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// TestServerErrorThenOK: a receiver that answers 500, then 200, gets the
// notification once more, with the same delivery id, and it counts as
// one sent.
func TestServerErrorThenOK(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	w := newWorld(t, aep.CaptureRedacted, time.Hour)
	n := w.start(t, Options{Targets: []Target{{URL: rc.srv.URL, Secret: testSecret, Events: []Type{Opened}}}, Backoff: time.Millisecond})
	w.ask(t, "s", "m", deploySchema)
	first, second := rc.wait(t), rc.wait(t)
	if a, b := first.Header.Get(DeliveryHeader), second.Header.Get(DeliveryHeader); a == "" || a != b {
		t.Errorf("delivery ids %q then %q; want the same id on the retry", a, b)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rc.count(); got != 2 {
		t.Errorf("the receiver got %d requests; want 2 (500, then 200)", got)
	}
	want := []TargetStats{{Target: "http://" + rc.srv.Listener.Addr().String(), Format: JSON, Sent: 1, Retried: 1}}
	if d := cmp.Diff(want, n.Stats()); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}
}

// memTransport answers requests in memory, one answer per attempt, and
// records when each came: for the backoff tests, which run on the fake
// clock of testing/synctest (a real socket would keep the clock still).
type memTransport struct {
	mu      sync.Mutex
	answers []func(h http.Header) int
	times   []time.Time
	types   []string
}

func (m *memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	m.mu.Lock()
	defer m.mu.Unlock()
	i := len(m.times)
	m.times = append(m.times, time.Now())
	m.types = append(m.types, r.Header.Get(EventHeader))
	h := http.Header{}
	status := 200
	if i < len(m.answers) {
		status = m.answers[i](h)
	}
	if status < 0 {
		return nil, errors.New("connection reset by peer")
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
}

func (m *memTransport) gaps() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(m.times); i++ {
		out = append(out, m.times[i].Sub(m.times[i-1]))
	}
	return out
}

func status(code int) func(http.Header) int { return func(http.Header) int { return code } }

func retryAfterAnswer(code int, value func() string) func(http.Header) int {
	return func(h http.Header) int {
		h.Set("Retry-After", value())
		return code
	}
}

// TestBackoff runs the retry policy on a fake clock: Retry-After is
// honoured in both its forms, other retries back off exponentially with
// jitter, other 4xx and redirects end at once, and a Retry-After past the
// limit gives up.
func TestBackoff(t *testing.T) {
	tests := []struct {
		name    string
		answers []func(http.Header) int
		// check judges the gaps between attempts.
		check               func(t *testing.T, gaps []time.Duration)
		sent, failed, tries int
	}{
		{name: "429 with Retry-After seconds, 503 with an HTTP date",
			answers: []func(http.Header) int{
				retryAfterAnswer(429, func() string { return "7" }),
				retryAfterAnswer(503, func() string { return time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat) }),
			},
			check: func(t *testing.T, gaps []time.Duration) {
				// The HTTP date has whole seconds: the wait is 29-30 s.
				if len(gaps) != 2 || gaps[0] != 7*time.Second || gaps[1] < 29*time.Second || gaps[1] > 30*time.Second {
					t.Errorf("gaps %v; want 7s, then 29-30s", gaps)
				}
			}, sent: 1, tries: 3},
		{name: "500s back off exponentially with jitter",
			answers: []func(http.Header) int{status(500), status(502), status(500), status(504)},
			check: func(t *testing.T, gaps []time.Duration) {
				for i, g := range gaps {
					d := time.Second << i
					if g < d/2 || g > d {
						t.Errorf("gap %d is %s; want within [%s, %s]", i, g, d/2, d)
					}
				}
			}, sent: 1, tries: 5},
		{name: "a network error is retried", answers: []func(http.Header) int{status(-1)}, sent: 1, tries: 2},
		{name: "404 is final", answers: []func(http.Header) int{status(404)}, failed: 1, tries: 1},
		{name: "a redirect is not followed", answers: []func(http.Header) int{
			retryAfterAnswer(302, func() string { return "" })}, failed: 1, tries: 1},
		{name: "Retry-After past the limit gives up", answers: []func(http.Header) int{
			retryAfterAnswer(429, func() string { return "3600" })}, failed: 1, tries: 1},
		{name: "attempts are bounded", answers: []func(http.Header) int{status(500), status(500), status(500),
			status(500), status(500), status(500), status(500), status(500), status(500)}, failed: 1, tries: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &memTransport{answers: tt.answers}
				w := newWorld(t, aep.CaptureRedacted, time.Hour)
				done := make(chan struct{}, 1)
				n := w.start(t, Options{Targets: []Target{{URL: "https://hooks.example/x", Secret: testSecret, Events: []Type{Opened}}},
					Transport: tr, onDone: func() { done <- struct{}{} }})
				w.ask(t, "s", "m", deploySchema)
				<-done // the fake clock runs the backoff while this waits
				if err := n.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				s := n.Stats()[0]
				if int(s.Sent) != tt.sent || int(s.Failed) != tt.failed || len(tr.times) != tt.tries {
					t.Errorf("sent %d, failed %d after %d attempts; want %d, %d after %d", s.Sent, s.Failed, len(tr.times), tt.sent, tt.failed, tt.tries)
				}
				if tt.check != nil {
					tt.check(t, tr.gaps())
				}
			})
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"-3", 0}, {"12", 12 * time.Second}, {" 5 ", 5 * time.Second},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"Sunday, 06-Nov-94 08:49:37 GMT", 0}, // RFC 850, in the past
		{"soon", 0}, {"1.5", 0},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.in, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

// TestHangingReceiverDelaysNothing: while one receiver hangs on its
// first request, the next questions are raised and published, and the
// other receiver gets every notification.
func TestHangingReceiverDelaysNothing(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	hang := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			entered <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	defer close(release)
	ok := newReceiver(t, nil)
	w := newWorld(t, aep.CaptureRedacted, time.Hour)
	w.start(t, Options{Targets: []Target{{Name: "hang", URL: hang.srv.URL, Secret: testSecret},
		{Name: "ok", URL: ok.srv.URL, Secret: testSecret}}, Timeout: time.Hour})
	sub := w.hub.Subscribe(func(ev *aep.Event) bool { return ev.Type == "attention.requested" }, 16)
	defer sub.Close()
	first := w.ask(t, "s", "first", deploySchema)
	<-entered // the hanging receiver holds the first notification
	for i := range 3 {
		id := w.ask(t, "s", fmt.Sprintf("question %d", i), deploySchema)
		if got := decode(t, ok.waitType(t, Opened).Body); path(got, "question", "id") == first {
			got = decode(t, ok.waitType(t, Opened).Body)
			if path(got, "question", "id") != id {
				t.Fatalf("the other receiver got %v; want question %s", path(got, "question", "id"), id)
			}
		}
	}
	for range 4 {
		select {
		case <-sub.C:
		case <-time.After(waitLimit):
			t.Fatal("a question's attention.requested did not reach the bus while a receiver hung")
		}
	}
	if hang.count() != 1 {
		t.Errorf("the hanging receiver got %d requests; want it still on its first", hang.count())
	}
}

// TestFullQueueDropsOldest: a receiver that hangs fills its queue; the
// oldest notifications are dropped, counted and logged, and the newest
// are delivered once it answers.
func TestFullQueueDropsOldest(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			entered <- struct{}{}
			<-release
		}
	})
	log, buf := logBuffer()
	w := newWorld(t, aep.CaptureRedacted, time.Hour)
	filed := make(chan struct{}, 8)
	n := w.start(t, Options{Targets: []Target{{URL: rc.srv.URL, Secret: testSecret, Events: []Type{Opened}}}, QueueLen: 2, Logger: log,
		onFiled: func(d *bus.Delivery) {
			if d.Event.Type == "attention.requested" {
				filed <- struct{}{}
			}
		}})
	var ids []string
	ids = append(ids, w.ask(t, "s", "q0", deploySchema))
	<-filed
	<-entered
	for i := 1; i <= 4; i++ {
		ids = append(ids, w.ask(t, "s", fmt.Sprintf("q%d", i), deploySchema))
		<-filed
	}
	buf.WaitFor(t, "dropping the oldest", waitLimit)
	close(release)
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []any
	for range 3 {
		got = append(got, path(decode(t, rc.wait(t).Body), "question", "id"))
	}
	if want := []any{ids[0], ids[3], ids[4]}; !cmp.Equal(got, want) {
		t.Errorf("delivered %v; want %v (the oldest queued were dropped)", got, want)
	}
	if s := n.Stats()[0]; s.Dropped != 2 || s.Sent != 3 {
		t.Errorf("stats %+v; want 2 dropped, 3 sent", s)
	}
	buf.WaitFor(t, "notifications were dropped while the queue was full", waitLimit)
}

// TestSecretFieldNeverSent: a form with a password field, answered with a
// secret, at the full ceiling in every format: nothing of the secret, its
// default, a credential in the prompt or the bridge's token is in any
// body.
func TestSecretFieldNeverSent(t *testing.T) {
	t.Parallel()
	const (
		answer   = "S3cr3t-Answer-Value-42"
		def      = "hunter2-default-value"
		token    = "bridge-token-0123456789abcdef0123456789"
		bearer   = "Bearer abcdef0123456789abcdef0123"
		apiToken = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	)
	w := newWorld(t, aep.CaptureFull, time.Hour)
	rc := map[Format]*receiver{}
	var targets []Target
	for _, f := range Formats {
		rc[f] = newReceiver(t, nil)
		tg := Target{Name: string(f), URL: rc[f].srv.URL + "/t", Format: f, Capture: aep.CaptureFull, Secret: testSecret}
		targets = append(targets, tg)
	}
	w.start(t, Options{Targets: targets, Token: token})
	schema := `{"type":"object","properties":{
	 "user":{"type":"string","title":"User"},
	 "password":{"type":"string","format":"password","title":"Database password","default":"` + def + `"},
	 "api_token":{"type":"string","title":"API token"}},"required":["password"]}`
	id := w.ask(t, "db", "Log in to the database (current header: "+bearer+", key "+apiToken+", bridge "+token+")", schema)
	w.answer(t, id, aep.Answer{Values: map[string]any{"user": "ops", "password": answer, "api_token": answer + "-tok"}})
	for _, f := range Formats {
		for _, typ := range []Type{Opened, Answered} {
			body := string(rc[f].waitType(t, typ).Body)
			for _, secret := range []string{answer, def, "abcdef0123456789abcdef0123", apiToken, token} {
				if strings.Contains(body, secret) {
					t.Errorf("%s %s body carries %q:\n%s", f, typ, secret, body)
				}
			}
			if typ == Opened && f == JSON && !strings.Contains(body, `"secret":true`) {
				t.Errorf("the json body does not mark the password field secret:\n%s", body)
			}
		}
	}
}

// TestRefusedURLs: an http URL off this machine, or any other scheme, is
// refused before anything starts, and the refusal quotes nothing of the
// URL beyond its host.
func TestRefusedURLs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, aep.CaptureRedacted, time.Hour)
	for _, u := range []string{"http://hooks.example/services/SECRETPATH?sig=SECRETQUERY", "ftp://hooks.example/SECRETPATH",
		"javascript:SECRETPATH", "https://user:SECRETQUERY@hooks.example/x"} {
		_, err := New(Options{Hub: w.hub, Targets: []Target{{URL: u, Format: Slack}}})
		if err == nil {
			t.Errorf("New accepted %s", u)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the refusal %q quotes the URL", err)
		}
	}
	if _, err := New(Options{Hub: w.hub, Targets: []Target{{URL: "https://hooks.example/x"}}}); err == nil || !strings.Contains(err.Error(), "no secret") {
		t.Errorf("a json target without a secret: %v; want it refused", err)
	}
}

// TestLogsNeverShowTheURL: a receiver that refuses, one that redirects
// and one that is gone: the log lines name the target by scheme and host
// only, never its path, query or secret.
func TestLogsNeverShowTheURL(t *testing.T) {
	t.Parallel()
	refuse := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(403) })
	redirect := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.example/SECRETPATH", http.StatusFound)
	})
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()
	log, buf := logBuffer()
	w := newWorld(t, aep.CaptureRedacted, time.Hour)
	const suffix = "/services/T000/B000/SECRETPATH?sig=SECRETQUERY"
	n := w.start(t, Options{Targets: []Target{
		{URL: refuse.srv.URL + suffix, Format: Slack},
		{URL: redirect.srv.URL + suffix, Secret: testSecret + "-SECRETKEY"},
		{URL: goneURL + suffix, Format: Discord}}, Logger: log, Backoff: time.Millisecond, MaxAttempts: 2})
	w.ask(t, "s", "m", deploySchema)
	buf.WaitFor(t, "the receiver refused it", waitLimit)
	buf.WaitFor(t, "redirects are not followed", waitLimit)
	buf.WaitFor(t, "no more attempts", waitLimit)
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, secret := range []string{"SECRETPATH", "SECRETQUERY", "SECRETKEY", "T000"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "notify_target=http://127.0.0.1:") {
		t.Errorf("the log does not name the target by scheme and host:\n%s", out)
	}
}

// TestCloseCutShort: a receiver that never answers cannot hold Close past
// its context; what was left is counted as dropped and logged.
func TestCloseCutShort(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 1)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			entered <- struct{}{}
		}
		<-r.Context().Done()
	})
	log, buf := logBuffer()
	w := newWorld(t, aep.CaptureRedacted, time.Hour)
	n := w.start(t, Options{Targets: []Target{{URL: rc.srv.URL, Secret: testSecret}}, Timeout: time.Hour, Logger: log})
	for i := range 3 {
		w.ask(t, "s", fmt.Sprintf("q%d", i), deploySchema)
	}
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := n.Close(ctx); err == nil {
		t.Error("Close with an ended context reported no error; want the notifications it left")
	}
	if s := n.Stats()[0]; s.Dropped != 3 || s.Sent != 0 {
		t.Errorf("stats %+v; want the 3 openings dropped", s)
	}
	buf.WaitFor(t, "the bridge stopped before these notifications were sent", waitLimit)
}
