package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// readmeBlock returns the code block that follows a marker comment.
func readmeBlock(t *testing.T, readme, marker string) string {
	t.Helper()
	re := regexp.MustCompile("(?s)<!-- ci-example:" + regexp.QuoteMeta(marker) + " -->\\s*```[a-z]*\\n(.*?)```")
	m := re.FindStringSubmatch(readme)
	if m == nil {
		t.Fatalf("README has no ci-example:%s block", marker)
	}
	return m[1]
}

// TestReadmeCIExample runs the README's CI example as written: its answers
// file and its command line, with the real binary, driven by an mcp-go
// client.
func TestReadmeCIExample(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	dir := t.TempDir()
	bin := filepath.Join(dir, "aep-mcp-bridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the binary: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "answers.json"), []byte(readmeBlock(t, readme, "answers.json")), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := strings.Fields(readmeBlock(t, readme, "command"))
	if argv[0] != "aep-mcp-bridge" {
		t.Fatalf("the example command starts with %q", argv[0])
	}
	// Run it in the folder holding answers.json, with the binary on PATH.
	script := filepath.Join(dir, "run.sh")
	os.WriteFile(script, []byte("#!/bin/sh\ncd "+dir+" && PATH="+dir+":$PATH exec "+strings.Join(argv, " ")+"\n"), 0o755)
	c, err := client.NewStdioMCPClientWithOptions(script, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c = client.NewClient(c.GetTransport(), client.WithProtocolVersion("2025-11-25"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "ci", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "deploy"
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(mcp.TextContent).Text
	for _, want := range []string{`"action":"accept"`, `"service":"checkout"`, `"replicas":3`, `"checks":["smoke"]`, `"canary":true`} {
		if !strings.Contains(text, want) {
			t.Errorf("the server got %s; missing %s", text, want)
		}
	}
}
