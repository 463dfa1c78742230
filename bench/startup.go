package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// runStartup measures what the default operator plane (in the process,
// no service to run) costs a bridge that starts: the time from exec to
// the AEP endpoint answering and to the MCP server's initialize result
// through the bridge, and the bridge's resident set once it is idle.
// The bounds are under a second and under 40 MB; this prints the
// medians of -runs starts, each its own process and state folder.
func runStartup(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("startup", flag.ContinueOnError)
	runs := fs.Int("runs", 9, "starts measured per mode")
	idle := fs.Duration("idle", 3*time.Second, "how long a started bridge idles before its RSS is read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bridgeBin, serverBin, _, cleanup, err := buildAll()
	if err != nil {
		return err
	}
	defer cleanup()
	modes := []startupMode{
		{name: "bridge (wraps a stdio server)", args: func(state string) []string {
			return []string{"--listen", "127.0.0.1:0", "--state-dir", state, "--log-dir", "off", "--", serverBin}
		}, stdio: true},
		{name: "serve (MCP gateway)", args: func(state string) []string {
			return []string{"serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--state-dir", state, "--log-dir", "off", "--", serverBin}
		}},
	}
	fmt.Printf("startup: %d starts per mode, %v idle before RSS; medians (min-max)\n\n", *runs, *idle)
	fmt.Println("| mode | endpoint answers ms | MCP initialize ms | idle RSS MB | bound |")
	fmt.Println("|---|---|---|---|---|")
	for _, m := range modes {
		var ready, mcp []time.Duration
		var rss []float64
		for range *runs {
			r, err := m.start(ctx, bridgeBin, *idle)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			ready, mcp, rss = append(ready, r.ready), append(mcp, r.mcp), append(rss, r.rssKB/1024)
		}
		mcpCell := "-"
		if m.stdio {
			mcpCell = spread(mcp)
		}
		fmt.Printf("| %s | %s | %s | %.1f (%.1f-%.1f) | < 1000 ms, < 40 MB |\n", m.name, spread(ready), mcpCell,
			medianFloat(rss), minFloat(rss), maxFloat(rss))
	}
	fmt.Println("\nendpoint answers: exec to the first answer of GET /healthz; MCP initialize: exec to the server's initialize result on the bridge's stdout (sent at exec, so it includes spawning the server); idle RSS: the bridge process's VmRSS, its server excluded.")
	return nil
}

type startupMode struct {
	name  string
	args  func(state string) []string
	stdio bool // the bridge wraps a stdio server: initialize goes through stdin
}

type startupResult struct {
	ready, mcp time.Duration
	rssKB      float64
}

var endpointLine = regexp.MustCompile(`AEP endpoint on http://([^\s/]+)`)

// start runs one bridge, times it and reads its idle RSS, then stops it.
func (m startupMode) start(ctx context.Context, bin string, idle time.Duration) (startupResult, error) {
	state, err := os.MkdirTemp("", "aep-startup")
	if err != nil {
		return startupResult{}, err
	}
	defer os.RemoveAll(state)
	if err := os.Chmod(state, 0o700); err != nil {
		return startupResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, m.args(filepath.Join(state, "s"))...)
	cmd.Env = append(os.Environ(), "AEP_TOKEN=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return startupResult{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return startupResult{}, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return startupResult{}, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return startupResult{}, err
	}
	defer func() {
		stdin.Close()
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	var res startupResult
	initialized := make(chan time.Duration, 1)
	if m.stdio {
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`+"\n")
		go func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if strings.Contains(sc.Text(), `"id":1`) && strings.Contains(sc.Text(), `"result"`) {
					initialized <- time.Since(t0)
					break
				}
			}
			io.Copy(io.Discard, stdout)
		}()
	} else {
		go io.Copy(io.Discard, stdout)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if mm := endpointLine.FindStringSubmatch(sc.Text()); mm != nil && !sent {
				addr <- mm[1]
				sent = true
			}
		}
	}()
	var a string
	select {
	case a = <-addr:
	case <-ctx.Done():
		return res, errors.New("the bridge never said where its endpoint is")
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+a+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			res.ready = time.Since(t0)
			break
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("the endpoint at %s never answered: %w", a, err)
		}
	}
	if m.stdio {
		select {
		case res.mcp = <-initialized:
		case <-ctx.Done():
			return res, errors.New("no initialize result through the bridge")
		}
	}
	time.Sleep(idle) // a benchmark's idle period, not a synchronisation
	res.rssKB = rssKB(cmd.Process.Pid)
	return res, nil
}

// spread is a median and range of durations in milliseconds.
func spread(d []time.Duration) string {
	s := append([]time.Duration(nil), d...)
	sortDurations(s)
	ms := func(x time.Duration) string { return fmt.Sprintf("%.0f", float64(x.Microseconds())/1000) }
	return fmt.Sprintf("%s (%s-%s)", ms(s[len(s)/2]), ms(s[0]), ms(s[len(s)-1]))
}

func minFloat(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxFloat(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
