package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// handoffWait bounds how long `inbox` waits for the browser to load the
// link before it takes the launcher away.
const handoffWait = 2 * time.Minute

// handoff hands the inbox link, token included, to the browser without
// writing the token to a file or a command line. The browser is pointed
// at a launcher page in the private state folder that forwards to an
// unguessable address on loopback; that address serves the link once,
// and then the launcher is removed and the server stops. What stays
// readable meanwhile is the launcher's one-use address, to the user only.
type handoff struct {
	// page is the launcher's path, for the opener.
	page   string
	srv    *http.Server
	served chan struct{} // closed once the link was served
	once   sync.Once
	done   chan struct{} // closed when srv has stopped serving
}

// startHandoff serves link once and writes the launcher into dir.
func startHandoff(dir, link string) (*handoff, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state folder %s: %w", dir, err)
	}
	if err := checkFolder(dir); err != nil {
		return nil, err
	}
	// Earlier versions left a launcher holding the token here.
	os.Remove(filepath.Join(dir, "inbox.html"))
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("making the launcher's address: %w", err)
	}
	secretPath := "/open/" + hex.EncodeToString(raw)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on loopback for the browser: %w; open the link above yourself", err)
	}
	h := &handoff{served: make(chan struct{}), done: make(chan struct{})}
	h.srv = &http.Server{Handler: h.handler(secretPath, link), ReadHeaderTimeout: 10 * time.Second}
	f, err := os.CreateTemp(dir, ".inbox-*.html")
	if err == nil {
		h.page = f.Name()
		target := "http://" + ln.Addr().String() + secretPath
		_, err = f.WriteString(forwardPage(target))
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		ln.Close()
		if h.page != "" {
			os.Remove(h.page)
		}
		return nil, fmt.Errorf("writing the inbox launcher: %w", err)
	}
	go func() {
		defer close(h.done)
		h.srv.Serve(ln)
	}()
	return h, nil
}

// handler serves the page that forwards to link at secretPath, once.
func (h *handoff) handler(secretPath, link string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || subtle.ConstantTimeCompare([]byte(r.URL.Path), []byte(secretPath)) != 1 {
			http.NotFound(w, r)
			return
		}
		first := false
		h.once.Do(func() { first = true })
		if !first {
			http.Error(w, "this address served the inbox link once already; run aep-mcp-bridge inbox again", http.StatusGone)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		fmt.Fprint(w, forwardPage(link))
		close(h.served)
	})
}

// wait waits until the link was served, ctx ends, or handoffWait passes,
// and reports whether it was served.
func (h *handoff) wait(ctx context.Context) bool {
	t := time.NewTimer(handoffWait)
	defer t.Stop()
	select {
	case <-h.served:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// close removes the launcher and stops the server, letting a response
// being written finish.
func (h *handoff) close() {
	os.Remove(h.page)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.srv.Shutdown(ctx)
	<-h.done
}

// forwardPage is a page that forwards the browser to target.
func forwardPage(target string) string {
	t := html.EscapeString(target)
	return strings.Join([]string{`<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">`,
		`<title>aep-mcp-bridge inbox</title><meta http-equiv="refresh" content="0;url=` + t + `">`,
		`<p><a href="` + t + `">Open the aep-mcp-bridge inbox</a></p>`}, "")
}
