package bridge

import (
	"bufio"
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

// logWriter is that subprocess: it writes large events to a session log
// in dir, saying "wrote N" after each, until it is killed.
func logWriter(dir string) int {
	l, err := bus.OpenLog(dir, "writer", "s1")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The lines are built first, so the kill lands in a write, not in
	// encoding the next event.
	phase := strings.Repeat("p", 4<<20)
	var lines [][]byte
	var events []aep.Event
	for i := range 4 {
		data, _ := json.Marshal(map[string]string{"phase": phase})
		ev := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: "progress.status", Time: aep.FormatTime(time.Now()),
			Source: "aep://h/agent/writer/session/s1", Agent: "writer", Session: "s1", Seq: aep.Int64(int64(i)), Epoch: aep.Int64(0),
			Capture: aep.CaptureMetadata, Data: data}
		raw, err := json.Marshal(ev)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		lines, events = append(lines, raw), append(events, ev)
	}
	for i := range lines {
		if err := l.Write(events[i], lines[i]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("wrote %d\n", i+1)
	}
	return 0
}

// TestKilledMidWriteReadersSkipTheTornTail kills a process writing 4 MB
// events with SIGKILL, a bounded number of times, and reads each log the
// way every reader does: each whole line is an event that is read, and a
// torn last line is skipped with a warning that names the file and line.
func TestKilledMidWriteReadersSkipTheTornTail(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	torn := 0
	const runs = 6
	for run := range runs {
		dir := t.TempDir()
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), logWriterEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for i := 0; i <= run%3 && sc.Scan(); i++ {
		}
		cmd.Process.Kill() // SIGKILL, while the next event is being written
		io.Copy(io.Discard, out)
		cmd.Wait()

		path := filepath.Join(dir, "writer", "s1.jsonl")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		whole := bytes.Count(raw, []byte("\n"))
		tail := len(raw) > 0 && raw[len(raw)-1] != '\n'
		if tail {
			torn++
		}
		rep, err := logcheck.File(path)
		if err != nil {
			t.Fatalf("run %d: logcheck: %v", run, err)
		}
		if rep.Events != whole {
			t.Errorf("run %d: logcheck read %d events; the log has %d whole lines", run, rep.Events, whole)
		}
		wantSkip := fmt.Sprintf("%s:%d: skipped a torn last line", path, whole+1)
		if tail && (len(rep.Skipped) != 1 || !strings.HasPrefix(rep.Skipped[0], wantSkip)) {
			t.Errorf("run %d: logcheck skipped %q; want one line starting %q", run, rep.Skipped, wantSkip)
		}
		if !tail && len(rep.Skipped) != 0 {
			t.Errorf("run %d: logcheck skipped %q in a log with no torn line", run, rep.Skipped)
		}
		var warnings []string
		if _, err := script.FromLogs(map[string]io.Reader{path: bytes.NewReader(raw)}, []string{path}, func(w string) { warnings = append(warnings, w) }); err != nil {
			t.Fatalf("run %d: answers-from: %v", run, err)
		}
		if tail != (len(warnings) == 1 && strings.HasPrefix(warnings[0], wantSkip)) || len(warnings) > 1 {
			t.Errorf("run %d (torn tail: %v): answers-from warned %q", run, tail, warnings)
		}
	}
	t.Logf("%d of %d kills left a torn last line", torn, runs)
}
