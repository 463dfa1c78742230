package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/logcheck"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/script"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh folder, for as long
// as the test runs. It needs root, which CI has.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root, to mount a small tmpfs", "run the test as root (CI does)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		testenv.Missing(t, "mounting a tmpfs ("+err.Error()+")", "run as root with CAP_SYS_ADMIN (CI does)")
	}
	t.Cleanup(func() {
		// MNT_DETACH: a parallel test that forks a child copies every open
		// descriptor, the log's too, until the child's exec closes them; a
		// plain unmount at that moment fails with EBUSY. Detached, the
		// tmpfs goes once the last such copy is closed.
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file in dir until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v; want ENOSPC", err)
			}
			return path
		}
	}
}

// TestFullDiskKeepsAnsweringAndRecordsTheGap: with the log's disk full,
// the bridge goes on answering questions; when space returns, the log
// records the gap with the exact count, no line is glued to another, and
// answers-from still works on the log.
func TestFullDiskKeepsAnsweringAndRecordsTheGap(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, 256<<10)
	s := startSession(t, sessionConfig{opts: Options{LogDir: dir,
		Answers: rules(t, `{"rules":[{"name":"r","outcome":"values","values":{"environment":"production","replicas":4,"confirm":true}}]}`)}})
	filler := fill(t, dir)
	// The log's last page has room left on a full disk: ask until the
	// log cannot write, then once more with nothing written at all.
	for asked := 0; s.b.jsonl.Lost() == 0 || asked < 2; asked++ {
		if asked > 40 {
			t.Fatal("40 questions on a full disk and the log lost nothing")
		}
		if s.b.jsonl.Lost() > 0 {
			asked = max(asked, 1)
		}
		res := s.call("ask", map[string]any{"schema": "pinned"}, nil)
		s.next("attention.resolved")
		if got := compactAny(elicitResult(t, s.result(res))); !strings.Contains(got, `"action":"accept"`) {
			t.Fatalf("with the disk full the server got %s; want the rule's accept", got)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	res := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	s.next("attention.resolved")
	s.result(res)
	if err := s.close(); err != nil {
		t.Fatalf("the session ended with %v", err)
	}

	raw, err := os.ReadFile(s.b.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		t.Error("the log does not end with a newline")
	}
	rep, err := logcheck.File(s.b.LogPath())
	if err != nil {
		t.Fatalf("the log after a full disk: %v", err)
	}
	if len(rep.Skipped) > 0 || len(rep.Gaps) != 1 {
		t.Fatalf("got %d skipped lines and %d gap records; want none skipped and one gap:\n%s", len(rep.Skipped), len(rep.Gaps), raw)
	}
	g := rep.Gaps[0]
	if g.FirstSeq == nil || g.LastSeq == nil || g.Lost != *g.LastSeq-*g.FirstSeq+1 || g.Lost < 3 || g.Error != syscall.ENOSPC.Error() {
		t.Fatalf("gap %+v; want at least the 3 events of a question, with their seq range and %q", g, syscall.ENOSPC.Error())
	}
	// Every seq is in the log or in the gap, once: nothing is lost
	// unrecorded, nothing twice.
	var seqs []int64
	for _, ev := range rep.Lines {
		if ev.Seq != nil {
			seqs = append(seqs, *ev.Seq)
		}
	}
	want := int64(0)
	for _, q := range seqs {
		if want == *g.FirstSeq {
			want = *g.LastSeq + 1
		}
		if q != want {
			t.Fatalf("seq %d in the log; want %d (the gap covers %d to %d)", q, want, *g.FirstSeq, *g.LastSeq)
		}
		want++
	}

	var warnings []string
	f, err := script.FromLogs(map[string]io.Reader{"log": bytes.NewReader(raw)}, []string{"log"}, func(w string) { warnings = append(warnings, w) })
	if err != nil {
		t.Fatalf("answers-from on the log: %v", err)
	}
	if len(f.Rules) < 1 || len(warnings) != 1 || !strings.Contains(warnings[0], fmt.Sprintf("%d event(s)", g.Lost)) {
		t.Fatalf("answers-from made %d rule(s), warned %q; want the rule of the question asked after the gap, and the gap", len(f.Rules), warnings)
	}
}

// logWriterEnv makes the test binary the kill-mid-write test's subprocess.
const logWriterEnv = "AEP_TEST_LOG_WRITER"

// logWriterEvents is how many events the subprocess writes, and
// logWriterPhase the size of the text in each: far more than a pipe
// holds (64 KiB), so a writer whose reader stops is held inside a write,
// and more than the line a Log keeps between writes.
const (
	logWriterEvents = 4
	logWriterPhase  = 1 << 20
)

// logWriter is that subprocess: it writes large events to a session log
// in dir until it is done or killed.
func logWriter(dir string) int {
	l, err := bus.OpenLog(dir, "writer", "s1")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	phase := strings.Repeat("p", logWriterPhase)
	for i := range logWriterEvents {
		data, _ := json.Marshal(map[string]string{"phase": phase})
		ev := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: "progress.status", Time: aep.FormatTime(time.Now()),
			Source: "aep://h/agent/writer/session/s1", Agent: "writer", Session: "s1", Seq: aep.Int64(int64(i)), Epoch: aep.Int64(0),
			Capture: aep.CaptureMetadata, Data: data}
		raw, err := json.Marshal(ev)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := l.Write(ev, raw); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// TestKilledMidWriteReadersSkipTheTornTail kills a process writing 1 MB
// events with SIGKILL inside a write, and reads each log the way every
// reader does: each whole line is an event that is read, and a torn last
// line is skipped with a warning that names the file and line.
//
// Where the kill lands is not left to chance: the writer's log file is a
// link to a pipe the test holds (/dev/fd/3 in the writer), and the test
// kills the writer once it has read `whole` lines and half of the next
// one, which the writer is still writing: a pipe holds far less than half
// an event. What the writer got out before it died is what a file would
// hold, and the readers read it from a file.
func TestKilledMidWriteReadersSkipTheTornTail(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// whole is how many lines the writer gets out whole before the kill;
	// with all of them, it ends by itself and nothing is torn.
	for _, whole := range []int{1, 2, 3, logWriterEvents} {
		dir := t.TempDir()
		path := filepath.Join(dir, "writer", "s1.jsonl")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/fd/3", path); err != nil {
			t.Fatal(err)
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), logWriterEnv+"="+dir)
		cmd.ExtraFiles = []*os.File{pw}
		cmd.Stderr = os.Stderr
		err = cmd.Start()
		pw.Close()
		if err != nil {
			pr.Close()
			t.Fatal(err)
		}
		// Read up to the kill: whole lines, and half of the next.
		var got []byte
		buf := make([]byte, 64<<10)
		torn := whole < logWriterEvents
		for {
			if i := nthIndex(got, '\n', whole); i >= 0 && (!torn || len(got)-(i+1) >= logWriterPhase/2) {
				break
			}
			n, err := pr.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				pr.Close()
				t.Fatalf("whole=%d: the writer's log ended after %d bytes (%v) before the kill", whole, len(got), err)
			}
		}
		cmd.Process.Kill() // SIGKILL, inside the write of the next event
		rest, err := io.ReadAll(pr)
		pr.Close()
		werr := cmd.Wait()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rest...)
		if torn && werr == nil {
			t.Fatalf("whole=%d: the writer ended by itself before the kill", whole)
		}

		// The log, as a file, is what the writer got out.
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o600); err != nil {
			t.Fatal(err)
		}
		if n, tail := bytes.Count(got, []byte("\n")), len(got) > 0 && got[len(got)-1] != '\n'; n != whole || tail != torn {
			t.Fatalf("whole=%d: the log has %d whole lines, torn tail %v; the case is wrong", whole, n, tail)
		}
		rep, err := logcheck.File(path)
		if err != nil {
			t.Fatalf("whole=%d: logcheck: %v", whole, err)
		}
		if rep.Events != whole {
			t.Errorf("whole=%d: logcheck read %d events", whole, rep.Events)
		}
		wantSkip := fmt.Sprintf("%s:%d: skipped a torn last line", path, whole+1)
		if torn && (len(rep.Skipped) != 1 || !strings.HasPrefix(rep.Skipped[0], wantSkip)) {
			t.Errorf("whole=%d: logcheck skipped %q; want one line starting %q", whole, rep.Skipped, wantSkip)
		}
		if !torn && len(rep.Skipped) != 0 {
			t.Errorf("whole=%d: logcheck skipped %q in a log with no torn line", whole, rep.Skipped)
		}
		var warnings []string
		if _, err := script.FromLogs(map[string]io.Reader{path: bytes.NewReader(got)}, []string{path}, func(w string) { warnings = append(warnings, w) }); err != nil {
			t.Fatalf("whole=%d: answers-from: %v", whole, err)
		}
		if torn != (len(warnings) == 1 && strings.HasPrefix(warnings[0], wantSkip)) || len(warnings) > 1 {
			t.Errorf("whole=%d (torn tail: %v): answers-from warned %q", whole, torn, warnings)
		}
	}
}

// nthIndex returns the index of the nth c in b, or -1.
func nthIndex(b []byte, c byte, n int) int {
	at := -1
	for range n {
		i := bytes.IndexByte(b[at+1:], c)
		if i < 0 {
			return -1
		}
		at += 1 + i
	}
	return at
}
