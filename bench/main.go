// Command bench measures the bridge side by side with its baselines and
// prints tables. It is a program, not a test: nothing here asserts a time.
//
//	go run ./bench proxy    # tools/call round trip: direct, raw pump, bridge
//	go run ./bench pending  # 1,000 questions pending at once over sessions of 200, a late operator, then answered
//	go run ./bench fanout   # one session fanned out to 100 WS + 100 SSE subscribers
//	go run ./bench http     # tools/call to a streamable-HTTP server: direct, raw TCP pump, bridge --url
//	go run ./bench ingest   # 400 × ~1 MiB ingested, 64 from:"all" subscribers: the endpoint's RSS
//	go run ./bench gateway  # 50 sessions × 200 calls: stdio, serve, supergateway
//	go run ./bench sse      # a 64 MB SSE event each way, TypeScript SDK server: direct vs bridge --url, with its RSS
//	go run ./bench policy   # decision time per call for policies of 10, 100 and 1,000 rules
//	go run ./bench notify   # 1,000 questions' raise time without and with --notify to a 200 ms webhook
//	go run ./bench fleet    # 1,000 questions: one process, 3 gateways joined to one hub, 3 gateways on a 3-node NATS cluster
//	go run ./bench startup  # the default bridge's and gateway's start time and idle RSS (the in-process plane)
//
// The helper modes "pump", "tcp-pump", "flood-server" and "fanout-server" are the
// baselines' and targets' processes.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench proxy|pending|fanout|http|ingest|gateway|sse|policy|notify|fleet|startup [flags]")
		os.Exit(2)
	}
	var err error
	ctx := context.Background()
	switch os.Args[1] {
	case "proxy":
		err = runProxy(ctx, os.Args[2:])
	case "pending":
		err = runPending(ctx, os.Args[2:])
	case "pump":
		err = pump(os.Args[2:])
	case "tcp-pump":
		err = tcpPump(os.Args[2:])
	case "flood-server":
		err = floodServer()
	case "http":
		err = runHTTP(ctx, os.Args[2:])
	case "gateway":
		err = runGateway(ctx, os.Args[2:])
	case "fanout":
		err = runFanout(ctx, os.Args[2:])
	case "fanout-server":
		err = fanoutServer()
	case "ingest":
		err = runIngest(ctx, os.Args[2:])
	case "policy":
		err = runPolicy(ctx, os.Args[2:])
	case "sse":
		err = runSSE(ctx, os.Args[2:])
	case "notify":
		err = runNotify(ctx, os.Args[2:])
	case "fleet":
		err = runFleet(ctx, os.Args[2:])
	case "startup":
		err = runStartup(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// profileFolder creates the folder a -profile or -cpuprofile flag names
// ("" is none): a bridge told to write its profile into a folder that is
// not there refuses to start, which the bench would see only as a closed
// transport.
func profileFolder(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("the profile folder: %w", err)
	}
	return nil
}
