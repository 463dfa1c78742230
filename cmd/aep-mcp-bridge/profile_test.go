package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUProfileIsWritten runs the bridge process with --cpuprofile and
// reads the file back: a gzipped pprof protocol buffer whose string table
// names CPU samples, written when the client goes away.
func TestCPUProfileIsWritten(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bridge.pprof")
	cmd := exec.Command(self, "as-bridge", "--cpuprofile", path, "--listen", "off", "--log-dir", "off", "--", "cat")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the bridge exited with %v; stderr:\n%s", err, stderr.String())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no profile written: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the profile is not gzipped as pprof writes it: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("reading the profile: %v", err)
	}
	for _, want := range []string{"samples", "cpu", "nanoseconds"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("the profile's string table lacks %q; it is not a CPU profile", want)
		}
	}
}

func TestCPUProfileUnwritablePath(t *testing.T) {
	t.Parallel()
	var stderr lockedBuffer
	path := filepath.Join(t.TempDir(), "missing", "bridge.pprof")
	err := run(t.Context(), []string{"--cpuprofile", path, "--listen", "off", "--log-dir", "off", "--", "cat"}, strings.NewReader(""), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile") || !strings.Contains(err.Error(), "writable folder") {
		t.Fatalf("run: got %v; want an error that names --cpuprofile and says what to do", err)
	}
}
