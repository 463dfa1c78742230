package docs

import (
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
