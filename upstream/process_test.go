package upstream

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/scrub"
)

// waitLimit bounds every wait in these tests; it is a failure guard, not a
// synchronisation.
const waitLimit = 30 * time.Second

func TestStopEscalatesToSIGKILL(t *testing.T) {
	// A server that ignores both the closed stdin and SIGTERM.
	ready := make(chan struct{})
	pr, pw := io.Pipe()
	c, err := Start([]string{"sh", "-c", `trap "" TERM; echo ready >&2; while :; do sleep 1; done`}, nil, pw)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 16)
		n, _ := pr.Read(buf)
		if strings.Contains(string(buf[:n]), "ready") {
			close(ready)
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case <-ready:
	case <-time.After(waitLimit):
		t.Fatal("child did not start")
	}
	c.Stop(50*time.Millisecond, 50*time.Millisecond)
	if st := c.ExitStatus(time.Second); st != "signal killed" {
		t.Fatalf("exit status %q; want signal killed", st)
	}
	pw.Close()
}

func TestStopEndsAPoliteServerWithStdin(t *testing.T) {
	c, err := Start([]string{"cat"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(waitLimit, waitLimit) // cat exits when its stdin closes
	if st := c.ExitStatus(time.Second); st != "status 0" {
		t.Fatalf("exit status %q; want status 0", st)
	}
}

func TestStartErrorSaysWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv []string
		want string
	}{
		{"missing binary", []string{"/no/such/server"}, "check the command after --"},
		{"no command", nil, "pass it after --"},
		{"missing binary with a secret argument", []string{"/no/such/server", "--api-key", "s3cret-arg"}, `"/no/such/server"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(tc.argv, nil, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error saying %q", err, tc.want)
			}
			// The error is printed: it names the program, never its
			// arguments, which may carry a key.
			if strings.Contains(err.Error(), "s3cret-arg") {
				t.Fatalf("got %v; it shows an argument", err)
			}
		})
	}
}

// TestAServerNeverGetsTheCredentials: a spawned server's environment has
// neither token, nor the notification secret, nor a variable the bridge
// read a secret from (scrub.Hide), whether it inherits this process's
// environment or is given one, and keeps everything else.
func TestAServerNeverGetsTheCredentials(t *testing.T) {
	t.Setenv("AEP_TOKEN", "inherited-aep-token")
	t.Setenv("AEP_MCP_TOKEN", "inherited-mcp-token")
	t.Setenv("AEP_NOTIFY_SECRET", "inherited-notify-secret")
	t.Setenv("AEP_TEST_NAMED_SECRET", "inherited-named-secret")
	t.Setenv("AEP_TEST_KEPT", "kept")
	// What the command line does for a notify file's url_env.
	if err := scrub.Hide([]string{"AEP_TEST_NAMED_SECRET"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{name: "inherited", env: nil, want: "AEP_TEST_KEPT=kept"},
		{name: "given", env: []string{"AEP_TOKEN=given-aep-token", "AEP_MCP_TOKEN=given-mcp-token", "AEP_NOTIFY_SECRET=given-notify-secret",
			"AEP_TEST_NAMED_SECRET=given-named-secret", "OTHER=1"}, want: "OTHER=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Start([]string{"env"}, tc.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := io.ReadAll(c.Stdout())
			c.Stop(waitLimit, waitLimit)
			got := string(out)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("the server's environment:\n%s\nwant %s", got, tc.want)
			}
			for _, name := range []string{"AEP_TOKEN", "AEP_MCP_TOKEN", "AEP_NOTIFY_SECRET", "AEP_TEST_NAMED_SECRET"} {
				if strings.Contains(got, name+"=") {
					t.Errorf("the server got %s:\n%s", name, got)
				}
			}
		})
	}
}
