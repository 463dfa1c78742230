package relay

import (
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// TestMain fails the package when a test leaves a goroutine running.
func TestMain(m *testing.M) { testenv.Main(m) }
