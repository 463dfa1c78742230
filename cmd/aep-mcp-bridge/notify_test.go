package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// TestNotifyFlagsNeverEchoSecrets: a webhook URL carries its token, so a
// refused one is named by scheme and host only, and --help never shows a
// URL given on the command line.
func TestNotifyFlagsNeverEchoSecrets(t *testing.T) {
	t.Parallel()
	const secret = "SECRETPATH"
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"remote http", []string{"--notify", "http://hooks.example/services/T/B/" + secret, "--", "true"}, 2, `remote host "hooks.example"`},
		{"javascript", []string{"--notify", "slack=javascript:" + secret, "--", "true"}, 2, "javascript: scheme is refused"},
		{"unknown format", []string{"--notify", "pager=https://hooks.example/" + secret, "--", "true"}, 2, "unknown format"},
		{"no scheme, a query", []string{"--notify", "hooks.example/services/" + secret + "?a=b", "--", "true"}, 2, "unknown format"},
		{"no scheme, a token", []string{"--notify-escalate", "1m", "--notify-escalate-to", secret + "=x", "--", "true"}, 2, "unknown format"},
		{"public URL with a token", []string{"--notify", "https://hooks.example/x", "--public-url", "https://inbox.example/?token=" + secret, "--", "true"}, 2, "no user info, query or fragment"},
		{"escalate-to without escalate", []string{"--notify-escalate-to", "https://hooks.example/" + secret, "--", "true"}, 2, "needs --notify-escalate"},
		{"help", []string{"--notify", "slack=https://hooks.slack.com/services/" + secret, "--help"}, 0, ""},
		{"serve help", []string{"serve", "--notify", "https://hooks.slack.com/services/" + secret, "--help"}, 0, ""},
		{"demo help", []string{"demo", "--notify", "https://hooks.slack.com/services/" + secret, "--help"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			args := append([]string{"--state-dir", state}, tt.args...)
			if tt.args[0] == "serve" || tt.args[0] == "demo" {
				args = append([]string{tt.args[0], "--state-dir", state}, tt.args[1:]...)
			}
			var out, errb bytes.Buffer
			code := exitCode(run(context.Background(), args, strings.NewReader(""), &out, &errb))
			if code != tt.code || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), tt.code, tt.want)
			}
			if s := out.String() + errb.String(); strings.Contains(s, secret) {
				t.Errorf("the output shows the URL's secret:\n%s", s)
			}
			if tt.code == 0 && !strings.Contains(out.String(), "-notify-file FILE") {
				t.Errorf("the help does not list --notify-file:\n%s", out.String())
			}
		})
	}
}

// TestDemoNotifies runs the demo with two webhooks: a json one, signed
// with the secret the demo generates and stores, and a Slack-format one
// that refuses. The json receiver gets the question and its decline, each
// with a signature its secret verifies; the refusal is logged by scheme
// and host, never with the URL's path.
func TestDemoNotifies(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 16)
	bodies := make(chan []byte, 16)
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer ok.Close()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer refuse.Close()

	state := t.TempDir()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.ReservePort(t))
	done := make(chan error, 1)
	args := []string{"demo", "--listen", addr, "--state-dir", state, "--log-dir", "off",
		"--notify", ok.URL + "/hook", "--notify", "slack=" + refuse.URL + "/services/T000/B000/SECRETPATH"}
	go func() { done <- run(context.Background(), args, strings.NewReader(""), stdout, stderr) }()
	defer func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	}()
	stdout.waitFor(t, "--values")
	m := questionRe.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no question in the demo's output:\n%s", stdout.String())
	}
	id := m[1]
	secret, err := os.ReadFile(filepath.Join(state, "notify-secret"))
	if err != nil {
		t.Fatalf("the generated signing secret: %v", err)
	}
	check := func(want string) {
		t.Helper()
		var r *http.Request
		var body []byte
		select {
		case r = <-got:
			body = <-bodies
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s notification", want)
		}
		var b struct {
			Type     string
			Question struct{ ID, Link string }
		}
		json.Unmarshal(body, &b)
		if b.Type != want || b.Question.ID != id || b.Question.Link != "http://"+addr+"/#question="+id {
			t.Errorf("got %s; want %s of question %s with its link", body, want, id)
		}
		ts, v1, _ := strings.Cut(r.Header.Get("X-AEP-Signature"), ",v1=")
		mac := hmac.New(sha256.New, []byte(strings.TrimSpace(string(secret))))
		mac.Write([]byte(strings.TrimPrefix(ts, "t=") + "."))
		mac.Write(body)
		if v1 != hex.EncodeToString(mac.Sum(nil)) {
			t.Errorf("the signature %q does not verify with the stored secret", r.Header.Get("X-AEP-Signature"))
		}
	}
	check("question.opened")
	if out, errOut, code := cli(t, "respond", id, "--decline", "--endpoint", "http://"+addr, "--state-dir", state); code != 0 {
		t.Fatalf("respond: exit %d %s %s", code, out, errOut)
	}
	check("question.declined")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stderr.waitFor(t, "notify_target=http://"+strings.TrimPrefix(refuse.URL, "http://"))
	if s := stderr.String(); strings.Contains(s, "SECRETPATH") || strings.Contains(s, "T000") {
		t.Errorf("the demo's log shows the webhook URL's path:\n%s", s)
	}
}
