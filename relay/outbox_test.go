package relay

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOutboxDropsTelemetryKeepsLifecycle(t *testing.T) {
	o := outbox{max: 2}
	var dropped []string
	push := func(s string, keep bool) {
		if d, _ := o.push([]byte(s), keep); d != nil {
			dropped = append(dropped, string(d))
		}
	}
	push("info-1", false)
	push("requested", true)
	push("info-2", false)
	push("resolved", true)
	push("info-3", false) // the third droppable event: the oldest one goes
	push("ended", true)
	var held []string
	for _, it := range o.take() {
		held = append(held, string(it.raw))
	}
	if diff := cmp.Diff([]string{"requested", "info-2", "resolved", "info-3", "ended"}, held); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"info-1"}, dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
}

func TestOutboxBoundsKeptEventsInBytes(t *testing.T) {
	o := outbox{max: 1}
	big := strings.Repeat("x", maxKeptBytes/2+1)
	if d, _ := o.push([]byte("a"+big), true); d != nil {
		t.Fatal("the first kept event was dropped")
	}
	d, wasKept := o.push([]byte("b"+big), true)
	if d == nil || !wasKept || d[0] != 'a' {
		t.Fatalf("over the byte bound: dropped %.1q kept=%v; want the oldest kept event", d, wasKept)
	}
	if o.keptBytes != len(big)+1 {
		t.Fatalf("keptBytes %d; want %d", o.keptBytes, len(big)+1)
	}
}
