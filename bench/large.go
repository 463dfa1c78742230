package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// runLarge times a tools/call whose result is size bytes, from the mcp-go
// server through the raw pump and through the bridge, in paired rounds,
// with the peak RSS of the middle process above its RSS when idle.
func runLarge(serverBin, self, bridgeBin, logs string, size, rounds int) error {
	configs := []struct {
		name string
		argv []string
	}{
		{"raw pump", []string{self, "pump", serverBin}},
		{"bridge", []string{bridgeBin, "--listen", "off", "--log-dir", logs, "--log-level", "error", "--", serverBin}},
	}
	times, cpus := map[string][]time.Duration{}, map[string][]time.Duration{}
	rss := map[string]int64{}
	var ratios []float64
	for r := 0; r < rounds; r++ {
		var round [2]time.Duration
		for i, c := range configs {
			d, cpu, grew, err := largeCall(c.argv, size)
			if err != nil {
				return fmt.Errorf("%s, a %d-byte result: %w", c.name, size, err)
			}
			round[i] = d
			times[c.name] = append(times[c.name], d)
			cpus[c.name] = append(cpus[c.name], cpu)
			rss[c.name] = max(rss[c.name], grew)
		}
		ratios = append(ratios, float64(round[1])/float64(round[0]))
	}
	fmt.Printf("\ntools/call with a %d-byte result (mcp-go server, raw JSON-RPC client), %d paired rounds\n\n", size, rounds)
	fmt.Println("| path | time ms (median) | vs raw pump (median of paired ratios) | CPU ms of the middle process (median) | peak RSS above idle, MB (largest round) |")
	fmt.Println("|---|---|---|---|---|")
	for _, c := range configs {
		vs := "—"
		if c.name == "bridge" {
			vs = fmt.Sprintf("%.2f×", medianFloat(ratios))
		}
		fmt.Printf("| %s | %.1f | %s | %.1f | %.1f |\n", c.name, float64(median(times[c.name]).Microseconds())/1000, vs,
			float64(median(cpus[c.name]).Microseconds())/1000, float64(rss[c.name])/(1<<20))
	}
	return nil
}

func medianFloat(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// largeCall spawns argv as the MCP server, initializes it with raw
// JSON-RPC lines, and times one blob call of size bytes from its request
// to the last byte of its response; it also returns the CPU time the
// process spent on the call and how far its peak RSS rose above its RSS
// once initialized.
func largeCall(argv []string, size int) (time.Duration, time.Duration, int64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, 0, 0, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, err
	}
	defer func() { in.Close(); cmd.Wait() }()
	out := bufio.NewReaderSize(outPipe, 1<<20)
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`+"\n")
	if _, err := readResponse(out); err != nil {
		return 0, 0, 0, fmt.Errorf("initialize: %w", err)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	idle, err := procStatus(cmd.Process.Pid, "VmRSS")
	if err != nil {
		return 0, 0, 0, err
	}
	before, err := readSchedStat(cmd.Process.Pid)
	if err != nil {
		return 0, 0, 0, err
	}
	t0 := time.Now()
	fmt.Fprintf(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"blob","arguments":{"bytes":%d}}}`+"\n", size)
	n, err := readResponse(out)
	d := time.Since(t0)
	if err != nil {
		return 0, 0, 0, err
	}
	if n < size {
		return 0, 0, 0, fmt.Errorf("the response has %d bytes; want more than %d", n, size)
	}
	after, err := readSchedStat(cmd.Process.Pid)
	if err != nil {
		return 0, 0, 0, err
	}
	peak, err := procStatus(cmd.Process.Pid, "VmHWM")
	return d, after.run - before.run, peak - idle, err
}

// readResponse reads one line and returns its length.
func readResponse(r *bufio.Reader) (int, error) {
	n := 0
	for {
		frag, err := r.ReadSlice('\n')
		n += len(frag)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return n, err
		}
	}
}

// procStatus reads a kB field of /proc/PID/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := strings.CutPrefix(string(line), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
