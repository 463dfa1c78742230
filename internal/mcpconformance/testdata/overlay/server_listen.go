// This file is added to go-sdk's conformance everything-server when the
// tests build it (go build -overlay), with its main.go calling
// aepServeReporting instead of http.ListenAndServe: the server listens
// first and then says where, so a test can start it on port 0 and read
// the address it got. Over stdio, with AEP_TEST_RECORD set, it keeps
// every byte it reads in that file (package record). Nothing else of the
// server changes.

package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testpeers/record"
)

func init() {
	if err := record.Stdin(); err != nil {
		log.Fatalf("recording stdin: %v", err)
	}
}

// aepServeReporting serves h on addr like http.ListenAndServe, once it
// has printed "listening on http://ADDR/mcp" on stderr with the bound
// address.
func aepServeReporting(addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s/mcp\n", ln.Addr())
	return http.Serve(ln, h)
}
