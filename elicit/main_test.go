package elicit

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: every
// goroutine the proxy starts must stop through its context and Wait.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
