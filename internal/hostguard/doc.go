// Package hostguard holds the DNS-rebinding and cross-origin rules that
// every HTTP surface of the bridge applies before anything else: the AEP
// endpoint (package endpoint) and the MCP gateway (package gateway).
//
// A Policy answers two questions about a request:
//   - Host: does it name the address the request arrived on, localhost or
//     a loopback IP (each with that port), or an allowed extra host? A web
//     page that rebinds its own name to 127.0.0.1 still sends its own name
//     as Host, so it is refused (MCP basic/transports, Security Warning:
//     servers MUST validate Origin to prevent DNS rebinding; the Host rule
//     closes the same hole for clients that send no Origin).
//   - Origin: is the browser page that sent it the surface's own origin, or
//     an allowed extra origin? MCP basic/transports requires 403 for an
//     Origin that is present and invalid.
//
// The package does no I/O of its own; CORS writes the headers an allowed
// foreign origin needs and answers its preflight.
package hostguard
