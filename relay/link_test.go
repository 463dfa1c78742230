package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/squatter"
)

const (
	token     = "relay-token-0123456789abcdefghijklmnopqrstuvwxyz"
	waitLimit = 20 * time.Second
)

// to dials every address at addr: a relay.example URL reaches a local test
// server, so the link sees a remote host while the traffic stays on this
// machine.
func to(addr string) DialFunc {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

// syncBuffer is a log sink tests read while the link writes.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// waitFor blocks until the log holds text n times, failing t after
// waitLimit.
func (s *syncBuffer) waitFor(t *testing.T, text string, n int) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		s.mu.Lock()
		if strings.Count(s.b.String(), text) >= n {
			s.mu.Unlock()
			return
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the log never said %q %d times:\n%s", text, n, s.String())
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runLink starts l until the test ends.
func runLink(t *testing.T, l *Link) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func newLink(t *testing.T, o LinkOptions) (*Link, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	o.Token, o.Agent, o.Instance = token, "b", "test"
	o.MinBackoff, o.MaxBackoff = 10*time.Millisecond, 50*time.Millisecond
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	l, err := NewLink(o)
	if err != nil {
		t.Fatal(err)
	}
	return l, logs
}

// event is a session event for the link to carry.
func event(t *testing.T, id string) (aep.Event, []byte) {
	t.Helper()
	ev := aep.Event{AEP: aep.Version, ID: id, Type: "session.started", Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/b/session/s", Agent: "b", Session: "s", Seq: aep.Int64(0)}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return ev, raw
}

// assertNothingSent checks what a peer that must get nothing received.
func assertNothingSent(t *testing.T, got []byte) {
	t.Helper()
	for _, secret := range []string{token, "Bearer", "session.started", "proof-finish"} {
		if bytes.Contains(got, []byte(secret)) {
			t.Errorf("the peer received %q:\n%s", secret, got)
		}
	}
}

// TestPlainRelayOffHostIsRefused: a relay without the token proof, on plain
// ws:// to a remote name, gets nothing; Check says why and what to do, and
// Run keeps refusing.
func TestPlainRelayOffHostIsRefused(t *testing.T) {
	sq := squatter.Start(t, "127.0.0.1:0", squatter.Naive)
	l, logs := newLink(t, LinkOptions{URL: "ws://relay.example:9000/socket", Dial: to(sq.Addr)})
	err := l.Check(context.Background())
	if !IsRefusal(err) || !strings.Contains(err.Error(), "relay.example:9000") || !strings.Contains(err.Error(), "wss://") {
		t.Fatalf("Check: %v; want a refusal naming the relay and saying to use wss://", err)
	}
	ev, raw := event(t, "E1")
	l.Write(ev, raw)
	runLink(t, l)
	if !sq.WaitRequests(3, waitLimit) {
		t.Fatal("the link never tried the relay again")
	}
	assertNothingSent(t, sq.Received())
	if !strings.Contains(logs.String(), "relay link refused; nothing was sent") {
		t.Errorf("the log does not say the link was refused:\n%s", logs)
	}
}

// TestPlainRelayOnLoopbackGetsTheBearer: a relay without the token proof on
// a loopback address is still linked, with the bearer token.
func TestPlainRelayOnLoopbackGetsTheBearer(t *testing.T) {
	sq := squatter.Start(t, "127.0.0.1:0", squatter.Naive)
	l, _ := newLink(t, LinkOptions{URL: "ws://" + sq.Addr + "/socket"})
	if err := l.Check(context.Background()); err != nil {
		t.Fatalf("Check: %v; want a loopback relay accepted", err)
	}
	ev, raw := event(t, "E1")
	l.Write(ev, raw)
	runLink(t, l)
	if !sq.Await(waitLimit, func(got []byte, _ int) bool { return bytes.Contains(got, []byte(`"id":"E1"`)) }) {
		t.Fatalf("the event never reached the loopback relay:\n%s", sq.Received())
	}
	if !bytes.Contains(sq.Received(), []byte("Bearer "+token)) {
		t.Fatal("the loopback relay got events without the bearer token")
	}
}

// realRelay is an AEP endpoint (which offers the token proof) on addr.
type realRelay struct {
	hub  *bus.Hub
	ep   *endpoint.Endpoint
	srv  *http.Server
	addr string
	done chan struct{}
}

func startReal(t *testing.T, addr, tok string) *realRelay {
	t.Helper()
	return startRealWith(t, addr, endpoint.Options{Token: tok})
}

// startRealWith starts an endpoint with o (its Hub filled in) on addr.
func startRealWith(t *testing.T, addr string, o endpoint.Options) *realRelay {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := &realRelay{hub: bus.NewHub(), addr: ln.Addr().String(), done: make(chan struct{})}
	o.Hub = r.hub
	if r.ep, err = endpoint.New(o); err != nil {
		t.Fatal(err)
	}
	r.srv = &http.Server{Handler: r.ep.Handler()}
	go func() { r.srv.Serve(ln); close(r.done) }()
	t.Cleanup(r.stop)
	return r
}

func (r *realRelay) stop() {
	r.ep.Close()
	r.srv.Close()
	<-r.done
	r.hub.Close()
}

// awaitEvent waits until the next event sub receives, which must be id.
func awaitEvent(t *testing.T, sub *bus.Subscription, id string, logs *syncBuffer) {
	t.Helper()
	select {
	case d := <-sub.C:
		if d.Event.ID != id {
			t.Fatalf("the relay got %s; want %s", d.Event.ID, id)
		}
	case <-time.After(waitLimit):
		t.Fatalf("%s never reached the relay; log:\n%s", id, logs)
	}
}

// TestProvenRelayIsNeverSentTheToken: a link to a relay that offers the
// token proof delivers events without the bearer token ever crossing; once
// the relay proved the token, an impostor that takes its address and offers
// no proof gets nothing, loopback or not.
func TestProvenRelayIsNeverSentTheToken(t *testing.T) {
	real := startReal(t, "127.0.0.1:0", token)
	sub := real.hub.Subscribe(func(ev *aep.Event) bool { return ev.Session == "s" }, 8)
	l, logs := newLink(t, LinkOptions{URL: "http://" + real.addr})
	ev, raw := event(t, "E1")
	l.Write(ev, raw)
	runLink(t, l)
	awaitEvent(t, sub, "E1", logs)
	sub.Close()
	real.stop()
	sq := squatter.Start(t, real.addr, squatter.Naive)
	ev2, raw2 := event(t, "E2")
	l.Write(ev2, raw2)
	if !sq.WaitRequests(3, waitLimit) {
		t.Fatal("the link never tried the address again")
	}
	assertNothingSent(t, sq.Received())
	if !strings.Contains(logs.String(), "proved the token before") {
		t.Errorf("the log does not say why nothing was sent:\n%s", logs)
	}
}

// TestRelayWithAnotherTokenGetsNoProof: a relay that offers the proof but
// holds another token fails the bridge's check; the link says so and never
// completes a hello.
func TestRelayWithAnotherTokenGetsNoProof(t *testing.T) {
	real := startReal(t, "127.0.0.1:0", "another-token-0123456789abcdefghijklmnopqrstuvw")
	sub := real.hub.Subscribe(func(*aep.Event) bool { return true }, 8)
	defer sub.Close()
	l, logs := newLink(t, LinkOptions{URL: "ws://" + real.addr + "/socket"})
	ev, raw := event(t, "E1")
	l.Write(ev, raw)
	runLink(t, l)
	logs.waitFor(t, "does not know this bridge's token", 2)
	select {
	case d := <-sub.C:
		t.Fatalf("the relay with another token received %s", d.Raw)
	default:
	}
	if l.Connected() {
		t.Fatal("the link connected to a relay that does not know the token")
	}
}

func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		name, url             string
		join, discovery, host string
		bearerOK              bool
	}{
		{name: "loopback", url: "ws://127.0.0.1:8787/socket", join: "ws://127.0.0.1:8787/join",
			discovery: "http://127.0.0.1:8787/events", host: "127.0.0.1:8787", bearerOK: true},
		{name: "localhost", url: "ws://localhost:1/socket", join: "ws://localhost:1/join",
			discovery: "http://localhost:1/events", host: "localhost:1", bearerOK: true},
		{name: "IPv6 loopback", url: "ws://[::1]:1/socket", join: "ws://[::1]:1/join",
			discovery: "http://[::1]:1/events", host: "[::1]:1", bearerOK: true},
		{name: "TLS under a prefix", url: "wss://relay.example/aep/socket", join: "wss://relay.example/aep/join",
			discovery: "https://relay.example/aep/events", host: "relay.example", bearerOK: true},
		{name: "plain remote", url: "ws://relay.example:9000/socket?x=1", join: "ws://relay.example:9000/join",
			discovery: "http://relay.example:9000/events", host: "relay.example:9000"},
		{name: "a name that merely starts like loopback", url: "ws://127.0.0.1.example/socket", join: "ws://127.0.0.1.example/join",
			discovery: "http://127.0.0.1.example/events", host: "127.0.0.1.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := targetsOf(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			want := targets{socket: tc.url, join: tc.join, discovery: tc.discovery, host: tc.host, bearerOK: tc.bearerOK}
			if got != want {
				t.Fatalf("got %+v; want %+v", got, want)
			}
		})
	}
}

// TestAnEventTooLargeForThePeerIsSkipped: a real hub endpoint closes a
// connection on a frame over its per-event bound, so the link skips such
// an event (a question included: it is then never re-announced) with a
// logged reason that carries no content, and the link stays up and
// delivers what follows.
func TestAnEventTooLargeForThePeerIsSkipped(t *testing.T) {
	real := startReal(t, "127.0.0.1:0", token)
	sub := real.hub.Subscribe(func(ev *aep.Event) bool { return ev.Session == "s" }, 8)
	defer sub.Close()
	l, logs := newLink(t, LinkOptions{URL: "ws://" + real.addr + "/socket"})
	big := aep.Event{AEP: aep.Version, ID: "Q1", Type: "attention.requested", Subject: "srv", Time: "2026-01-01T00:00:00Z",
		Source: "aep://h/agent/b/session/s", Agent: "b", Session: "s", Seq: aep.Int64(0), Severity: aep.SeverityNotice,
		Capture: aep.CaptureFull, Data: json.RawMessage(`{"kind":"input","prompt":"` + strings.Repeat("p", endpoint.DefaultMaxEvent) + `"}`)}
	raw, err := json.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	l.Write(big, raw)
	l.Redeliver(big, raw)
	ev, small := event(t, "E2")
	l.Write(ev, small)
	runLink(t, l)
	awaitEvent(t, sub, "E2", logs) // the event after the skipped one
	// A reconnect re-announces pending questions: the skipped one is not.
	l.mu.Lock()
	open := len(l.open)
	l.mu.Unlock()
	if open != 0 {
		t.Fatalf("the link re-announces %d questions; want none", open)
	}
	got := logs.String()
	if strings.Count(got, "skipped an event larger than the relay takes") != 2 || !strings.Contains(got, "id=Q1") {
		t.Fatalf("the log does not say the event was skipped, twice, naming it:\n%s", got)
	}
	if strings.Contains(got, "pppp") {
		t.Fatal("the log carries the event's content")
	}
	if n := strings.Count(got, "relay link up"); n != 1 {
		t.Fatalf("the link came up %d times; want once, never closed by the hub:\n%s", n, got)
	}
}

// TestPlainRemoteLinkNeedsPlainRemote: a peer that proves the token on a
// plain ws:// address off this machine is still refused, by Check and by
// Run, naming --relay-allow-plain, and gets no hello; with PlainRemote the
// link proves the token and delivers.
func TestPlainRemoteLinkNeedsPlainRemote(t *testing.T) {
	// The endpoint serves the remote name the link dials.
	real := startRealWith(t, "127.0.0.1:0", endpoint.Options{Token: token, AllowHosts: []string{"relay.example"}})
	sub := real.hub.Subscribe(func(ev *aep.Event) bool { return ev.Session == "s" }, 8)
	defer sub.Close()
	const remote = "ws://relay.example:9000/socket"

	l, logs := newLink(t, LinkOptions{URL: remote, Dial: to(real.addr)})
	err := l.Check(context.Background())
	if !IsRefusal(err) || !strings.Contains(err.Error(), "--relay-allow-plain") || !strings.Contains(err.Error(), "relay.example:9000") {
		t.Fatalf("Check: %v; want a refusal naming the relay and --relay-allow-plain", err)
	}
	ev, raw := event(t, "E1")
	l.Write(ev, raw)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	logs.waitFor(t, "--relay-allow-plain", 2)
	cancel()
	<-done
	if l.Connected() || real.ep.Connections() != 0 {
		t.Fatal("the link connected over plain ws:// off this machine")
	}
	select {
	case d := <-sub.C:
		t.Fatalf("the relay received %s over a refused link", d.Raw)
	default:
	}

	allowed, logs := newLink(t, LinkOptions{URL: remote, Dial: to(real.addr), PlainRemote: true})
	if err := allowed.Check(context.Background()); err != nil {
		t.Fatalf("Check with PlainRemote: %v", err)
	}
	allowed.Write(ev, raw)
	runLink(t, allowed)
	awaitEvent(t, sub, "E1", logs)
}

// TestConnectPlainRemoteNeedsPlainRemote checks that an operator's
// connection to a plain ws:// endpoint off this machine is refused, though
// the endpoint proves the token, unless ConnectOptions.PlainRemote; the
// refusal names --allow-plain, and the endpoint sees no connection.
func TestConnectPlainRemoteNeedsPlainRemote(t *testing.T) {
	real := startRealWith(t, "127.0.0.1:0", endpoint.Options{Token: token, AllowHosts: []string{"bridge.example"}})
	const remote = "ws://bridge.example:9000/socket"
	ctx := context.Background()
	conn, err := Connect(ctx, remote, token, ConnectOptions{Dial: to(real.addr)})
	if err == nil {
		conn.Close()
	}
	if !IsRefusal(err) || !strings.Contains(err.Error(), "--allow-plain") || !strings.Contains(err.Error(), "bridge.example:9000") {
		t.Fatalf("Connect: %v; want a refusal naming the endpoint and --allow-plain", err)
	}
	if n := real.ep.Connections(); n != 0 {
		t.Fatalf("the endpoint holds %d connections after a refused Connect; want 0", n)
	}
	conn, err = Connect(ctx, remote, token, ConnectOptions{Dial: to(real.addr), PlainRemote: true})
	if err != nil {
		t.Fatalf("Connect with PlainRemote: %v", err)
	}
	conn.Close()
}

// TestALinkTakesBackItsQuestionsAfterADrop: the relay holds the source of
// a link that dropped with a question open for whoever presents the resume
// secret the relay gave it; the link keeps that secret, so on reconnecting
// it re-announces and settles its own question.
func TestALinkTakesBackItsQuestionsAfterADrop(t *testing.T) {
	real := startReal(t, "127.0.0.1:0", token)
	sub := real.hub.Subscribe(func(ev *aep.Event) bool { return ev.Session == "s" }, 16)
	defer sub.Close()
	conns := make(chan net.Conn, 16)
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, real.addr)
		if err == nil {
			conns <- c
		}
		return c, err
	}
	l, logs := newLink(t, LinkOptions{URL: "ws://" + real.addr + "/socket", Dial: dial})
	lifecycle := func(id, typ, subject string, seq int64, data string) (aep.Event, []byte) {
		ev := aep.Event{AEP: aep.Version, ID: id, Type: typ, Subject: subject, Time: "2026-01-01T00:00:00Z",
			Source: "aep://h/agent/b/session/s", Agent: "b", Session: "s", Seq: aep.Int64(seq), Severity: aep.SeverityNotice,
			Capture: aep.CaptureMetadata, Data: json.RawMessage(data)}
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return ev, raw
	}
	l.Write(event(t, "E1"))
	l.Write(lifecycle("Q", "attention.requested", "srv", 1, `{"kind":"input","prompt":"p"}`))
	runLink(t, l)
	awaitIDs(t, sub, logs, "E1", "Q") // the question may come first: re-announced on connecting
	for len(conns) > 0 {              // drop the link: every connection it opened so far
		(<-conns).Close()
	}
	logs.waitFor(t, "relay link up", 2)
	l.Write(lifecycle("R", "attention.resolved", "Q", 2, `{"resolution":"answered"}`))
	awaitIDs(t, sub, logs, "R")
	if n := real.hub.Stats().Open; n != 0 {
		t.Fatalf("%d questions open after the link settled its own; want 0", n)
	}
}

// awaitIDs waits until sub has received every one of ids, in any order,
// among other events.
func awaitIDs(t *testing.T, sub *bus.Subscription, logs *syncBuffer, ids ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	deadline := time.After(waitLimit)
	for len(want) > 0 {
		select {
		case d := <-sub.C:
			delete(want, d.Event.ID)
		case <-deadline:
			t.Fatalf("the relay never received %v:\n%s", slices.Sorted(maps.Keys(want)), logs)
		}
	}
}

// TestARefusalFromTheRelayIsLogged: an event the relay refuses (here, one
// under a source another live connection writes) is logged with its id
// and the relay's reason, not lost without a word.
func TestARefusalFromTheRelayIsLogged(t *testing.T) {
	real := startReal(t, "127.0.0.1:0", token)
	sub := real.hub.Subscribe(func(ev *aep.Event) bool { return ev.Session == "s" }, 8)
	defer sub.Close()
	first, firstLogs := newLink(t, LinkOptions{URL: "ws://" + real.addr + "/socket"})
	first.Write(event(t, "E1"))
	runLink(t, first)
	awaitEvent(t, sub, "E1", firstLogs)
	second, logs := newLink(t, LinkOptions{URL: "ws://" + real.addr + "/socket"})
	second.Write(event(t, "E2")) // the same source, written by the first link
	runLink(t, second)
	logs.waitFor(t, "the relay refused an event of this bridge", 1)
	if got := logs.String(); !strings.Contains(got, `\"E2\"`) || !strings.Contains(got, "unauthorized") {
		t.Fatalf("the log does not name the refused event and the reason:\n%s", got)
	}
}

// TestABadRelayURLIsNotEchoed: the error for a relay URL that cannot be
// used names its scheme and host at most, never the user info, path or
// query, where a secret may sit.
func TestABadRelayURLIsNotEchoed(t *testing.T) {
	for _, raw := range []string{
		"ftp://user:s3cret@relay.example/socket?token=s3cret",
		"wss:///s3cret-path?token=s3cret",
	} {
		_, err := NewLink(LinkOptions{URL: raw, Token: "t"})
		if err == nil {
			t.Fatalf("NewLink(%q) took it", raw)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("NewLink(%q) = %v; it shows the URL's secret", raw, err)
		}
	}
}
