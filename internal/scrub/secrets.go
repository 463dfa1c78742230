package scrub

import (
	"os"
	"slices"
	"strings"
	"sync"
)

// credentials are the environment variables that hold the bridge's own
// secrets: its AEP token, its MCP gateway's client token, and the secret
// that signs its json notifications.
var credentials = []string{"AEP_TOKEN", "AEP_MCP_TOKEN", "AEP_NOTIFY_SECRET"}

// Credentials returns the environment variables that hold the bridge's
// own secrets (AEP_TOKEN, AEP_MCP_TOKEN, AEP_NOTIFY_SECRET): the one list
// of them. ChildEnv always withholds them.
func Credentials() []string { return slices.Clone(credentials) }

// secret is the set of environment variables this process read a secret
// from: Credentials, and the names Hide is given. ChildEnv leaves them
// out of every environment a child is given. The environment is the
// process's, so the set is too.
var secret = struct {
	mu    sync.Mutex
	names []string
}{names: Credentials()}

// remember adds names to the set.
func remember(names []string) {
	secret.mu.Lock()
	defer secret.mu.Unlock()
	for _, n := range names {
		if n != "" && !slices.Contains(secret.names, n) {
			secret.names = append(secret.names, n)
		}
	}
}

// Secrets returns the names of the environment variables ChildEnv
// withholds: Credentials, then those Hide was given, in that order.
func Secrets() []string {
	secret.mu.Lock()
	defer secret.mu.Unlock()
	return slices.Clone(secret.names)
}

// ChildEnv returns env, or this process's environment when env is nil,
// without Credentials, every variable Hide was given, and the variables
// named in also: the environment for a process this one spawns, which
// must not inherit the secrets this one read.
func ChildEnv(env []string, also ...string) []string {
	if env == nil {
		env = os.Environ()
	}
	withheld := append(Secrets(), also...)
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(withheld, name) {
			out = append(out, kv)
		}
	}
	return out
}
