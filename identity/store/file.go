package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// Names of the files in the state folder.
const (
	// FileName is the identity document.
	FileName = "identities.json"
	// SeenName records when each record was last used.
	SeenName = "identities-seen.json"
	// lockName is the advisory lock that serializes changes.
	lockName = "identities.lock"
)

// Path is the identity document's path in the state folder dir.
func Path(dir string) string { return filepath.Join(dir, FileName) }

// Load reads the document at path. A missing file is the empty document.
// A file that group or others could read, or in a folder they could
// write, is refused with the chmod that fixes it.
func Load(path string) (*identity.Document, error) {
	data, err := read(path)
	if err != nil {
		return &identity.Document{}, err
	}
	return decode(path, data)
}

// decode decodes the file at path, which read returned as data: nil is
// the empty document.
func decode(path string, data []byte) (*identity.Document, error) {
	if data == nil {
		return &identity.Document{}, nil
	}
	d, err := identity.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("the identities file %s: %w; fix it or restore it (aep-mcp-bridge operators list reads it)", path, err)
	}
	return d, nil
}

// read reads the file at path, nil when it does not exist, after
// checking its mode and its folder's.
func read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the identities file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the identities file: %w", err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("the identities file %s is not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("the identities file %s has mode %04o, so other users can read it: run chmod 600 %s",
			path, fi.Mode().Perm(), shellQuote(path))
	}
	if err := checkFolder(filepath.Dir(path)); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, identity.MaxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("reading the identities file: %w", err)
	}
	return data, nil
}

// checkFolder refuses a folder that group or others can write, where
// another user could put a document of their own.
func checkFolder(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("checking the state folder: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("the state folder %s has mode %04o, so other users can replace the identities in it: run chmod 700 %s, or pass --state-dir with a private folder",
			dir, perm, shellQuote(dir))
	}
	return nil
}

// Update changes the document at path: under the lock, it loads the
// document, calls change, and writes the result atomically when change
// returns nil. The folder is created (0700) if it does not exist. A
// change that fails leaves the file as it was.
func Update(path string, change func(*identity.Document) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the state folder %s: %w; pass --state-dir", dir, err)
	}
	if err := checkFolder(dir); err != nil {
		return err
	}
	unlock, err := lock(filepath.Join(dir, lockName))
	if err != nil {
		return err
	}
	defer unlock()
	d, err := Load(path)
	if err != nil {
		return err
	}
	if err := change(d); err != nil {
		return err
	}
	return writeAtomic(path, d.Encode())
}

// writeAtomic replaces path with data: a 0600 temporary file in the same
// folder, synced, renamed over path, and the folder synced, so the file is
// the old one or the new one whole, even across a crash.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // a folder that cannot be synced (some file systems) still has the rename
		d.Close()
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
