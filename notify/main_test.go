package notify

import (
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// TestMain fails the package when a test leaves a goroutine running: a
// sender or reader that outlives its Notifier would be one.
func TestMain(m *testing.M) { testenv.Main(m) }
