package main

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
	"github.com/agenteventprotocol/aep-mcp-bridge/policy/policyfile"
)

// hangup is what SIGHUP does. With a policy file in force it reloads the
// file (the habit of daemons); without one it ends the bridge, as the
// terminal going away always did. mainCode routes the signal here.
var hangup atomic.Pointer[func()]

// loadPolicy reads --policy FILE: a bridge whose policy does not load does
// not start, and the error says what to fix.
func loadPolicy(path string, log *slog.Logger) (*policy.Reloader, error) {
	rel, err := policyfile.Load(path)
	if err != nil {
		return nil, err
	}
	p := rel.Policy()
	log.Info("approval policy loaded", "file", path, "revision", p.Revision(), "rules", p.Len(), "default", p.Default().String())
	return rel, nil
}

// watchPolicy keeps the policy in step with its file until ctx ends: on
// every change and on SIGHUP. A file that does not load leaves the last
// good policy in force, and the log says why. It returns a function that
// stops the watching and waits for it.
func watchPolicy(ctx context.Context, path string, rel *policy.Reloader, log *slog.Logger) (func(), error) {
	w, err := policyfile.NewWatcher(policyfile.Options{Path: path, Reloader: rel,
		OnLoad: func(p *policy.Policy) {
			log.Info("approval policy reloaded", "file", path, "revision", p.Revision(), "rules", p.Len())
		},
		OnError: func(err error) {
			log.Error("approval policy not reloaded; the last good policy stays in force", "err", err)
		}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.Run(ctx)
	}()
	reload := func() {
		log.Info("SIGHUP: reloading the approval policy", "file", path)
		w.Check()
	}
	hangup.Store(&reload)
	return func() {
		hangup.Store(nil)
		cancel()
		wg.Wait()
	}, nil
}
