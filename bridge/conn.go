package bridge

import (
	"bytes"
	"context"

	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
	"github.com/agenteventprotocol/aep-mcp-bridge/upstream"
)

// ClientConn is a transport of the caller's own for the MCP client's side
// (Options.ClientConn), such as the gateway's per-session connection:
// whole JSON-RPC messages, one at a time. When it also implements
// RelatedWriter, it is told which client request each message of a
// remote upstream relates to.
type ClientConn interface {
	// ReadMessage returns the client's next message, or io.EOF once the
	// client has gone; Close unblocks it.
	ReadMessage() ([]byte, error)
	// WriteMessage sends one message to the client. It is safe for
	// concurrent use.
	WriteMessage(msg []byte) error
	// Close ends the client's side.
	Close() error
}

// messageConn is a ClientConn as the proxy's elicit.Conn. It holds
// nothing back (Frame.More), and a message relayed as a stream reaches
// the ClientConn whole.
type messageConn struct{ c ClientConn }

func (m messageConn) Read(ctx context.Context) (elicit.Frame, error) {
	if err := ctx.Err(); err != nil {
		return elicit.Frame{}, err
	}
	b, err := m.c.ReadMessage()
	return elicit.Frame{Head: b}, err
}

func (m messageConn) Write(ctx context.Context, f elicit.Frame) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := wholeFrame(f)
	if err != nil || len(b) == 0 {
		return err
	}
	return m.c.WriteMessage(b)
}

func (m messageConn) Close() error { return m.c.Close() }

// wholeFrame returns f's bytes in one piece.
func wholeFrame(f elicit.Frame) ([]byte, error) {
	if f.Rest == nil {
		return f.Head, nil
	}
	var b bytes.Buffer
	b.Write(f.Head)
	_, err := b.ReadFrom(f.Rest)
	return b.Bytes(), err
}

// relatedConn is a remote upstream that tells rw, before the proxy sees
// each message it reads, which client request's response stream the
// message came on. A message streamed from a large JSON response body
// came on no event stream, so rw is not told of it.
type relatedConn struct {
	*upstream.Conn
	rw RelatedWriter
}

func (r relatedConn) Read(ctx context.Context) (elicit.Frame, error) {
	f, err := r.Conn.Read(ctx)
	if err == nil && f.Related != nil && f.Rest == nil {
		r.rw.Related(f.Head, f.Related)
	}
	return f, err
}
