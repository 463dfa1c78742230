package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// selfCommand is how the user runs this program again from a shell, as
// the demo prints it, in any folder of another terminal: its name when
// PATH finds this very file under that name, else its path; for a `go
// run` build, go -C with the module that holds this source.
func selfCommand(self string) string {
	_, src, _, _ := runtime.Caller(0)
	return commandFor(self, filepath.Dir(src), exec.LookPath)
}

// commandFor is selfCommand with its inputs given: self is the
// executable, pkgDir this package's source folder as compiled in,
// lookPath exec.LookPath.
func commandFor(self, pkgDir string, lookPath func(string) (string, error)) string {
	if strings.Contains(self, "go-build") { // go run's temporary build
		root := ""
		if filepath.IsAbs(pkgDir) { // not built with -trimpath
			root = moduleRoot(pkgDir)
		}
		if root == "" {
			return "go run ./cmd/aep-mcp-bridge"
		}
		rel, err := filepath.Rel(root, pkgDir)
		if err != nil {
			return "go run ./cmd/aep-mcp-bridge"
		}
		return "go -C " + shellQuote(root) + " run ./" + filepath.ToSlash(rel)
	}
	name := filepath.Base(self)
	if p, err := lookPath(name); err == nil && sameFile(p, self) {
		return name
	}
	return shellQuote(self)
}

// moduleRoot returns the folder holding the go.mod above dir, or "".
func moduleRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// sameFile reports whether paths a and b name the same file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
