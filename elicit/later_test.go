package elicit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
)

// blockingConn is a peer that stops reading once blocked is closed: every
// later write waits until release is closed.
type blockingConn struct {
	*memConn
	block, release chan struct{}
	once           sync.Once
}

func newBlockingConn() *blockingConn {
	return &blockingConn{memConn: newMemConn(), block: make(chan struct{}), release: make(chan struct{})}
}

func (c *blockingConn) stop() { c.once.Do(func() { close(c.block) }) }

func (c *blockingConn) Write(ctx context.Context, f Frame) error {
	select {
	case <-c.block:
		<-c.release
	default:
	}
	return c.memConn.Write(ctx, f)
}

// TestLaterNeverBlocksItsCaller: work handed to the proxy's own goroutine
// never blocks whoever hands it over (the reader goroutines among them),
// however much piles up behind a write to a peer that stopped reading;
// and at Close every piece of it still runs, in order, none dropped.
func TestLaterNeverBlocksItsCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, sv := newMemConn(), newBlockingConn()
		mgr := attention.NewManager(attention.ManagerOptions{Agent: "a", Publisher: nopPublisher{}})
		defer mgr.Close()
		p := New(Options{Client: cl, Server: sv, Manager: mgr})
		ctx, cancel := context.WithCancel(context.Background())
		ended := make(chan Ending, 1)
		go func() { ended <- p.Run(ctx) }()
		synctest.Wait()
		sv.stop()

		const n = 1024 // more than any fixed queue the proxy might keep
		var ran []int
		var mu sync.Mutex
		handed := make(chan struct{})
		go func() {
			for i := range n {
				p.later(func() {
					p.writeServer([]byte(`{"jsonrpc":"2.0","method":"x"}`))
					mu.Lock()
					ran = append(ran, i)
					mu.Unlock()
				})
			}
			close(handed)
		}()
		synctest.Wait()
		select {
		case <-handed:
		default:
			t.Fatalf("later blocked its caller behind a peer that stopped reading")
		}

		cancel()
		<-ended
		close(sv.release)
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		mu.Lock()
		if len(ran) != n {
			t.Errorf("%d of %d handed-over pieces of work ran by Close; want all", len(ran), n)
		}
		for i, v := range ran {
			if v != i {
				t.Fatalf("work ran out of order: position %d ran piece %d", i, v)
			}
		}
		mu.Unlock()

		// After Close, work handed over still runs (its writes meet
		// closed streams), never dropped.
		var after atomic.Bool
		p.later(func() { after.Store(true) })
		synctest.Wait()
		if !after.Load() {
			t.Errorf("work handed over after Close was dropped")
		}
	})
}
