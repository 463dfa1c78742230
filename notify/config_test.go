package notify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

var testSources = Sources{
	Env: func(k string) (string, bool) {
		v, ok := map[string]string{"OPS_URL": "https://hooks.slack.com/services/T/B/SECRETPATH", "ONCALL_SECRET": testSecret}[k]
		return v, ok
	},
	ReadFile: func(p string) ([]byte, error) {
		if p == "/etc/aep/secret" {
			return []byte(testSecret + "\n"), nil
		}
		return nil, errors.New("no such file")
	},
	Dir: "/etc/aep",
}

func TestParseFile(t *testing.T) {
	yaml := `
escalate: 5m
targets:
  - name: ops
    url_env: OPS_URL
    capture: redacted
    events: [opened, expiring]
    escalate_to: [oncall]
  - name: oncall
    url: https://oncall.example/aep
    secret_file: secret
    events: [expiring]
  - url: https://ntfy.sh/aep-questions
`
	cfg, err := ParseFile([]byte(yaml), testSources)
	if err != nil {
		t.Fatal(err)
	}
	want := FileConfig{Escalate: 5 * time.Minute, Targets: []Target{
		{Name: "ops", URL: "https://hooks.slack.com/services/T/B/SECRETPATH", Format: Slack, Capture: aep.CaptureRedacted,
			Events: []Type{Opened, Expiring}, EscalateTo: []string{"oncall"}},
		{Name: "oncall", URL: "https://oncall.example/aep", Format: JSON, Secret: testSecret, Capture: aep.CaptureMetadata, Events: []Type{Expiring}},
		{URL: "https://ntfy.sh/aep-questions", Format: Ntfy, Capture: aep.CaptureMetadata},
	}, SecretEnv: []string{"OPS_URL"}}
	if d := cmp.Diff(want, cfg, cmp.AllowUnexported(FileConfig{})); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// The same as JSON.
	js := `{"targets":[{"url":"https://x.example/h","secret_env":"ONCALL_SECRET","format":"json"},{"url_env":"OPS_URL","secret_env":"ONCALL_SECRET"}]}`
	cfg, err = ParseFile([]byte(js), testSources)
	if err != nil {
		t.Errorf("JSON: %v", err)
	}
	// Each variable the file read a secret from, once.
	if d := cmp.Diff([]string{"ONCALL_SECRET", "OPS_URL"}, cfg.SecretEnv); d != "" {
		t.Errorf("SecretEnv (-want +got):\n%s", d)
	}
}

// TestParseFileRefusals: every problem is listed with its line, and no
// message quotes a value.
func TestParseFileRefusals(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"not a mapping", "- a", "must be a mapping"},
		{"no targets", "escalate: 5m", "targets: must be a non-empty list"},
		{"unknown field", "targets:\n  - url: https://a.example/SECRETPATH\n    secret: " + testSecret + "\n    colour: red", "line 4: targets[0]: unknown field"},
		{"two urls", "targets:\n  - url: https://a.example/SECRETPATH\n    url_env: OPS_URL", "give one of url, url_env"},
		{"unset env", "targets:\n  - url_env: NOPE_SECRETPATH", "line 2: targets[0].url_env: the environment variable it names is not set"},
		{"bad format", "targets:\n  - url: https://a.example/x\n    format: SECRETPATH", "line 3: targets[0].format: unknown format"},
		{"bad event", "targets:\n  - url: https://a.example/x\n    format: slack\n    events: [SECRETPATH]", "an unknown event"},
		{"remote http", "targets:\n  - url: http://a.example/SECRETPATH\n    format: slack", `remote host "a.example"`},
		{"json without secret", "targets:\n  - url: https://a.example/SECRETPATH", "has no secret"},
		{"short secret", "targets:\n  - url: https://a.example/x\n    secret: SECRETPATH", "its secret is 10 bytes"},
		{"unknown escalate_to", "targets:\n  - url: https://a.example/x\n    format: slack\n    escalate_to: [nobody]", `escalate_to names "nobody"`},
		{"bad escalate", "escalate: soon\ntargets:\n  - url: https://a.example/x\n    format: slack", "escalate: must be a duration"},
		{"ntfy without topic", "targets:\n  - url: https://ntfy.example/\n    format: ntfy", "names its topic"},
		{"unreadable secret file", "targets:\n  - url: https://a.example/x\n    secret_file: SECRETPATH", "cannot be read"},
		{"syntax", "targets: [", "not YAML or JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFile([]byte(tt.file), testSources)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseFile = %v; want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "SECRETPATH") || strings.Contains(err.Error(), testSecret) {
				t.Errorf("the error quotes a value: %v", err)
			}
		})
	}
}

// TestLoadFileInlineSecretNeedsPrivateFile: a file with a secret written
// in it is refused while group or others can read it.
func TestLoadFileInlineSecretNeedsPrivateFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notify.yaml")
	os.WriteFile(p, []byte("targets:\n  - url: https://a.example/x\n    secret: "+testSecret+"\n"), 0o644)
	if _, err := LoadFile(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("LoadFile = %v; want it refused with the chmod", err)
	}
	os.Chmod(p, 0o600)
	if _, err := LoadFile(p); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseFile(f *testing.F) {
	f.Add([]byte("escalate: 5m\ntargets:\n  - name: a\n    url: https://a.example/x\n    format: slack\n    events: [opened]\n    escalate_to: [a]\n"))
	f.Add([]byte(`{"targets":[{"url_env":"OPS_URL","capture":"full"}]}`))
	f.Add([]byte("targets: [{url: 'https://ntfy.sh/t', format: ntfy}]"))
	f.Add([]byte("&a [*a, *a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseFile(data, testSources)
		if err != nil {
			if strings.Contains(err.Error(), "SECRETPATH") || strings.Contains(err.Error(), testSecret) {
				t.Fatalf("the error quotes a secret: %v", err)
			}
			return
		}
		if len(cfg.Targets) == 0 {
			t.Fatal("a file with no target loaded")
		}
		if err := checkTargets(cfg.Targets); err != nil {
			t.Fatalf("a loaded file's targets do not check: %v", err)
		}
	})
}

// TestLoadFileReadsRegularValueFilesOnly: a secret_file or url_file that
// names a FIFO (which would block the bridge's start until something
// writes to it) or a device (/dev/zero never ends) is refused at once,
// as is a regular file over 64 KiB; a regular file is read.
func TestLoadFileReadsRegularValueFilesOnly(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "secret.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		testenv.Missing(t, "a FIFO", err.Error())
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, []byte(strings.Repeat("s", MaxValueFileBytes+1)), 0o600)
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte(testSecret+"\n"), 0o600)
	for _, tc := range []struct {
		name, file string
		ok         bool
	}{
		{"a FIFO", fifo, false},
		{"a device that never ends", "/dev/zero", false},
		{"a folder", dir, false},
		{"over 64 KiB", big, false},
		{"a regular file", good, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "notify.yaml")
			os.WriteFile(p, []byte("targets:\n  - url: https://a.example/x\n    secret_file: "+tc.file+"\n"), 0o600)
			got := make(chan error, 1)
			go func() {
				cfg, err := LoadFile(p)
				if err == nil && cfg.Targets[0].Secret != testSecret {
					err = errors.New("the secret read is not the file's")
				}
				got <- err
			}()
			var err error
			select {
			case err = <-got:
			case <-time.After(waitLimit):
				t.Fatalf("LoadFile is still reading %s", tc.file)
			}
			if tc.ok != (err == nil) {
				t.Fatalf("LoadFile: %v; want it to succeed %v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "not a regular file, or is over 64 KiB") {
				t.Errorf("LoadFile: %v; want it to say why", err)
			}
		})
	}
}
