package bridge

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/inbox"
	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testnats"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
)

// The inbox's core tests run on both operator planes: the bridge's own
// hub (the default, one process), and NATS JetStream, where the question
// is asked by a session on one host and the operator's inbox is served
// by another host of the same plane, each on another node of the test
// binary's shared three-node cluster. The page, the answer and the
// history all cross the plane.

// inboxPlanes are the planes the inbox's core tests run on.
var inboxPlanes = []string{"memory", "jetstream"}

// inboxToken is the inbox's token in these tests; on the JetStream plane
// it is the fleet's token too, as every host of a fleet shares it.
const inboxToken = "inbox-token"

// inboxSessionOn is inboxSession on the plane named p.
func inboxSessionOn(t *testing.T, p string) (*session, string, context.Context) {
	t.Helper()
	if p == "memory" {
		return inboxSession(t)
	}
	ctx := newBrowser(t)
	cl := testnats.Shared(t)
	prefix := testnats.Prefix()
	asker := fleetHost(t, cl.Node(2).URL(), prefix, HostOptions{})
	door := fleetHost(t, cl.Node(0).URL(), prefix, HostOptions{Listener: loopback(t), Root: inbox.Handler()})
	s := startSession(t, sessionConfig{host: asker})
	return s, "http://" + door.Addr() + "/#token=" + inboxToken, ctx
}

// fleetHost is a host on the operator plane prefix on the node at url,
// with o's other options, until the test ends.
func fleetHost(t *testing.T, url, prefix string, o HostOptions) *Host {
	t.Helper()
	o.Token = inboxToken
	o.NATS = &natsplane.Options{URLs: url, User: testnats.User, Password: testnats.Password, Prefix: prefix,
		Heartbeat: time.Second, StoreBytes: 16 << 20, Logger: testnats.Logger(t, slog.LevelWarn)}
	return newTestHost(t, o)
}

// onPlanes runs f once per inbox plane, as a subtest named after it.
func onPlanes(t *testing.T, f func(t *testing.T, p string)) {
	for _, p := range inboxPlanes {
		t.Run(p, func(t *testing.T) { f(t, p) })
	}
}
