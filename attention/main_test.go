package attention

import (
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// TestMain fails the package when a test leaves a goroutine running: a
// question's timer callback that outlives its Manager would be one.
func TestMain(m *testing.M) { testenv.Main(m) }
