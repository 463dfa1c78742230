package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/operator"
)

// pendingToken is the bench pending host's token.
const pendingToken = "bench-pending-token-0123456789abcdefghijklmnop"

// lateResult is what an operator who connects after the questions and the
// noise sees.
type lateResult struct {
	noiseSessions, noiseEvents int
	noiseBytes                 int64
	pending                    int
	pendingTime                time.Duration
	open, subscribed           int
	subscribeTime              time.Duration
	rss                        string
}

// noisePerSession is how many ~1 KiB events each noise session posts.
const noisePerSession = 64

// lateOperator ingests sessions of noise (more sessions and bytes than
// replay keeps), then connects as an operator who was not there when the
// questions were asked and counts what it sees: pending (the SSE snapshot)
// and a from:"all" WebSocket subscription filtered as the inbox filters.
func lateOperator(ctx context.Context, addr string, sessions int) (lateResult, error) {
	r := lateResult{noiseSessions: sessions}
	if err := ingestNoise(ctx, addr, sessions, &r); err != nil {
		return r, err
	}
	start := time.Now()
	qs, err := (&operator.Client{Endpoint: "http://" + addr, Token: pendingToken}).Pending(ctx)
	if err != nil {
		return r, fmt.Errorf("the late operator's pending: %w", err)
	}
	r.pendingTime, r.pending = time.Since(start), len(qs)
	start = time.Now()
	if r.open, r.subscribed, err = subscribeLate(ctx, addr); err != nil {
		return r, err
	}
	r.subscribeTime = time.Since(start)
	cur, _ := rss(os.Getpid())
	r.rss = fmt.Sprintf("%.0f MB", float64(cur)/1000)
	return r, nil
}

// ingestNoise posts noisePerSession events of ~1 KiB for each session, one
// NDJSON batch per session.
func ingestNoise(ctx context.Context, addr string, sessions int, r *lateResult) error {
	filler := strings.Repeat("n", 1000)
	for s := range sessions {
		var b strings.Builder
		for i := range noisePerSession {
			fmt.Fprintf(&b, `{"aep":"0.1","id":"%s","type":"progress.status","time":"%s","source":"aep://noise/agent/n/session/n%d","agent":"n","session":"n%d","seq":%d,"capture":"redacted","data":{"message":"%s"}}`+"\n",
				aep.NewID(), aep.FormatTime(time.Now()), s, s, i, filler)
		}
		r.noiseBytes += int64(b.Len())
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/events", strings.NewReader(b.String()))
		req.Header.Set("Authorization", "Bearer "+pendingToken)
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("AEP-Version", aep.Version)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("ingesting noise: %w", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("ingesting noise: HTTP %d", resp.StatusCode)
		}
		r.noiseEvents += noisePerSession
	}
	return nil
}

// subscribeLate subscribes from:"all" to attention.* and control.*, as the
// inbox does, and reads the open questions the subscribed frame announces;
// it returns that count and the distinct questions read.
func subscribeLate(ctx context.Context, addr string) (open, distinct int, err error) {
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+addr+"/socket", http.Header{"Authorization": {"Bearer " + pendingToken}})
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	filter := json.RawMessage(`{"type":["attention.*","control.*"]}`)
	conn.WriteMessage(websocket.TextMessage, aep.EncodeFrame(aep.NewHello(aep.RoleConsumer, aep.Identity{Agent: "late"}, nil)))
	conn.WriteMessage(websocket.TextMessage, aep.EncodeFrame(aep.Subscribe{Type: aep.FrameSubscribe, ID: "inbox", Filter: filter, From: aep.FromAll}))
	seen := map[string]bool{}
	for got, want := 0, -1; want < 0 || got < want; {
		_, b, err := conn.ReadMessage()
		if err != nil {
			return open, len(seen), fmt.Errorf("the late operator's subscription: %w", err)
		}
		var f struct {
			aep.Subscribed
			Source string `json:"source"`
		}
		json.Unmarshal(b, &f)
		switch {
		case f.Type == aep.FrameSubscribed:
			open, want = f.Open, f.Open
		case f.Type == "attention.requested" && want >= 0:
			seen[f.Source+" "+f.ID] = true
			got++
		case aep.IsEventType(f.Type) && want >= 0:
			got++
		}
	}
	return open, len(seen), nil
}
