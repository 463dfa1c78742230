package endpoint

import (
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testnats"
)

// TestMain fails the package when a test leaves a goroutine running; the
// NATS cluster the tests on the JetStream plane share stops before that
// is looked for.
func TestMain(m *testing.M) { testenv.MainThen(m, testnats.Stop) }
