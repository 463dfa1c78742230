// This file is added to go-sdk's conformance everything-client when the
// tests build it (go build -overlay), with its connectToServer passing
// its transport through aepTransport: with AEP_CONFORMANCE_STDIO set, the
// client speaks stdio to the command it names (the bridge, given the
// suite's server URL last) instead of streamable HTTP to the URL. Every
// scenario's logic stays the SDK's own.

package main

import (
	"encoding/json"
	"log"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// aepTransport returns t, or with AEP_CONFORMANCE_STDIO (a JSON array:
// the command and its arguments) a stdio transport to that command run
// with t's endpoint as its last argument.
func aepTransport(t *mcp.StreamableClientTransport) mcp.Transport {
	v := os.Getenv("AEP_CONFORMANCE_STDIO")
	if v == "" {
		return t
	}
	var argv []string
	if err := json.Unmarshal([]byte(v), &argv); err != nil || len(argv) == 0 {
		log.Fatalf("AEP_CONFORMANCE_STDIO %q: want a JSON array naming a command and its arguments", v)
	}
	cmd := exec.Command(argv[0], append(argv[1:], t.Endpoint)...)
	cmd.Stderr = os.Stderr
	return &mcp.CommandTransport{Command: cmd}
}
