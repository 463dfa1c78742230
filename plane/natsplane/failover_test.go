package natsplane

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/bus"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/natsnode"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane/planetest"
)

// TestKillTheNodeThatLeadsTheStream kills, mid-flight, the NATS node
// that leads the events stream and that front door A is connected to: no
// question, answer or event is lost, A keeps serving, an answer on A
// still reaches C, and a front door opened after the kill sees the same
// open set.
func TestKillTheNodeThatLeadsTheStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*planetest.Wait)
	defer cancel()
	cl, err := natsnode.StartCluster(ctx, natsnode.ClusterOptions{Dir: t.TempDir(), User: clusterUser, Password: clusterPass})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop) // after the members close: cleanups run last first
	prefix := newPrefix()
	c := member(t, cl.URLs(), prefix)
	leader, err := cl.WaitLeader(ctx, prefix+"_events")
	if err != nil {
		t.Fatal(err)
	}
	a := member(t, cl.Node(leader).URL(), prefix) // it learns the others from the cluster
	w := planetest.Subscribe(t, a.Hub())
	s := planetest.NewSession(t, door(c))
	before := []string{s.Ask(), s.Ask(), s.Ask()}
	for _, id := range before {
		w.Until("a question asked before the kill", planetest.Is("attention.requested", id))
	}

	cl.Kill(leader)
	killed := time.Now()
	after := s.Ask()
	w.Until("a question asked after the kill", planetest.Is("attention.requested", after))
	cmd, raw := planetest.Respond(s.ID(), before[0], map[string]any{"ok": true})
	if code, detail := a.Command(ctx, plane.TokenHolder(), cmd, raw); code != "" {
		t.Fatalf("answering with a node down: %s: %s", code, detail)
	}
	w.Until("the ack", planetest.Is("control.accepted", cmd.ID))
	w.Until("the resolution", planetest.Is("attention.resolved", before[0]))
	if got := s.Resolutions(before[0]); len(got) != 1 {
		t.Fatalf("C's server got %d resolutions; want one", len(got))
	}
	want := map[string]bool{before[1]: true, before[2]: true, after: true}
	d := member(t, cl.URLs(), prefix)
	for name, m := range map[string]*Member{"A": a, "C": c, "a door opened after the kill": d} {
		planetest.Eventually(t, name+"'s open set", func() error { return planetest.SameOpen(m.Hub(), want) })
	}
	t.Logf("answered across doors, and every door's open set the same, %v after the kill", time.Since(killed).Round(time.Millisecond))
	inOrder(t, "A", w, s.ID())
}

// inOrder checks that every event of session that w read so far came
// once, in seq order from the first.
func inOrder(t *testing.T, door string, w *planetest.Watch, session string) {
	t.Helper()
	var last int64 = -1
	for _, dl := range w.Seen() {
		if dl.Event.Session != session || dl.Event.Seq == nil {
			continue
		}
		if *dl.Event.Seq != last+1 {
			t.Fatalf("%s got seq %d after %d: an event was lost, repeated or out of order", door, *dl.Event.Seq, last)
		}
		last = *dl.Event.Seq
	}
}

// TestAskingGatewayGone kills the asking member without a word: the
// front doors take it for gone once its heartbeats stop; its dated
// questions stay listed until their expiry and bus.ExpiredGrace (the
// abandoned rule of a joined bridge), a command for its session gets
// no-route, and a command it already acked, sent again through another
// door, still gets its recorded ack byte for byte.
func TestAskingGatewayGone(t *testing.T) {
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	prefix := newPrefix()
	a := member(t, shared.URLs(), prefix, func(o *Options) { o.now = clock })
	b := member(t, shared.URLs(), prefix)
	c := member(t, shared.URLs(), prefix)
	wa, wb := planetest.Subscribe(t, a.Hub()), planetest.Subscribe(t, b.Hub())
	s := planetest.NewSession(t, door(c))
	answered, waiting := s.Ask(), s.Ask()
	wa.Until("the second question on A", planetest.Is("attention.requested", waiting))
	ctx := context.Background()
	cmd, raw := planetest.Respond(s.ID(), answered, map[string]any{"ok": true})
	if code, detail := a.Command(ctx, plane.TokenHolder(), cmd, raw); code != "" {
		t.Fatalf("Command = %s: %s", code, detail)
	}
	first := wb.Until("the ack on B", planetest.Is("control.accepted", cmd.ID))
	wb.Until("the resolution on B", planetest.Is("attention.resolved", answered))
	// The record is on the plane once C's pump sent it.
	planetest.Eventually(t, "the recorded ack", func() error {
		_, err := c.kvs.commands.Get(ctx, recordKey(c.fp, cmd.Source, cmd.ID))
		return err
	})

	c.Kill()
	planetest.Eventually(t, "A taking C for gone", func() error {
		a.ingest.Lock()
		defer a.ingest.Unlock()
		if p := a.peers[c.fp]; p == nil || !p.gone {
			return fmt.Errorf("A still takes C for alive")
		}
		return nil
	})
	if got := planetest.OpenIDs(a.Hub()); len(got) != 1 || got[0] != waiting {
		t.Fatalf("A's open set right after C left: %v; want the dated question [%s] kept until it expires", got, waiting)
	}
	cmd2, raw2 := planetest.Respond(s.ID(), waiting, map[string]any{"ok": true})
	if code, _ := a.Command(ctx, plane.TokenHolder(), cmd2, raw2); code != "no-route" {
		t.Errorf("a command for the gone member's session got %q; want no-route", code)
	}
	n := len(wb.Seen())
	if code, detail := b.Command(ctx, plane.TokenHolder(), cmd, raw); code != "" {
		t.Fatalf("the acked command again, its owner gone: %s: %s; want the recorded ack", code, detail)
	}
	again := wb.After(n).Until("the recorded ack again", planetest.Is("control.accepted", cmd.ID))
	if string(again.Raw) != string(first.Raw) {
		t.Errorf("the recorded ack is %s; want %s", again.Raw, first.Raw)
	}
	// Past its expiry and the grace, the question leaves A's open set.
	offset.Store(int64(11*time.Minute + bus.ExpiredGrace))
	if got := planetest.OpenIDs(a.Hub()); len(got) != 0 {
		t.Fatalf("A's open set past the question's expiry and grace: %v; want none", got)
	}
}
