//go:build !linux

package scrub

// Hide adds env to the variables ChildEnv withholds from children, and
// hides nothing else on this system: see the package documentation.
func Hide(env, flags []string) error {
	remember(env)
	return nil
}
