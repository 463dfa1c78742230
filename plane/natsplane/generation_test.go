package natsplane

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGenerationKeptBeforeTheStateFolderExists: a front door can take
// the plane's first document of identities before anything else made
// its state folder; the generation is kept all the same, and read back
// across a restart.
func TestGenerationKeptBeforeTheStateFolderExists(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "not-yet", ".nats-identities-ops.gen")
	if err := saveGeneration(path, 7); err != nil {
		t.Fatalf("keeping generation 7 in a folder not made yet: %v", err)
	}
	got, err := loadGeneration(path)
	if err != nil || got != 7 {
		t.Fatalf("read back %d, %v; want 7", got, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("the generation file is %v; want -rw------- (the owner's alone)", perm)
	}
	dir, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if perm := dir.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("the state folder made for it is %v; want it closed to others", perm)
	}
	if err := saveGeneration(path, 9); err != nil {
		t.Fatal(err)
	}
	if got, err := loadGeneration(path); err != nil || got != 9 {
		t.Fatalf("after replacing: %d, %v; want 9", got, err)
	}
}
