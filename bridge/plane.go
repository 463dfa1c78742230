package bridge

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity/store"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsplane"
	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// planeJoinWait bounds joining the operator plane on NATS: connecting,
// making its stream and buckets, and catching up with them.
const planeJoinWait = 30 * time.Second

// joinPlane makes the host a member of its operator plane: the plane of
// this process alone (plane.Local, the default), or the one on NATS
// JetStream that every bridge and gateway given the same --nats and
// --nats-prefix shares. The host's hub is the member's.
func (h *Host) joinPlane() error {
	if h.opts.NATS == nil {
		h.local = plane.NewLocal(bus.HubOptions{})
		h.plane = h.local.Join()
		h.hub = h.plane.Hub()
		return nil
	}
	if h.opts.Token == "" {
		return errors.New("the operator plane on NATS needs the fleet's bearer token, the same on every bridge and gateway: set AEP_TOKEN or pass --token")
	}
	key, err := proof.NewKey(rand.Reader)
	if err != nil {
		return err
	}
	o := *h.opts.NATS
	o.Token, o.Key, o.Agent, o.Instance = h.opts.Token, key, h.opts.Agent, h.opts.Instance
	if o.Logger == nil {
		o.Logger = h.log
	}
	ctx, cancel := context.WithTimeout(h.ctx, planeJoinWait)
	defer cancel()
	m, err := natsplane.Open(ctx, o)
	if err != nil {
		return fmt.Errorf("--nats: %w", err)
	}
	// The sessions' ids are certified to the member's key: the plane
	// believes their events, and routes their commands, by it.
	h.key, h.plane, h.hub = key, m, m.Hub()
	h.log.Info("joined the operator plane on NATS", "prefix", o.Prefix, "member", m.Fingerprint())
	return nil
}

// leavePlane leaves the operator plane after the sessions ended and
// their last events were queued: the member sends them, bounded by ctx.
func (h *Host) leavePlane(ctx context.Context) error {
	if h.local != nil {
		h.local.Close()
		return nil
	}
	if err := h.plane.Close(ctx); err != nil {
		return fmt.Errorf("leaving the operator plane: %w", err)
	}
	return nil
}

// fleet reports whether the host's plane is shared with other processes.
func (h *Host) fleet() bool { return h.local == nil }

// binding is the session's claim as the plane's roster shows it.
func (b *Bridge) binding(instance string) plane.Binding {
	return plane.Binding{Session: b.session, Source: b.em.Source(), Agent: b.opts.Agent, Instance: instance, Accepts: control.Accepts}
}

// planeTarget hands a command that a front door of the plane took to the
// session's control intake, as from the principal the door
// authenticated: the name the session records, and a read-only
// operator's command refused where everyone who sees the session can
// read why.
type planeTarget struct{ in *control.Intake }

func (t planeTarget) Submit(cmd aep.Event, _ []byte, by plane.Principal) plane.Outcome {
	res, err := t.in.Submit(cmd, control.Sender{Authenticated: true, By: by.Name, Groups: by.Groups, ReadOnly: !by.May(plane.RightAnswer)})
	var re *control.RefusalError
	if errors.As(err, &re) {
		return plane.Outcome{Code: re.Code, Detail: re.Detail}
	}
	return plane.Outcome{Ack: res.Raw, Duplicate: res.Duplicate}
}

// Plane returns the host's part in its operator plane.
func (h *Host) Plane() plane.Member { return h.plane }

// WatchIdentities returns what keeps the host's front door in step with
// its named operators and clients: on the operator plane on NATS, the
// plane's (every front door authenticates the same ones, and a change
// made on any machine reaches each at once); otherwise the identity
// document o.Path of the state folder, followed by a store.Watcher.
// o.Interval is the file's only.
func (h *Host) WatchIdentities(o store.Options) (store.Source, error) {
	m, ok := h.plane.(*natsplane.Member)
	if !ok {
		return store.NewWatcher(o)
	}
	if o.Path != "" {
		if d, err := store.Load(o.Path); err == nil && (len(d.Operators) > 0 || len(d.Clients) > 0) {
			h.log.Warn("the identities file holds named operators or clients that the operator plane on NATS does not use: "+
				"add them on the plane with operators add --nats (clients add --nats)", "file", o.Path,
				"operators", len(d.Operators), "clients", len(d.Clients))
		}
	}
	return m.Identities(natsplane.IdentityOptions{OnLoad: o.OnLoad, OnError: o.OnError}), nil
}

// notifyClaim is how the host's notifier knows that it sends a
// notification: on the operator plane on NATS, every front door sees
// every question, and the one whose claim the plane takes first sends
// each (natsplane.Member.ClaimNotification); in this process alone, it
// sends them all (nil).
func (h *Host) notifyClaim() func(string) bool {
	if m, ok := h.plane.(*natsplane.Member); ok {
		return m.ClaimNotification
	}
	return nil
}
