package plane_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLocalContract runs the plane's contract on the in-process plane:
// three front doors of one process share its state.
func TestLocalContract(t *testing.T) {
	t.Parallel()
	planetest.Run(t, func(t *testing.T, n int) []planetest.Door {
		l := plane.NewLocal(bus.HubOptions{})
		t.Cleanup(l.Close)
		doors := make([]planetest.Door, n)
		for i := range doors {
			doors[i] = planetest.Door{Member: l.Join(), SessionID: aep.NewID}
		}
		return doors
	})
}
