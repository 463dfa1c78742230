package main

import (
	"context"
	"errors"
	"flag"
	"path/filepath"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
)

// Where the operators and clients subcommands keep the records: the
// state folder's identity document (identity/store), or, with --nats,
// the operator plane on NATS JetStream (natsplane.IdentityStore), which
// every front door of a fleet follows.

// planeRecordsWait bounds a subcommand's work on the plane: connecting,
// reading, and writing the records.
const planeRecordsWait = 30 * time.Second

// storeFlags are the flags that say where the records are.
type storeFlags struct {
	state, token string
	nats         natsFlags
	// rebuild starts the plane's records afresh when the document on
	// the plane was put back by someone else (natsplane.ErrPutBack).
	rebuild bool
}

// defineStore registers --state-dir (of whose: "the bridges", "the
// gateways"), --token and the --nats flags.
func defineStore(fs *flag.FlagSet, whose string) *storeFlags {
	f := &storeFlags{}
	fs.StringVar(&f.state, "state-dir", "", "the state folder of "+whose+"; default the bridge's")
	fs.StringVar(&f.token, "token", "", "with --nats: the fleet's token, which seals the records on the plane (default: AEP_TOKEN, else the token the local bridge stored)")
	fs.BoolVar(&f.rebuild, "rebuild-identities", false, "with --nats: when the records on the plane were put back by someone holding the cluster's credentials (a revocation undone), apply this change to an empty document instead: every other operator and client must then be added again")
	f.nats.defineWith(fs, "keep the records on the operator plane on the NATS JetStream cluster at these URLs (comma-separated), as the fleet's --nats and --nats-prefix: every front door follows them; default: the state folder")
	return f
}

// recordStore is where the records are.
type recordStore struct {
	// where names it in messages: the document's path, or the plane.
	where string
	// file is the document's path; "" on the plane.
	file  string
	plane *natsplane.IdentityStore
}

// open returns the store the flags name. Close it.
func (f *storeFlags) open(ctx context.Context) (*recordStore, error) {
	o, err := f.nats.options()
	if err != nil {
		return nil, err
	}
	if o == nil {
		if f.token != "" {
			return nil, errors.New("--token goes with --nats: the records in the state folder are not sealed with a token")
		}
		if f.rebuild {
			return nil, errors.New("--rebuild-identities goes with --nats: only the records on the operator plane can be put back by others")
		}
		path, err := identitiesPath(f.state)
		if err != nil {
			return nil, err
		}
		return &recordStore{where: path, file: path}, nil
	}
	if o.Token, err = clientToken(f.token, f.state); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, planeRecordsWait)
	defer cancel()
	s, err := natsplane.OpenIdentities(ctx, *o)
	if err != nil {
		return nil, err
	}
	s.Rebuild = f.rebuild
	return &recordStore{where: s.Where(), plane: s}, nil
}

// Close releases the store.
func (r *recordStore) Close() {
	if r.plane != nil {
		r.plane.Close()
	}
}

// update changes the document: reads it, calls change, writes the result
// unless change failed.
func (r *recordStore) update(ctx context.Context, change func(*identity.Document) error) error {
	if r.plane == nil {
		return store.Update(r.file, change)
	}
	ctx, cancel := context.WithTimeout(ctx, planeRecordsWait)
	defer cancel()
	return r.plane.Update(ctx, change)
}

// load reads the document, and when each record was last used.
func (r *recordStore) load(ctx context.Context) (*identity.Document, store.Seen, error) {
	if r.plane == nil {
		d, err := store.Load(r.file)
		if err != nil {
			return nil, nil, err
		}
		return d, store.LoadSeen(filepath.Dir(r.file)), nil
	}
	ctx, cancel := context.WithTimeout(ctx, planeRecordsWait)
	defer cancel()
	d, err := r.plane.Load(ctx)
	if err != nil {
		return nil, nil, err
	}
	seen, err := r.plane.Seen(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	return d, seen, nil
}
