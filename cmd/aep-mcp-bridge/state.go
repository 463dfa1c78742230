package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MinTokenLength is the shortest token the bridge accepts from --token,
// AEP_TOKEN or a token file without --insecure-token. A generated token is
// 64 hex characters (256 bits).
const MinTokenLength = 32

// stateDir resolves --state-dir's default.
func stateDir(flagValue string) (string, error) {
	if flagValue != "" {
		return expandHome(flagValue)
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "aep-mcp-bridge"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a state folder: %w; pass --state-dir", err)
	}
	return filepath.Join(home, ".local", "state", "aep-mcp-bridge"), nil
}

// loadToken returns the configured token, or the stored one, generating a
// 256-bit token stored with mode 0600 in a 0700 folder on first use. A
// token shorter than MinTokenLength is refused unless insecure is set, and
// a token file that group or others could read or replace is refused with
// the chmod that fixes it.
func loadToken(flagToken, dir string, insecure bool) (token, where string, err error) {
	return loadNamedToken(tokenSource{flag: flagToken, flagName: "--token", env: "AEP_TOKEN", file: "token"}, dir, insecure)
}

// tokenSource says where a token comes from: a flag's value, then an
// environment variable, then a file in the state folder.
type tokenSource struct{ flag, flagName, env, file string }

// loadNamedToken is loadToken for any token: the AEP token, or the MCP
// gateway's client token beside it.
func loadNamedToken(src tokenSource, dir string, insecure bool) (token, where string, err error) {
	if src.flag != "" {
		return checkLength(src.flag, src.flagName, insecure)
	}
	if t := os.Getenv(src.env); t != "" {
		return checkLength(t, src.env, insecure)
	}
	t, path, err := readTokenFile(dir, src.file)
	switch {
	case err != nil:
		return "", "", err
	case t != "":
		return checkLength(t, path, insecure)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("creating the state folder %s: %w; pass --state-dir or %s", dir, err, src.flagName)
	}
	if err := checkFolder(dir); err != nil {
		return "", "", err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", "", fmt.Errorf("generating a token: %w", err)
	}
	t = hex.EncodeToString(raw)
	// The token is written whole to a file of its own, then linked into
	// place: a bridge starting at the same moment either links first or
	// finds the whole token there, never an empty file.
	stored := func(err error) error {
		return fmt.Errorf("storing the token at %s: %w; check that folder is yours and writable, or pass --state-dir or %s", path, err, src.flagName)
	}
	f, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return "", "", stored(err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(t + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", "", stored(err)
	}
	if err := os.Link(f.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) { // another bridge won the race
			if t, _, rerr := readTokenFile(dir, src.file); rerr == nil && t != "" {
				return t, path, nil
			}
		}
		return "", "", stored(err)
	}
	return t, path, nil
}

// checkLength refuses a short token unless insecure is set.
func checkLength(t, where string, insecure bool) (string, string, error) {
	if n := len(t); n < MinTokenLength && !insecure {
		return "", "", fmt.Errorf("the token from %s has %d characters; a token needs at least %d (a generated one has 64): "+
			"leave --token and AEP_TOKEN unset to use the generated token, set a longer one, or pass --insecure-token to accept a weak one",
			where, n, MinTokenLength)
	}
	return t, where, nil
}

// readTokenFile reads dir/name. A missing or empty file is ("", path, nil);
// a file that group or others could read, or that sits in a folder they
// could write, is an error that gives the chmod that fixes it.
func readTokenFile(dir, name string) (token, path string, err error) {
	path = filepath.Join(dir, name)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", path, nil
	}
	if err != nil {
		return "", path, fmt.Errorf("reading the token file: %w", err)
	}
	if err := checkFolder(dir); err != nil {
		return "", path, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", path, fmt.Errorf("the token file %s has mode %04o, so other users can read it: run chmod 600 %s (and consider the token leaked: delete the file to have a new one generated)",
			path, perm, shellQuote(path))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", path, fmt.Errorf("reading the token file: %w", err)
	}
	return strings.TrimSpace(string(b)), path, nil
}

// checkFolder refuses a state folder that group or others can write, where
// another user could replace the token file.
func checkFolder(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("checking the state folder: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("the state folder %s has mode %04o, so other users can replace the token in it: run chmod 700 %s, or pass --state-dir with a private folder",
			dir, perm, shellQuote(dir))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
