package aep

// ExtClient is the extension attribute (AEP-0001 §5.4) on every event a
// session emits when a named client of the gateway opened it: the
// client's name (a string of letters, digits and . _ @ + -), as the
// gateway authenticated it by its credential. What the MCP client says of
// itself is another thing: session.started's data.client. Being
// structural, the attribute is present at every capture level.
const ExtClient = "aepmcpbridgeclient"
