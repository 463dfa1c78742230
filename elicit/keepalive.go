package elicit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// keepaliveLoop sends progress to in-flight client requests that carry a
// progressToken while any question is pending.
func (p *Proxy) keepaliveLoop(ctx context.Context) {
	defer p.wg.Done()
	t := time.NewTicker(p.keepalive)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.keepaliveTick()
		}
	}
}

func (p *Proxy) keepaliveTick() {
	n := p.open.Load()
	if n == 0 {
		return
	}
	msg := fmt.Sprintf("waiting for an answer to %d question(s) from a human operator", n)
	p.mu.Lock()
	var out [][]byte
	for _, k := range p.inflight.keys() {
		r, _ := p.inflight.get(k)
		if r.token == nil {
			continue
		}
		tk := idKey(r.token)
		v := p.progress[tk] + 1
		p.progress[tk] = v
		b, err := notification(mcp.MethodNotificationProgress, map[string]any{"progressToken": r.token, "progress": v, "message": msg})
		if err == nil {
			out = append(out, b)
		}
	}
	p.mu.Unlock()
	for _, b := range out {
		p.writeClient(b)
	}
}

// noteProgress keeps the high-water mark of a tracked request's token's
// progress, so keepalive progress always increases.
func (p *Proxy) noteProgress(m *message) {
	var params struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		Progress      float64         `json:"progress"`
	}
	if json.Unmarshal(m.Params, &params) != nil || len(params.ProgressToken) == 0 {
		return
	}
	k := idKey(params.ProgressToken)
	p.mu.Lock()
	// A token no tracked request carries is not kept: the server may
	// make up any number of them.
	if v, ok := p.progress[k]; ok && params.Progress > v {
		p.progress[k] = params.Progress
	}
	p.mu.Unlock()
}
