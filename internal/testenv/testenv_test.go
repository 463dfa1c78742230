package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// childEnv makes this test binary the child of TestMainRemovesTheRoot.
const childEnv = "AEP_TESTENV_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		Main(m)
		return
	}
	// The shape of a package's TestMain: a folder made before Main, and
	// a deferred call that must run after it.
	root, err := TempRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	peers, err := os.MkdirTemp("", "peers")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("root=%s\npeers=%s\n", root, peers)
	defer fmt.Println("deferred=ran")
	Main(m)
}

// TestMainRemovesTheRoot runs this binary as a child whose TestMain
// makes a folder before Main and whose test (this one, in the child)
// leaves a temporary file, and checks that all of it was inside the
// child's root, that the root is gone once the child exits, and that the
// child's deferred call ran.
func TestMainRemovesTheRoot(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		// The child: write where tests write temporary files, and say where.
		f, err := os.CreateTemp("", "left-behind")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		fmt.Printf("file=%s\ntempdir=%s\n", f.Name(), t.TempDir())
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestMainRemovesTheRoot$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child failed: %v\n%s", err, out)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			got[k] = v
		}
	}
	root := got["root"]
	if root == "" || !strings.HasPrefix(filepath.Base(root), "aep-testenv-test") {
		t.Fatalf("got root %q; want a folder named aep-testenv-test…; the child said:\n%s", root, out)
	}
	for _, k := range []string{"peers", "file", "tempdir"} {
		if !strings.HasPrefix(got[k], root+string(filepath.Separator)) {
			t.Errorf("got %s %q; want it inside the root %q", k, got[k], root)
		}
	}
	if got["deferred"] != "ran" {
		t.Errorf("the child's deferred call did not run; it said:\n%s", out)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the root %s is still there after the child exited (stat: %v)", root, err)
	}
}
