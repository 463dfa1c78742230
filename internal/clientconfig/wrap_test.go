package clientconfig

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/jsonc"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// wrapSamples are config files of every shape wrap knows, and what each
// server must become.
var wrapSamples = []struct {
	name string
	file string
	// want maps a server (section/name) to the command and args it runs
	// once wrapped.
	want map[string][]string
}{
	{name: "Claude Code .mcp.json", file: "claude-code.mcp.json", want: map[string][]string{
		"mcpServers/everything": {"/opt/bin/aep-mcp-bridge", "--name", "everything", "--", "npx", "-y", "@modelcontextprotocol/server-everything"},
		"mcpServers/no-args":    {"/opt/bin/aep-mcp-bridge", "--name", "no-args", "--", "/usr/local/bin/my-server"},
		"mcpServers/empty-args": {"/opt/bin/aep-mcp-bridge", "--name", "empty-args", "--", "uvx"},
		"mcpServers/remote":     {"/opt/bin/aep-mcp-bridge", "--name", "remote", "--url", "https://mcp.example.com/mcp", "--header-env", "AEP_MCP_HEADER_1"},
		"mcpServers/legacy-sse": {"/opt/bin/aep-mcp-bridge", "--name", "legacy-sse", "--url", "https://sse.example.com/sse", "--transport", "sse"},
	}},
	{name: "~/.claude.json with per-project servers", file: "claude.json", want: map[string][]string{
		"mcpServers/user-tool":              {"/opt/bin/aep-mcp-bridge", "--name", "user-tool", "--", "node", "/home/me/tool/index.js", "--verbose"},
		"projects./home/me/checkout/deploy": {"/opt/bin/aep-mcp-bridge", "--name", "deploy", "--", "python3", "-m", "deploy_mcp"},
		"projects./home/me/checkout/docs":   {"/opt/bin/aep-mcp-bridge", "--name", "docs", "--url", "https://docs.example.com/mcp"},
	}},
	{name: "Claude Desktop", file: "claude_desktop_config.json", want: map[string][]string{
		"mcpServers/filesystem": {"/opt/bin/aep-mcp-bridge", "--name", "filesystem", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop", "/Users/me/Downloads"},
		"mcpServers/sqlite":     {"/opt/bin/aep-mcp-bridge", "--name", "sqlite", "--", "uvx", "mcp-server-sqlite", "--db-path", "/Users/me/test.db"},
	}},
	{name: "Cursor", file: "cursor.mcp.json", want: map[string][]string{
		"mcpServers/web-search":   {"/opt/bin/aep-mcp-bridge", "--name", "web-search", "--", "npx", "-y", "web-search-mcp"},
		"mcpServers/remote-tools": {"/opt/bin/aep-mcp-bridge", "--name", "remote-tools", "--url", "https://tools.example.com/mcp", "--header-env", "AEP_MCP_HEADER_1", "--header-env", "AEP_MCP_HEADER_2"},
	}},
	{name: "VS Code .vscode/mcp.json (JSONC, inputs)", file: "vscode.mcp.json", want: map[string][]string{
		"servers/Perplexity": {"/opt/bin/aep-mcp-bridge", "--name", "Perplexity", "--", "npx", "-y", "server-perplexity-ask"},
		"servers/fetch":      {"/opt/bin/aep-mcp-bridge", "--name", "fetch", "--", "uvx", "mcp-server-fetch"},
		"servers/github":     {"/opt/bin/aep-mcp-bridge", "--name", "github", "--url", "https://api.githubcopilot.com/mcp/", "--header-env", "AEP_MCP_HEADER_1"},
	}},
}

// TestWrapRoundTrips wraps each sample, checks what every server runs and
// that nothing else moved (golden file), wraps again (no change), and
// unwraps: with the backup wrap keeps, the file comes back byte for byte;
// without it, every server comes back with the same values.
func TestWrapRoundTrips(t *testing.T) {
	for _, tc := range wrapSamples {
		t.Run(tc.name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			wrapped, _, err := Wrap(src, "/opt/bin/aep-mcp-bridge")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", tc.file+".wrapped"), wrapped)
			if diff := cmp.Diff(tc.want, commands(t, wrapped)); diff != "" {
				t.Errorf("wrapped servers (-want +got):\n%s", diff)
			}
			again, _, err := Wrap(wrapped, "/opt/bin/aep-mcp-bridge")
			if err != nil || !bytes.Equal(again, wrapped) {
				t.Errorf("wrapping twice changed the file (err %v):\n%s", err, textdiff.Unified("once", "twice", string(wrapped), string(again)))
			}
			back, _, err := Unwrap(wrapped, src)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, src) {
				t.Errorf("unwrap did not restore the file:\n%s", textdiff.Unified("original", "unwrapped", string(src), string(back)))
			}
			rebuilt, _, err := Unwrap(wrapped, nil)
			if err != nil {
				t.Fatal(err)
			}
			// An empty args list and none mean the same to every client.
			if diff := cmp.Diff(dropEmptyArgs(value(t, src)), dropEmptyArgs(value(t, rebuilt))); diff != "" {
				t.Errorf("unwrap without the backup changed a value (-original +unwrapped):\n%s", diff)
			}
			if back, _, _ := Unwrap(src, nil); !bytes.Equal(back, src) {
				t.Errorf("unwrapping a file that was never wrapped changed it")
			}
		})
	}
}

// TestWrapWithARenamedBridge: wrap --bridge may write any command for the
// bridge (a versioned binary, a Windows path, another name). For every
// sample, a wrapped entry is still known as wrapped: wrapping again, with
// the same command or another, changes nothing and says so, and unwrap,
// with the backup, gives the file back byte for byte (without it, the
// same values).
func TestWrapWithARenamedBridge(t *testing.T) {
	bridges := []string{"/opt/tools/aep-mcp-bridge-1.4.2", `C:\Tools\mcp-guard.exe`, "ops-bridge"}
	for _, tc := range wrapSamples {
		for _, bridge := range bridges {
			t.Run(tc.name+"/"+bridge, func(t *testing.T) {
				src, err := os.ReadFile(filepath.Join("testdata", tc.file))
				if err != nil {
					t.Fatal(err)
				}
				wrapped, _, err := Wrap(src, bridge)
				if err != nil {
					t.Fatal(err)
				}
				want := map[string][]string{}
				for k, argv := range tc.want {
					want[k] = append([]string{bridge}, argv[1:]...)
				}
				if diff := cmp.Diff(want, commands(t, wrapped)); diff != "" {
					t.Fatalf("wrapped servers (-want +got):\n%s", diff)
				}
				for _, again := range append([]string{bridge, "/opt/bin/aep-mcp-bridge"}, bridges...) {
					twice, report, err := Wrap(wrapped, again)
					if err != nil || !bytes.Equal(twice, wrapped) {
						t.Fatalf("wrapping again with %s changed the file (err %v):\n%s", again, err, textdiff.Unified("once", "twice", string(wrapped), string(twice)))
					}
					if len(report) != len(tc.want) {
						t.Fatalf("wrapping again with %s reported %d servers; want %d", again, len(report), len(tc.want))
					}
					for _, l := range report {
						if !strings.HasSuffix(l, "left as it is: already runs through the bridge") {
							t.Errorf("wrapping again with %s: %q", again, l)
						}
					}
				}
				back, report, err := Unwrap(wrapped, src)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(back, src) {
					t.Fatalf("unwrap did not restore the file (%q):\n%s", report, textdiff.Unified("original", "unwrapped", string(src), string(back)))
				}
				rebuilt, _, err := Unwrap(wrapped, nil)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(dropEmptyArgs(value(t, src)), dropEmptyArgs(value(t, rebuilt))); diff != "" {
					t.Errorf("unwrap without the backup changed a value (-original +unwrapped):\n%s", diff)
				}
			})
		}
	}
}

// TestWrappedIsKnownByItsShape: what counts as an entry that runs
// through the bridge, whatever its command.
func TestWrappedIsKnownByItsShape(t *testing.T) {
	for _, tc := range []struct {
		name, entry string
		want        bool
	}{
		{"stdio, renamed bridge", `{"command": "/opt/b-1.2", "args": ["--name", "k", "--", "npx", "-y", "x"]}`, true},
		{"url, renamed bridge", `{"command": "b", "args": ["--name", "k", "--url", "https://h/mcp"]}`, true},
		{"the bridge by name, other arguments", `{"command": "/usr/bin/aep-mcp-bridge", "args": ["--agent", "a", "--", "x"]}`, true},
		{"the bridge by name, Windows", `{"command": "C:\\b\\aep-mcp-bridge.exe"}`, true},
		{"another entry's key", `{"command": "b", "args": ["--name", "other", "--", "x"]}`, false},
		{"no command after --", `{"command": "b", "args": ["--name", "k", "--"]}`, false},
		{"--name not first", `{"command": "b", "args": ["-v", "--name", "k", "--", "x"]}`, false},
		{"a server's own --name", `{"command": "srv", "args": ["--name", "k", "--port", "1"]}`, false},
		{"not strings", `{"command": "b", "args": ["--name", "k", "--", 1]}`, false},
		{"a url entry", `{"url": "https://h/mcp"}`, false},
		{"a command that is not a string", `{"command": ["b"], "args": ["--name", "k", "--", "x"]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := []byte(`{"mcpServers": {"k": ` + tc.entry + `}}`)
			root, err := jsonc.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := findServers(root, src)
			if err != nil || len(entries) != 1 {
				t.Fatalf("%v, %d entries", err, len(entries))
			}
			if got := wrapped(entries[0]); got != tc.want {
				t.Errorf("wrapped = %v; want %v", got, tc.want)
			}
		})
	}
}

// dropEmptyArgs removes every "args": [] member.
func dropEmptyArgs(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if a, ok := x.([]any); ok && k == "args" && len(a) == 0 {
				delete(t, k)
				continue
			}
			dropEmptyArgs(x)
		}
	case []any:
		for _, x := range t {
			dropEmptyArgs(x)
		}
	}
	return v
}

// value decodes a JSONC document into plain Go values.
func value(t *testing.T, b []byte) any {
	t.Helper()
	root, err := jsonc.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	var conv func(n *jsonc.Node) any
	conv = func(n *jsonc.Node) any {
		switch n.Kind {
		case '{':
			m := map[string]any{}
			for _, x := range n.Members {
				m[x.Key] = conv(x.Val)
			}
			return m
		case '[':
			a := []any{}
			for _, x := range n.Elems {
				a = append(a, conv(x))
			}
			return a
		case '"':
			return n.Str
		}
		return string(b[n.Start:n.End])
	}
	return conv(root)
}

// commands reads, for every server of a config, the command line it runs.
func commands(t *testing.T, b []byte) map[string][]string {
	t.Helper()
	root, err := jsonc.Parse(b)
	if err != nil {
		t.Fatalf("the wrapped file does not parse: %v\n%s", err, b)
	}
	entries, err := findServers(root, b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range entries {
		c := e.obj.Member("command")
		if c == nil {
			continue
		}
		argv := []string{c.Val.Str}
		if a := e.obj.Member("args"); a != nil {
			for _, x := range a.Val.Elems {
				argv = append(argv, x.Str)
			}
		}
		out[e.section+"/"+e.name] = argv
	}
	return out
}

// golden compares got with a golden file, rewriting it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (-want +got):\n%s", path, textdiff.Unified("want", "got", string(want), string(got)))
	}
}

// TestWrapMovesHeadersToTheEnvironment checks that a URL server's headers,
// which often hold credentials, leave the command line for the entry's
// environment, where --header-env finds them.
func TestWrapMovesHeadersToTheEnvironment(t *testing.T) {
	src, _ := os.ReadFile(filepath.Join("testdata", "cursor.mcp.json"))
	wrapped, _, err := Wrap(src, "aep-mcp-bridge")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(wrapped, &cfg); err != nil {
		t.Fatal(err)
	}
	s := cfg.MCPServers["remote-tools"]
	want := map[string]string{"AEP_MCP_HEADER_1": "X-Api-Key: secret-key", "AEP_MCP_HEADER_2": "X-Team: blue"}
	if diff := cmp.Diff(want, s.Env); diff != "" || s.Headers != nil || strings.Contains(strings.Join(s.Args, " "), "secret-key") {
		t.Fatalf("env (-want +got):\n%s\nargs %q, headers %v", diff, s.Args, s.Headers)
	}
}

// TestWrapKeepsTheFilesLayout: a byte order mark stays, a CRLF file
// stays CRLF through unwrap, a one-line entry in a spaced file gets a
// space after each comma, and a minified file stays minified. Each file
// comes back from unwrap, with the backup and without it.
func TestWrapKeepsTheFilesLayout(t *testing.T) {
	const bridge = "/opt/aep-mcp-bridge"
	tests := []struct{ name, src, want string }{
		{"a byte order mark",
			"\ufeff{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n  }\n}\n",
			"\ufeff{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"/opt/aep-mcp-bridge\", \"args\": [\"--name\", \"a\", \"--\", \"x\"]}\n  }\n}\n"},
		{"CRLF line endings",
			"{\r\n  \"mcpServers\": {\r\n    \"r\": {\r\n      \"url\": \"https://h/mcp\",\r\n      \"headers\": {\r\n        \"A\": \"1\"\r\n      }\r\n    }\r\n  }\r\n}\r\n",
			"{\r\n  \"mcpServers\": {\r\n    \"r\": {\r\n      \"command\": \"/opt/aep-mcp-bridge\",\r\n      \"args\": [\"--name\", \"r\", \"--url\", \"https://h/mcp\", \"--header-env\", \"AEP_MCP_HEADER_1\"],\r\n" +
				"      \"env\": {\"AEP_MCP_HEADER_1\": \"A: 1\"}\r\n    }\r\n  }\r\n}\r\n"},
		{"one-line entries in a spaced file",
			`{"mcpServers": {"a": {"command": "x"}, "u": {"url": "https://h/mcp", "headers": {"A": "1"}}}}`,
			`{"mcpServers": {"a": {"command": "/opt/aep-mcp-bridge", "args": ["--name", "a", "--", "x"]}, ` +
				`"u": {"command": "/opt/aep-mcp-bridge", "args": ["--name", "u", "--url", "https://h/mcp", "--header-env", "AEP_MCP_HEADER_1"], "env": {"AEP_MCP_HEADER_1": "A: 1"}}}}`},
		{"a server named --",
			`{"mcpServers": {"--": {"command": "x", "args": ["y"]}}}`,
			`{"mcpServers": {"--": {"command": "/opt/aep-mcp-bridge", "args": ["--name", "--", "--", "x", "y"]}}}`},
		{"a minified file, with ': ' inside a string",
			`{"mcpServers":{"a":{"command":"x"},"u":{"url":"https://h/mcp","headers":{"Authorization":"Bearer: x"}}}}`,
			`{"mcpServers":{"a":{"command":"/opt/aep-mcp-bridge","args":["--name","a","--","x"]},` +
				`"u":{"command":"/opt/aep-mcp-bridge","args":["--name","u","--url","https://h/mcp","--header-env","AEP_MCP_HEADER_1"],"env":{"AEP_MCP_HEADER_1":"Authorization: Bearer: x"}}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wrapped, _, err := Wrap([]byte(tc.src), bridge)
			if err != nil {
				t.Fatal(err)
			}
			if string(wrapped) != tc.want {
				t.Errorf("wrapped:\n%q\nwant:\n%q", wrapped, tc.want)
			}
			for _, backup := range [][]byte{[]byte(tc.src), nil} {
				back, _, err := Unwrap(wrapped, backup)
				if err != nil {
					t.Fatal(err)
				}
				if string(back) != tc.src {
					t.Errorf("unwrapped (backup %v):\n%q\nwant:\n%q", backup != nil, back, tc.src)
				}
			}
		})
	}
}

// FuzzWrap feeds any document to wrap and unwrap: neither may panic, what
// wrap writes parses, wrapping again (with the bridge under another name)
// changes nothing, and unwrap with the backup gives the input back; when
// the input already had entries that run through the bridge, unwrap
// unwraps those as it would in the input itself.
func FuzzWrap(f *testing.F) {
	for _, s := range wrapSamples {
		b, _ := os.ReadFile(filepath.Join("testdata", s.file))
		f.Add(b)
	}
	f.Add([]byte(`{"servers":{"a":{"command":"x","args":[/* c */"y",]}}}`))
	f.Add([]byte("\ufeff{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}"))
	f.Add([]byte("{\r\n \"mcpServers\": {\r\n  \"u\": {\r\n   \"url\": \"https://h\",\r\n   \"headers\": {\"A\": \"1\", \"B\": \"2\"}\r\n  }\r\n }\r\n}"))
	f.Add([]byte(`{"mcpServers":{"a":{"command":"x","args":["--name","a","--","y"]},"b":{"command":"z"}}}`))
	f.Add([]byte(`{"mcpServers":{"--":{"command":"x"},"u":{"command":"aep-mcp-bridge","args":["--url","https://h"]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		wrapped, _, err := Wrap(b, "/opt/aep-mcp-bridge-1.0")
		if err != nil {
			return
		}
		if _, err := jsonc.Parse(wrapped); err != nil {
			t.Fatalf("wrap wrote a file that does not parse: %v\n%s", err, wrapped)
		}
		if again, _, err := Wrap(wrapped, "aep-mcp-bridge"); err != nil || !bytes.Equal(again, wrapped) {
			t.Fatalf("wrapping again changed the file (err %v):\n%s", err, textdiff.Unified("once", "twice", string(wrapped), string(again)))
		}
		back, _, err := Unwrap(wrapped, b)
		if err != nil {
			t.Fatalf("unwrap: %v", err)
		}
		want := b
		if anyWrapped(t, b) {
			if want, _, err = Unwrap(b, b); err != nil {
				t.Fatalf("unwrapping the input: %v", err)
			}
		}
		if !bytes.Equal(back, want) {
			t.Fatalf("unwrap with the backup did not restore the file:\n%s", textdiff.Unified("in", "out", string(want), string(back)))
		}
		rebuilt, _, err := Unwrap(wrapped, nil)
		if err != nil {
			t.Fatalf("unwrap without the backup: %v", err)
		}
		if bytes.HasPrefix(b, []byte("\ufeff")) && (!bytes.HasPrefix(wrapped, []byte("\ufeff")) || !bytes.HasPrefix(rebuilt, []byte("\ufeff"))) {
			t.Fatalf("the byte order mark was lost:\n%q\n%q", wrapped, rebuilt)
		}
		if crlfOnly(b) && (!crlfOnly(wrapped) || !crlfOnly(rebuilt)) {
			t.Fatalf("a CRLF file got a bare line feed:\n%q\n%q", wrapped, rebuilt)
		}
	})
}

// anyWrapped reports whether a config file has a server that already
// runs through the bridge.
func anyWrapped(t *testing.T, b []byte) bool {
	root, err := jsonc.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := findServers(root, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if wrapped(e) {
			return true
		}
	}
	return false
}

// crlfOnly reports whether every line feed of b ends a CRLF.
func crlfOnly(b []byte) bool {
	return bytes.Count(b, []byte("\n")) == bytes.Count(b, []byte("\r\n"))
}
