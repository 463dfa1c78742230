package upstream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestWriteStreamRacesClose streams messages from several goroutines
// while Close runs. Every POST goroutine a WriteStream starts must be one
// Close waits for: counted under the lock that Close's closed flag is
// set under, or not started at all. Run with -race, which reports a
// WaitGroup.Add that is not ordered before a concurrent Wait.
func TestWriteStreamRacesClose(t *testing.T) {
	posted := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: endpoint\ndata: /messages\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.Method == "POST" && r.URL.Path == "/messages":
			// Held until the client gives up: the writers queue behind
			// the first one while Close runs.
			io.Copy(io.Discard, r.Body)
			select {
			case posted <- struct{}{}:
			default:
			}
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	const rounds, writers = 50, 8
	for range rounds {
		c, err := Dial(Options{URL: srv.URL + "/sse", Transport: "sse"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range writers {
			wg.Go(func() {
				<-start
				err := c.WriteStream(func(w io.Writer) error {
					_, err := io.WriteString(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`)
					return err
				})
				if err != nil && err != io.ErrClosedPipe {
					t.Errorf("WriteStream: %v", err)
				}
			})
		}
		close(start)
		<-posted // the first writer holds the order; the rest queue behind it
		c.Close()
		wg.Wait()
	}
}
