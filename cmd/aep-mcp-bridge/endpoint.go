package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// stateDir resolves --state-dir's default.
func stateDir(flagValue string) (string, error) {
	if flagValue != "" {
		return expandHome(flagValue)
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "aep-mcp-bridge"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a state folder: %w; pass --state-dir", err)
	}
	return filepath.Join(home, ".local", "state", "aep-mcp-bridge"), nil
}

// loadToken returns the configured token, or the stored one, generating a
// 256-bit token stored with mode 0600 on first use. where says its origin.
func loadToken(flagToken, dir string) (token, where string, err error) {
	if flagToken != "" {
		return flagToken, "--token", nil
	}
	if t := os.Getenv("AEP_TOKEN"); t != "" {
		return t, "AEP_TOKEN", nil
	}
	path := filepath.Join(dir, "token")
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, path, nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("creating the state folder %s: %w; pass --state-dir or --token", dir, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", "", fmt.Errorf("generating a token: %w", err)
	}
	t := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // another bridge won the race
			b, rerr := os.ReadFile(path)
			if rerr == nil && strings.TrimSpace(string(b)) != "" {
				return strings.TrimSpace(string(b)), path, nil
			}
		}
		return "", "", fmt.Errorf("storing the token at %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(t + "\n"); err != nil {
		return "", "", fmt.Errorf("storing the token at %s: %w", path, err)
	}
	return t, path, nil
}

// listen opens the endpoint's port. When the port already serves an AEP
// endpoint (another bridge got there first), it returns that endpoint's
// socket URL instead, so this bridge joins it as an emitter and one inbox
// shows every bridge's questions. Anything else on the port is an error.
func listen(addr, token string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, "", nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		if isAEPEndpoint(addr, token) {
			return nil, "ws://" + addr + "/socket", nil
		}
		return nil, "", fmt.Errorf("the AEP endpoint address %s is taken by something that is not an AEP endpoint; pass --listen with a free address, or --listen off", addr)
	}
	return nil, "", fmt.Errorf("listening on %s for the AEP endpoint: %w; pass --listen with another address, or --listen off", addr, err)
}

// serveEndpoint serves ep on ln until the returned stop is called.
// The inbox URL carries the token in its fragment, which browsers never
// send to a server, so it stays out of every access log.
func serveEndpoint(ln net.Listener, ep *bus.Endpoint, token, where string, stderr io.Writer) (stop func()) {
	srv := &http.Server{Handler: ep.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		srv.Serve(ln)
		close(done)
	}()
	host := ln.Addr().String()
	fmt.Fprintf(stderr, "aep-mcp-bridge: AEP endpoint on http://%s (token from %s)\n", host, where)
	fmt.Fprintf(stderr, "aep-mcp-bridge: operator inbox: http://%s/#token=%s\n", host, token)
	return func() {
		ep.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-done
	}
}

// isAEPEndpoint reports whether addr answers AEP discovery.
func isAEPEndpoint(addr, token string) bool {
	req, err := http.NewRequest("GET", "http://"+addr+"/.well-known/aep", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var doc struct {
		AEP []string `json:"aep"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&doc) == nil && len(doc.AEP) > 0
}
