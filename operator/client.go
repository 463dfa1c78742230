package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/relay"
)

// Client talks to one AEP endpoint.
type Client struct {
	// Endpoint is the base URL, e.g. http://127.0.0.1:8787.
	Endpoint string
	// Token is the bearer token, or a named operator's credential. Neither
	// is ever sent to an endpoint that has not proved it knows it, except
	// over TLS (relay.Connect).
	Token string
	// Agent names the sender in its commands' envelope; "" means
	// "aep-mcp-bridge-cli". It proves nothing: the bridge records who
	// answered from the credential, never from it.
	Agent string
	// PlainRemote allows an endpoint off this machine over plain http
	// (relay.ConnectOptions).
	PlainRemote bool
}

func (c *Client) agent() string {
	if c.Agent != "" {
		return c.Agent
	}
	return "aep-mcp-bridge-cli"
}

// Question is a pending attention request.
type Question struct {
	ID         string    `json:"id"`
	Session    string    `json:"session"`
	Agent      string    `json:"agent"`
	Server     string    `json:"server"`
	Prompt     string    `json:"prompt"`
	Kind       string    `json:"kind"`
	Asked      time.Time `json:"asked"`
	ExpiresAt  string    `json:"expires_at,omitempty"`
	RespondVia []string  `json:"respond_via,omitempty"`
	// Options are the answers a question takes by id: a URL question's
	// accept, decline and cancel.
	Options []aep.Choice `json:"options,omitempty"`
	// Fields are a form's fields, in the order the server declared them,
	// with their constraints (see aep.FieldSpec).
	Fields []aep.FieldSpec `json:"fields,omitempty"`
	// Tool, Rule and Approvals describe a permission request (a tool
	// call held for approval): the tool, the policy rule that asked, and
	// how many distinct approvers must allow.
	Tool      string `json:"tool,omitempty"`
	Rule      string `json:"rule,omitempty"`
	Approvals int    `json:"approvals,omitempty"`
}

// ErrUnreachable wraps the error of a connection to the endpoint that
// could not be made: nothing was sent.
var ErrUnreachable = errors.New("the endpoint cannot be reached")

// unreachable wraps a dial error so callers can match ErrUnreachable.
type unreachable struct {
	endpoint string
	err      error
}

func (e *unreachable) Error() string {
	return fmt.Sprintf("connecting to %s: %v; is a bridge running with its endpoint on? (pass --endpoint for another one)", e.endpoint, e.err)
}

func (e *unreachable) Unwrap() []error { return []error{ErrUnreachable, e.err} }

// StreamOptions say what Stream subscribes to (AEP-0003 §6.5): an
// attr-match Filter (nil means every event), a From position ("all", or
// nil for live events only), and a Capture ceiling ("" means none).
type StreamOptions struct {
	Filter  json.RawMessage
	From    json.RawMessage
	Capture string
}

// Stream subscribes to the endpoint's events over the WebSocket and calls
// fn for each until fn returns false, the connection ends or ctx is done.
func (c *Client) Stream(ctx context.Context, o StreamOptions, fn func(ev *aep.Event, raw []byte) bool) error {
	conn, err := c.dialSocket(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	write := func(frame any) error { return conn.WriteMessage(websocket.TextMessage, aep.EncodeFrame(frame)) }
	if err := write(aep.NewHello(aep.RoleConsumer, aep.Identity{Agent: c.agent()}, nil)); err != nil {
		return err
	}
	if err := write(aep.Subscribe{Type: aep.FrameSubscribe, ID: "tail", Filter: o.Filter, From: o.From, Capture: o.Capture}); err != nil {
		return err
	}
	for {
		_, b, err := conn.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("reading the events of %s: %w", c.Endpoint, err)
		}
		f, err := aep.DecodeFrame(b)
		switch {
		case err != nil:
			continue
		case f.Type == aep.FrameError && f.ID == "tail":
			return fmt.Errorf("the endpoint refused the subscription: %s: %s", f.Code, f.Detail)
		case f.Type == aep.FrameClosing:
			return fmt.Errorf("the endpoint closed the stream: %s", f.Reason)
		case !aep.IsEventType(f.Type):
			continue
		}
		ev, err := aep.Parse(b)
		if err != nil {
			continue
		}
		if !fn(ev, b) {
			return nil
		}
	}
}

// Pending lists the open questions the endpoint holds, oldest first. It
// reads the open-question snapshot every subscription of this bridge's
// endpoint starts with: a live-only subscription to attention.requested,
// whose subscribed frame counts the open questions that follow it (the
// experimental capability "open-questions"). Every open question is listed,
// whatever the endpoint's replay has evicted, each once.
func (c *Client) Pending(ctx context.Context) ([]Question, error) {
	conn, err := c.dialSocket(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	write := func(frame any) error { return conn.WriteMessage(websocket.TextMessage, aep.EncodeFrame(frame)) }
	if err := write(aep.NewHello(aep.RoleConsumer, aep.Identity{Agent: c.agent()}, nil)); err != nil {
		return nil, err
	}
	filter := json.RawMessage(`{"type":["attention.requested"]}`)
	if err := write(aep.Subscribe{Type: aep.FrameSubscribe, ID: "pending", Filter: filter}); err != nil {
		return nil, err
	}
	out := []Question{}
	seen := map[string]bool{}
	for want := -1; want < 0 || len(seen) < want; {
		_, b, err := conn.ReadMessage()
		if err != nil {
			return nil, fmt.Errorf("reading the open questions from %s: %w", c.Endpoint, err)
		}
		if want, err = snapshotFrame(b, want); err != nil {
			return nil, err
		}
		q, ok := requested(b)
		if ok && want >= 0 && !seen[q.source+"\x00"+q.ID] {
			seen[q.source+"\x00"+q.ID] = true
			out = append(out, q.Question)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Asked.Before(out[j].Asked) })
	return out, nil
}

// snapshotFrame reads the frames of Pending's subscription: the subscribed
// frame gives how many open questions follow; an error frame about it
// ends the listing. It returns want, updated.
func snapshotFrame(b []byte, want int) (int, error) {
	var f struct {
		Type   string `json:"type"`
		ID     string `json:"id"`
		Code   string `json:"code"`
		Detail string `json:"detail"`
		Open   *int   `json:"open"`
	}
	if json.Unmarshal(b, &f) != nil || f.ID != "pending" {
		return want, nil
	}
	switch f.Type {
	case aep.FrameError:
		return want, fmt.Errorf("the endpoint refused to list its open questions: %s %s", f.Code, f.Detail)
	case aep.FrameSubscribed:
		if f.Open == nil {
			return want, errors.New("the endpoint does not count its open questions (the open-questions capability of aep-mcp-bridge); point --endpoint at a bridge's endpoint")
		}
		return *f.Open, nil
	}
	return want, nil
}

// sourced is a question with the source that asked it.
type sourced struct {
	Question
	source string
}

// requested reads a Question from an attention.requested event's bytes.
func requested(b []byte) (sourced, bool) {
	var ev struct {
		ID, Type, Source, Session, Agent, Subject, Time string
		Data                                            aep.AttentionRequested
		Integers                                        json.RawMessage `json:"aepmcpbridgeint"` // aep.ExtIntegerFields
		// The permission request's extensions (attention.ExtTool, …),
		// read apart: an ill-formed one must not hide the question.
		Tool      json.RawMessage `json:"aepmcpbridgetool"`
		Rule      json.RawMessage `json:"aepmcpbridgerule"`
		Approvals json.RawMessage `json:"aepmcpbridgeneed"`
	}
	if json.Unmarshal(b, &ev) != nil || ev.Type != "attention.requested" || ev.ID == "" || ev.Session == "" {
		return sourced{}, false
	}
	t, _ := time.Parse(time.RFC3339Nano, ev.Time)
	d := ev.Data
	var tool, rule string
	var approvals int
	json.Unmarshal(ev.Tool, &tool)
	json.Unmarshal(ev.Rule, &rule)
	json.Unmarshal(ev.Approvals, &approvals)
	// The integer fields are named in the envelope; an ill-formed value
	// marks none, and the bridge still checks every answer.
	aep.MarkIntegerFields(ev.Integers, d.Fields)
	return sourced{Question{ID: ev.ID, Session: ev.Session, Agent: ev.Agent, Server: ev.Subject, Prompt: d.Prompt,
		Kind: d.Kind, Asked: t, ExpiresAt: d.ExpiresAt, RespondVia: d.RespondVia, Options: d.Options, Fields: d.Fields,
		Tool: tool, Rule: rule, Approvals: approvals}, ev.Source}, true
}

// Ack is the outcome of sending a command.
type Ack struct {
	// Accepted is true for control.accepted.
	Accepted bool
	// Reason and Detail explain a refusal: a control.rejected reason, or
	// the code of an endpoint's error frame.
	Reason, Detail string
	// Raw is the ack event or error frame.
	Raw []byte
}

// ErrNoAck is returned when no ack arrives within the window (AEP-0004 §3:
// silence is a timeout, synthesized by the sender).
var ErrNoAck = errors.New("no ack within the window")

// Respond answers question q and waits up to window for the ack. It reuses
// one command id across reconnects, so a retry after a dropped connection
// gets the recorded ack (AEP-0004 §2.3). hook, if set, runs after each
// send; returning false drops the connection (tests use it).
//
// When no attempt could connect, the error matches ErrUnreachable: the
// command was never sent. When it was sent and no ack came, the error is a
// *NoAckError, which matches ErrNoAck.
func (c *Client) Respond(ctx context.Context, q Question, answer aep.Answer, window time.Duration, hook func(attempt int) bool) (Ack, error) {
	data, _ := json.Marshal(aep.Respond{Answer: answer})
	cmd := aep.Event{AEP: aep.Version, ID: aep.NewID(), Type: "control.attention.respond", Subject: q.ID, Cause: q.ID,
		Time: aep.FormatTime(time.Now()), Source: "aep://cli/agent/" + c.agent(), Agent: c.agent(), Session: q.Session,
		Capture: aep.CaptureFull, Data: data}
	raw, err := json.Marshal(cmd)
	if err != nil {
		return Ack{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	var last error
	everSent := false
	for attempt := 1; ctx.Err() == nil; attempt++ {
		ack, sent, err := c.sendOnce(ctx, cmd.ID, raw, func() bool { return hook == nil || hook(attempt) })
		everSent = everSent || sent
		if err == nil {
			return ack, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
		select { // a short pause before reconnecting
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if !everSent && errors.Is(last, ErrUnreachable) {
		return Ack{}, last
	}
	if last != nil && !errors.Is(last, context.DeadlineExceeded) {
		return Ack{}, &NoAckError{Last: last}
	}
	return Ack{}, &NoAckError{}
}

// NoAckError is Respond's error when the command may have been sent but
// no ack arrived in the window. It matches ErrNoAck.
type NoAckError struct {
	// Last is the last connection error, if any.
	Last error
}

func (e *NoAckError) Error() string {
	if e.Last == nil {
		return ErrNoAck.Error()
	}
	return fmt.Sprintf("%v (last error: %v)", ErrNoAck, e.Last)
}

// Is makes a NoAckError match ErrNoAck.
func (e *NoAckError) Is(target error) bool { return target == ErrNoAck }

func (c *Client) socketURL() (string, error) {
	u, err := url.Parse(strings.TrimRight(c.Endpoint, "/") + "/socket")
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	return u.String(), nil
}

// Check connects to the endpoint as the other calls do and closes again:
// nil means an endpoint answers there and knows the token.
func (c *Client) Check(ctx context.Context) error {
	conn, err := c.dialSocket(ctx)
	if err != nil {
		return err
	}
	return conn.Close()
}

// dialSocket opens the endpoint's WebSocket, ready for hello, without
// ever sending the token to a peer that has not proved it knows it
// (relay.Connect).
func (c *Client) dialSocket(ctx context.Context) (*websocket.Conn, error) {
	u, err := c.socketURL()
	if err != nil {
		return nil, fmt.Errorf("the endpoint URL %q: %w", c.Endpoint, err)
	}
	conn, err := relay.Connect(ctx, u, c.Token, relay.ConnectOptions{PlainRemote: c.PlainRemote})
	var ur *relay.Unreachable
	switch {
	case errors.As(err, &ur):
		return nil, &unreachable{c.Endpoint, ur.Err}
	case err != nil:
		return nil, fmt.Errorf("connecting to %s: %w", c.Endpoint, err)
	}
	return conn, nil
}

// sendOnce connects, subscribes to the command's acks, sends it and waits.
// sent reports whether the command went out on this connection.
func (c *Client) sendOnce(ctx context.Context, id string, raw []byte, keep func() bool) (ack Ack, sent bool, err error) {
	conn, err := c.dialSocket(ctx)
	if err != nil {
		return Ack{}, false, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	write := func(frame any) error { return conn.WriteMessage(websocket.TextMessage, aep.EncodeFrame(frame)) }
	if err := write(aep.NewHello(aep.RoleConsumer, aep.Identity{Agent: c.agent()}, nil)); err != nil {
		return Ack{}, false, err
	}
	filter, _ := json.Marshal(map[string]any{"cause": id, "type": []string{"control.*"}})
	if err := write(aep.Subscribe{Type: aep.FrameSubscribe, ID: "ack", Filter: filter, From: aep.FromAll}); err != nil {
		return Ack{}, false, err
	}
	for {
		_, b, err := conn.ReadMessage()
		if err != nil {
			return Ack{}, sent, err
		}
		f, err := aep.DecodeFrame(b)
		if err != nil {
			continue
		}
		switch {
		case f.Type == aep.FrameSubscribed && f.ID == "ack" && !sent:
			if err := conn.WriteMessage(websocket.TextMessage, raw); err != nil {
				return Ack{}, false, err
			}
			sent = true
			if !keep() {
				return Ack{}, true, errors.New("connection dropped after sending")
			}
		case f.Type == aep.FrameError && f.ID == "ack":
			return Ack{}, sent, fmt.Errorf("the endpoint refused the subscription: %s %s", f.Code, f.Detail)
		case f.Type == aep.FrameError && f.Cause == id:
			return Ack{Reason: f.Code, Detail: f.Detail, Raw: b}, true, nil
		case aep.IsEventType(f.Type):
			if ack, ok := ackOf(b, id); ok {
				return ack, true, nil
			}
		}
	}
}

// ackOf reads an ack event for command id: control.accepted, or
// control.rejected with its reason and detail.
func ackOf(b []byte, id string) (Ack, bool) {
	ev, err := aep.Parse(b)
	if err != nil || ev.Cause != id {
		return Ack{}, false
	}
	switch ev.Type {
	case "control.accepted":
		return Ack{Accepted: true, Raw: b}, true
	case "control.rejected":
		var r aep.Rejected
		json.Unmarshal(ev.Data, &r)
		return Ack{Reason: r.Reason, Detail: r.Detail, Raw: b}, true
	}
	return Ack{}, false
}
