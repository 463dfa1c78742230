package scrub

import (
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// mainWithLeakCheck fails the package when a test leaves a goroutine
// running; TestMain runs it unless the binary is a helper process.
func mainWithLeakCheck(m *testing.M) { testenv.Main(m) }
