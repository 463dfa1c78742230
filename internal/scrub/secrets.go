package scrub

import (
	"os"
	"slices"
	"strings"
	"sync"
)

// secret is the set of environment variables this process read a secret
// from: Hide adds the names it is given, and ChildEnv leaves them out of
// every environment a child is given. The environment is the process's,
// so the set is too.
var secret struct {
	mu    sync.Mutex
	names []string
}

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

// Secrets returns the names of the environment variables Hide was given
// so far, in the order it was given them.
func Secrets() []string {
	secret.mu.Lock()
	defer secret.mu.Unlock()
	return slices.Clone(secret.names)
}

// ChildEnv returns env, or this process's environment when env is nil,
// without every variable Hide was given and without the variables named
// in also: the environment for a process this one spawns, which must not
// inherit the secrets this one read.
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
