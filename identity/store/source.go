package store

import (
	"context"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// Source keeps a running bridge or gateway in step with its named
// operators and clients, wherever they are kept: the state folder's file
// (Watcher), or the operator plane on NATS (natsplane.IdentitySource),
// which every front door of a fleet shares.
type Source interface {
	// Directory returns the directory in force.
	Directory() *identity.Directory
	// Used records that the record key (OperatorKey, ClientKey) was used
	// at at; it never blocks on storage.
	Used(key string, at time.Time)
	// Run hands each new directory put in force to the source's callback
	// until ctx is done.
	Run(ctx context.Context) error
}

var _ Source = (*Watcher)(nil)
