package relay

import (
	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
)

// maxKeptBytes bounds the events an outbox keeps past its count bound
// because they must never be dropped (bus.MustDeliver). Past it, the
// oldest of them goes too, and the drop is logged as an error: the bridge
// is the MCP client's server process and must not run out of memory while
// a relay is down. Pending questions are re-announced on reconnect
// whatever was dropped.
const maxKeptBytes = 64 << 20

// outbox is a link's queue of events waiting for the relay: bounded in
// count for events that may be dropped (debug and info telemetry), and in
// bytes for those that may not (a question's lifecycle, commands' acks,
// session boundaries, notice and above). The link's mutex guards it.
type outbox struct {
	max       int
	items     []outboxItem
	keptBytes int
}

type outboxItem struct {
	raw  []byte
	keep bool
}

// push queues raw. It returns what it dropped to make room (nil, or one
// event) and whether that event was one that must be delivered.
func (o *outbox) push(raw []byte, keep bool) (dropped []byte, wasKept bool) {
	o.items = append(o.items, outboxItem{raw: raw, keep: keep})
	if keep {
		o.keptBytes += len(raw)
	}
	if o.droppable() > o.max {
		return o.drop(false), false
	}
	if o.keptBytes > maxKeptBytes {
		return o.drop(true), true
	}
	return nil, false
}

// droppable counts the queued events that may be dropped.
func (o *outbox) droppable() int {
	n := 0
	for _, it := range o.items {
		if !it.keep {
			n++
		}
	}
	return n
}

// drop removes the oldest event whose keep flag is keep.
func (o *outbox) drop(keep bool) []byte {
	for i, it := range o.items {
		if it.keep == keep {
			o.items = append(o.items[:i:i], o.items[i+1:]...)
			if keep {
				o.keptBytes -= len(it.raw)
			}
			return it.raw
		}
	}
	return nil
}

// take empties the outbox and returns what it held, oldest first.
func (o *outbox) take() []outboxItem {
	items := o.items
	o.items, o.keptBytes = nil, 0
	return items
}

// requeue puts items that could not be sent back at the head, in order.
func (o *outbox) requeue(items []outboxItem) {
	for _, it := range items {
		if it.keep {
			o.keptBytes += len(it.raw)
		}
	}
	o.items = append(append([]outboxItem(nil), items...), o.items...)
}

// mustKeep reports whether ev may never be dropped from an outbox.
func mustKeep(ev *aep.Event) bool { return bus.MustDeliver(ev) }
