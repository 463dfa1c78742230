package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// repeats returns the part of a message said twice in a row, as in
// "answer: answer: …" or "no ack within 10s: no ack within the window",
// or "": two neighbouring parts that are equal or start with the same
// three words.
func repeats(msg string) string {
	parts := strings.Split(msg, ": ")
	for i := 0; i+1 < len(parts); i++ {
		a, b := strings.Fields(strings.ToLower(parts[i])), strings.Fields(strings.ToLower(parts[i+1]))
		if len(a) > 0 && strings.Join(a, " ") == strings.Join(b, " ") {
			return parts[i]
		}
		if len(a) >= 3 && len(b) >= 3 && strings.Join(a[:3], " ") == strings.Join(b[:3], " ") {
			return parts[i]
		}
	}
	return ""
}

// operatorEndpoint serves a hub holding one open form question and one
// URL question, whose session takes commands and never acks them.
func operatorEndpoint(t *testing.T, prompt string) (base string, form, url aep.Event) {
	t.Helper()
	hub := bus.NewHub()
	em, _ := bus.NewEmitter(bus.EmitterOptions{Agent: "silent", Session: "s1", Sinks: []bus.Sink{hub}})
	form, _, _ = em.Emit(aep.Draft{Type: "attention.requested", Subject: "srv", Capture: aep.CaptureRedacted,
		Data: aep.AttentionRequested{Kind: "form", Prompt: prompt, RespondVia: []string{"control"},
			Fields: []aep.FieldSpec{{ID: "n", Type: "number", Label: "N", Max: "3"}}}})
	url, _, _ = em.Emit(aep.Draft{Type: "attention.requested", Subject: "srv", Capture: aep.CaptureRedacted,
		Data: aep.AttentionRequested{Kind: "auth", Prompt: "Sign in\nURL: https://login.example.org/x", RespondVia: []string{"control"},
			Options: []aep.Choice{{ID: "accept", Label: "Accept"}, {ID: "decline", Label: "Decline"}, {ID: "cancel", Label: "Cancel"}}}})
	ep, _ := endpoint.New(endpoint.Options{Token: "tok", Hub: hub})
	ep.AddClaim(endpoint.Claim{Session: "s1", Agent: "silent", Accepts: []string{"control.attention.respond"}, Target: silent{}})
	srv := httptest.NewServer(ep.Handler())
	t.Cleanup(func() { ep.Close(); srv.Close() })
	return srv.URL, form, url
}

func TestOperatorExitCodesAndMessages(t *testing.T) {
	base, form, url := operatorEndpoint(t, "p")
	at := []string{"--endpoint", base, "--token", "tok"}
	gone := []string{"--endpoint", "http://" + testenv.RefusedAddr(t), "--token", "tok"}
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"--accept on a form", append([]string{"respond", form.ID, "--accept"}, at...), exitUsage, "--accept consents to a URL question"},
		{"--accept on a URL question, never acked", append([]string{"respond", url.ID, "--accept", "--wait", "300ms"}, at...), exitNoAck, "no ack within 300ms; the answer may still have been applied"},
		{"respond to an endpoint that is not there", append([]string{"respond", form.ID, "--decline"}, gone...), exitUnreachable, "is a bridge running"},
		{"pending at an endpoint that is not there", append([]string{"pending"}, gone...), exitUnreachable, "is a bridge running"},
		{"a --wait of zero", append([]string{"respond", form.ID, "--decline", "--wait", "0s"}, at...), exitUsage, "--wait must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := cli(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.says) {
				t.Fatalf("exit %d, %q; want %d saying %q", code, errOut, tc.code, tc.says)
			}
			if m := repeats(errOut); m != "" {
				t.Errorf("the message repeats itself (%q): %s", m, errOut)
			}
		})
	}
}

// TestPeerTextIsEscapedOnTheTerminal: a server's prompt with ANSI escapes
// and C1 and bidirectional controls is printed with them as visible
// escapes by pending and tail, and as \u escapes in JSON.
func TestPeerTextIsEscapedOnTheTerminal(t *testing.T) {
	hostile := "Deploy \x1b[2J\x1b]0;pwned\x07 now \u009b31m \u202eevil"
	base, _, _ := operatorEndpoint(t, hostile)
	at := []string{"--endpoint", base, "--token", "tok"}
	out, _, code := cli(t, append([]string{"pending"}, at...)...)
	if code != 0 || strings.ContainsAny(out, "\x1b\x07\u009b\u202e") || !strings.Contains(out, `Deploy \x1b[2J\x1b]0;pwned\x07 now \u009b31m \u202eevil`) {
		t.Fatalf("pending printed %q", out)
	}
	out, _, code = cli(t, append([]string{"pending", "--json"}, at...)...)
	var qs []struct{ Prompt string }
	if code != 0 || strings.ContainsAny(out, "\x1b\u009b\u202e") || json.Unmarshal([]byte(out), &qs) != nil || qs[0].Prompt != hostile {
		t.Fatalf("pending --json printed %q", out)
	}
	if d := describe(&aep.Event{Type: "attention.requested", Session: "s", Time: "2026-01-01T00:00:00Z", Data: json.RawMessage(`{"prompt":"a\u001b[31mb"}`)}); strings.Contains(d, "\x1b") || !strings.Contains(d, `a\x1b[31mb`) {
		t.Fatalf("tail printed %q", d)
	}
}

func TestRepeats(t *testing.T) {
	for msg, want := range map[string]string{
		"answer: answer: a URL question takes option accept":        "answer",
		"no ack within 10s: no ack within the window":               "no ack within 10s",
		`rejected (invalid): field "n": maximum: must be at most 3`: "",
	} {
		if got := repeats(msg); got != want {
			t.Errorf("repeats(%q) = %q; want %q", msg, got, want)
		}
	}
}

func TestPrintable(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text", "déjà vu", "déjà vu"},
		{"ANSI colour", "\x1b[31mred", `\x1b[31mred`},
		{"C1 CSI", "a\u009bb", `a\u009bb`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"right-to-left override", "a\u202eb", `a\u202eb`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
		{"a line break", "a\nb", `a\x0ab`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := printable(tc.in, false); got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
	if got := printable("a\nb\tc", true); got != "a\nb\tc" {
		t.Errorf("with newlines kept: %q", got)
	}
	if got := string(jsonSafe([]byte(`{"a":"x` + "\u009b\u202e\x7f" + `y"}`))); got != `{"a":"x\u009b\u202e\u007fy"}` {
		t.Errorf("jsonSafe: %s", got)
	}
}

func TestTokenHygiene(t *testing.T) {
	long := strings.Repeat("k", MinTokenLength)
	tests := []struct {
		name      string
		flag, env string
		insecure  bool
		dirMode   os.FileMode
		file      string
		fileMode  os.FileMode
		wantErr   string
	}{
		{name: "a short --token", flag: "abc", wantErr: "a token needs at least 32"},
		{name: "a short AEP_TOKEN", env: "abc", wantErr: "the token from AEP_TOKEN has 3 characters"},
		{name: "a short token with --insecure-token", flag: "abc", insecure: true},
		{name: "a long --token", flag: long},
		{name: "a token file others can read", file: long, fileMode: 0o644, dirMode: 0o700, wantErr: "chmod 600"},
		{name: "a token file in a folder others can write", file: long, fileMode: 0o600, dirMode: 0o777, wantErr: "chmod 700"},
		{name: "a private token file", file: long, fileMode: 0o600, dirMode: 0o700},
		{name: "a short token file", file: "abc", fileMode: 0o600, dirMode: 0o700, wantErr: "a token needs at least 32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			t.Setenv("AEP_TOKEN", tc.env)
			if tc.file != "" {
				os.Mkdir(dir, 0o700)
				os.WriteFile(filepath.Join(dir, "token"), []byte(tc.file+"\n"), tc.fileMode)
				os.Chmod(filepath.Join(dir, "token"), tc.fileMode)
				os.Chmod(dir, tc.dirMode)
			}
			_, _, err := loadToken(tc.flag, dir, tc.insecure)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got %v; want an error containing %q", err, tc.wantErr)
			}
		})
	}
	// Generated: 256 bits, 0600 in a 0700 folder, the same on the next start.
	t.Setenv("AEP_TOKEN", "")
	dir := filepath.Join(t.TempDir(), "state")
	tok, where, err := loadToken("", dir, false)
	if err != nil || len(tok) != 64 || where != filepath.Join(dir, "token") {
		t.Fatalf("generated %q from %q: %v", tok, where, err)
	}
	fi, _ := os.Stat(where)
	di, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Fatalf("modes %v and %v", fi.Mode().Perm(), di.Mode().Perm())
	}
	if again, _, _ := loadToken("", dir, false); again != tok {
		t.Fatal("a second start generated another token")
	}
}

// TestBridgeNeverPrintsItsToken starts a bridge: stderr says where the
// token is and how to open the inbox, and never the token.
func TestBridgeNeverPrintsItsToken(t *testing.T) {
	state := t.TempDir()
	_, stderr, _ := runInProcess(t, "--listen", "127.0.0.1:0", "--state-dir", state, "--log-dir", "off", "--", "cat")
	stderr.waitFor(t, "open it with:")
	addr := stderr.boundAddr(t, "AEP endpoint on http://")
	tok, err := os.ReadFile(filepath.Join(state, "token"))
	if err != nil {
		t.Fatal(err)
	}
	s := stderr.String()
	if strings.Contains(s, strings.TrimSpace(string(tok))) {
		t.Fatalf("stderr carries the token:\n%s", s)
	}
	want := "operator inbox at http://" + addr + "/; open it with: aep-mcp-bridge inbox --endpoint http://" + addr + " --state-dir " + state
	if !strings.Contains(s, want) || !strings.Contains(s, "token stored in "+filepath.Join(state, "token")) {
		t.Fatalf("stderr:\n%s\nwant %q", s, want)
	}
}

// TestInboxCommand prints the link with the token, and opens it through a
// private launcher page, never putting the token on a command line or in
// the browser's environment.
func TestInboxCommand(t *testing.T) {
	state := t.TempDir()
	tok := strings.Repeat("t", 64)
	os.WriteFile(filepath.Join(state, "token"), []byte(tok+"\n"), 0o600)
	hub := bus.NewHub()
	ep, _ := endpoint.New(endpoint.Options{Token: tok, Hub: hub})
	srv := httptest.NewServer(ep.Handler())
	defer srv.Close()
	defer ep.Close()

	// A stand-in opener records its arguments in a FIFO the test reads.
	bin := t.TempDir()
	fifo := filepath.Join(bin, "args")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		testenv.Missing(t, "a FIFO", err.Error())
	}
	// It also shows whatever it got of the secrets' variables: nothing.
	os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\necho \"$@\" \"[${AEP_TOKEN-}${AEP_MCP_TOKEN-}${AEP_NOTIFY_SECRET-}]\" > "+fifo+"\n"), 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("DISPLAY", ":99")
	t.Setenv("WAYLAND_DISPLAY", "")
	t.Setenv("AEP_TOKEN", tok)
	t.Setenv("AEP_MCP_TOKEN", "mcp-token-the-opener-must-not-get")
	t.Setenv("AEP_NOTIFY_SECRET", "notify-secret-the-opener-must-not-get")

	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := cli(t, "inbox", "--endpoint", srv.URL, "--state-dir", state)
		done <- result{out, errOut, code}
	}()
	f, err := os.Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(f).ReadString('\n')
	f.Close()
	launcher, env, _ := strings.Cut(strings.TrimSpace(line), " ")
	if filepath.Dir(launcher) != state || env != "[]" || strings.Contains(line, tok) {
		t.Fatalf("the opener got %q; want only a launcher in %s, and no secret in its environment", line, state)
	}
	// The launcher, and every file, holds no token: it forwards to a
	// one-use loopback address, which a browser then loads.
	page, _ := os.ReadFile(launcher)
	fi, _ := os.Stat(launcher)
	if strings.Contains(string(page), tok) || fi.Mode().Perm() != 0o600 {
		t.Fatalf("launcher (mode %v):\n%s", fi.Mode().Perm(), page)
	}
	m := regexp.MustCompile(`url=(http://127\.0\.0\.1:[0-9]+/[^"]+)"`).FindStringSubmatch(string(page))
	if m == nil {
		t.Fatalf("the launcher forwards to no loopback address:\n%s", page)
	}
	target := html.UnescapeString(m[1])
	get := func() (int, string) {
		resp, err := http.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, srv.URL+"/#token="+tok) {
		t.Fatalf("the launcher's address: %d\n%s", code, body)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("inbox did not end once the browser had the link")
	}
	if r.code != 0 || strings.TrimSpace(r.out) != srv.URL+"/#token="+tok || !strings.Contains(r.errOut, "opened in the browser") {
		t.Fatalf("exit %d, printed %q (%s)", r.code, r.out, r.errOut)
	}
	if _, err := os.Stat(launcher); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the launcher is still there: %v", err)
	}
	if _, err := http.Get(target); err == nil {
		t.Errorf("the launcher's address still answers")
	}
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "token" {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), tok) {
				t.Errorf("%s holds the token", p)
			}
		}
		return nil
	})

	t.Setenv("DISPLAY", "")
	if _, errOut, code := cli(t, "inbox", "--endpoint", srv.URL, "--state-dir", state); code != 0 || !strings.Contains(errOut, "no desktop") {
		t.Errorf("without a desktop: exit %d, %q", code, errOut)
	}
	if _, errOut, code := cli(t, "inbox", "--endpoint", "http://"+testenv.RefusedAddr(t), "--state-dir", state); code != exitUnreachable {
		t.Errorf("no bridge: exit %d, %q", code, errOut)
	}
	if _, errOut, code := cli(t, "inbox", "--endpoint", srv.URL, "--token", "wrong-token-wrong-token-wrong-token"); code != exitFailure || !strings.Contains(errOut, "does not know this token") {
		t.Errorf("a wrong token: exit %d, %q", code, errOut)
	}
}
