package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

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
// 256-bit token stored with mode 0600 on first use. where says its origin.
func loadToken(flagToken, dir string) (token, where string, err error) {
	return loadNamedToken(tokenSource{flag: flagToken, flagName: "--token", env: "AEP_TOKEN", file: "token"}, dir)
}

// tokenSource says where a token comes from: a flag's value, then an
// environment variable, then a file in the state folder.
type tokenSource struct{ flag, flagName, env, file string }

// loadNamedToken is loadToken for any token: the AEP token, or the MCP
// gateway's client token beside it.
func loadNamedToken(src tokenSource, dir string) (token, where string, err error) {
	if src.flag != "" {
		return src.flag, src.flagName, nil
	}
	if t := os.Getenv(src.env); t != "" {
		return t, src.env, nil
	}
	path := filepath.Join(dir, src.file)
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, path, nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("creating the state folder %s: %w; pass --state-dir or %s", dir, err, src.flagName)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", "", fmt.Errorf("generating a token: %w", err)
	}
	t := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // another bridge won the race
			b, rerr := os.ReadFile(path)
			if rerr == nil && strings.TrimSpace(string(b)) != "" {
				return strings.TrimSpace(string(b)), path, nil
			}
		}
		return "", "", fmt.Errorf("storing the token at %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(t + "\n"); err != nil {
		return "", "", fmt.Errorf("storing the token at %s: %w", path, err)
	}
	return t, path, nil
}
