package elicit

import (
	"encoding/json"
	"sync"

	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

// maxToolEvents bounds the tool.* events waiting for the emitter. The
// producer that fills the queue emits what it holds before it goes on:
// the bound applies back pressure, it never drops an event.
const maxToolEvents = 1024

// toolEvent is a tool.* event emitted off the call's path. Its data is
// built where it is emitted: tool.requested's (the digest and the
// captured arguments) from args and digest, the others' from data.
type toolEvent struct {
	typ string
	tc  *toolCall
	// args are tool.requested's arguments, owned by the event (never a
	// slice of a frame the reader reuses); digest is their args_digest
	// when the call's path already computed it, "" to compute it here.
	args   json.RawMessage
	digest string
	data   any
}

// toolEvents holds the tool.* events of allowed calls until the reader
// that queued them has forwarded its message and has nothing more to
// read at once (readLoop calls flushTools then): an allowed call's round
// trip never waits on encoding, capture gating or the session log's
// write, and no goroutine is woken per call. Events are emitted in the
// order they were queued, so a call's tool.requested precedes its end,
// and every event the proxy itself emits at once (a question it raises,
// a held or denied call's tool.requested, a tool.denied, a refused
// schema) flushes the queue first, so it follows what came before it.
// Outside Run (before the readers start, after Run returned) they are
// emitted at once, after every queued one.
type toolEvents struct {
	// mu guards q and running; emitting orders the flushes, so a batch
	// taken later is never emitted before one taken earlier.
	mu        sync.Mutex
	q         []toolEvent
	running   bool
	emitting  sync.Mutex
	emitBatch []toolEvent // the flush's reused batch, under emitting
}

// queueTool queues ev for the next flush while Run runs, and emits it
// now (after what is queued) otherwise, or when the queue is full.
func (p *Proxy) queueTool(ev toolEvent) {
	t := &p.toolEv
	t.mu.Lock()
	if !t.running {
		t.mu.Unlock()
		p.flushTools(&ev)
		return
	}
	t.q = append(t.q, ev)
	full := len(t.q) >= maxToolEvents
	t.mu.Unlock()
	if full {
		p.flushTools(nil)
	}
}

// runTools says whether Run runs: while it does, queueTool queues.
func (p *Proxy) runTools(on bool) {
	t := &p.toolEv
	t.mu.Lock()
	t.running = on
	t.mu.Unlock()
}

// flushTools emits every queued tool.* event, in order, then last (when
// not nil). Flushes take turns: one waits for another to finish, so
// their batches reach the emitter in the order they were queued.
func (p *Proxy) flushTools(last *toolEvent) {
	t := &p.toolEv
	t.emitting.Lock()
	defer t.emitting.Unlock()
	for {
		t.mu.Lock()
		batch := append(t.emitBatch[:0], t.q...)
		clear(t.q)
		t.q = t.q[:0]
		t.mu.Unlock()
		if len(batch) == 0 {
			break
		}
		for i := range batch {
			p.emitToolEvent(batch[i])
			batch[i] = toolEvent{}
		}
		t.emitBatch = batch[:0]
	}
	if last != nil {
		p.emitToolEvent(*last)
	}
}

// pendingTools says whether tool.* events wait for a flush.
func (p *Proxy) pendingTools() bool {
	t := &p.toolEv
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.q) > 0
}

// emitToolEvent builds ev's data and emits it; a tool.requested records
// its id on the call, the cause of the call's later events.
func (p *Proxy) emitToolEvent(ev toolEvent) {
	if p.pub == nil {
		return
	}
	tc := ev.tc
	if ev.typ == "tool.requested" {
		digest := ev.digest
		if digest == "" {
			digest = policy.ArgsDigest(ev.args)
		}
		tc.requested = p.emitTool(ev.typ, tc, "", p.toolRequested(tc, digest, ev.args))
		return
	}
	p.emitTool(ev.typ, tc, tc.requested, ev.data)
}
