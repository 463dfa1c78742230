package clientconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// BackupSuffix names the copy of a config file WriteFile keeps.
const BackupSuffix = ".aep-mcp-bridge.bak"

// WriteFile keeps a backup of old in path+BackupSuffix and replaces the
// file at path with new atomically, with the file's own mode. A path that
// is a symbolic link (a dotfiles folder) stays one: its target is
// replaced.
func WriteFile(path string, old, new []byte) error {
	target := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		target = real // a linked config (a dotfiles folder) stays linked
	}
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.WriteFile(path+BackupSuffix, old, mode); err != nil {
		return fmt.Errorf("keeping a backup of %s: %w; nothing was changed", path, err)
	}
	os.Chmod(path+BackupSuffix, mode) // WriteFile keeps an existing file's mode
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w; nothing was changed", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(new)
	err = errors.Join(err, tmp.Chmod(mode), tmp.Sync(), tmp.Close())
	if err != nil {
		return fmt.Errorf("writing %s: %w; nothing was changed", path, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("replacing %s: %w; nothing was changed", path, err)
	}
	return nil
}
