package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/attention"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

// testPolicy is the approval policy of these tests, over the test
// server's echo tool: what the message starts with picks the rule.
const testPolicy = `
groups:
  oncall: [alice, carol]
rules:
  - id: no-rm
    tool: echo
    when: 'args.message == "rm -rf /"'
    action: deny
    reason: Deleting everything is not allowed.
  - id: one
    tool: echo
    when: 'args.message.startsWith("one")'
    action: ask
    approvers: [alice]
  - id: two
    tool: echo
    when: 'args.message.startsWith("two")'
    action: ask
    approvers: [group:oncall]
    approvals: 2
  - id: quick
    tool: echo
    when: 'args.message.startsWith("quick")'
    action: ask
    approvers: [alice]
    timeout: 300ms
  - id: sess
    tool: echo
    when: 'args.message.startsWith("sess")'
    action: ask
    approvers: [alice]
    remember: session
`

// policySession is a session of the test server (recording what it
// reads) under the approval policy doc.
type policySession struct {
	*session
	rec stdinRecord
	rel *policy.Reloader
}

func startPolicySession(t *testing.T, doc string) *policySession {
	t.Helper()
	rel, err := policy.NewReloader([]byte(doc))
	if err != nil {
		t.Fatalf("the test policy does not load: %v", err)
	}
	rec := newStdinRecord(t)
	s := startSession(t, sessionConfig{opts: Options{Policy: rel, Env: rec.env()}})
	return &policySession{session: s, rec: rec, rel: rel}
}

// vote submits operator by's answer to permission request subject.
func (s *policySession) vote(subject, by string, a aep.Answer) control.Result {
	s.t.Helper()
	res, err := s.b.Intake().Submit(command(s.b.Session(), subject, a), control.Sender{Authenticated: true, By: by})
	if err != nil {
		s.t.Fatalf("Submit: %v", err)
	}
	return res
}

// serverGot reports whether the server read a message containing text.
func (s *policySession) serverGot(text string) bool {
	for _, m := range s.rec.received() {
		if bytes.Contains(m, []byte(text)) {
			return true
		}
	}
	return false
}

// settle runs one allowed call to the end, so every message before it has
// reached the server: the record is complete up to there.
func (s *policySession) settle() {
	s.t.Helper()
	if got := toolText(s.t, s.result(s.call("echo", map[string]any{"message": "fence"}, nil))); got != "fence" {
		s.t.Fatalf("the fence call returned %q", got)
	}
	if !s.serverGot(`"fence"`) {
		s.t.Fatal("the server's record lacks the fence call it answered")
	}
}

func rejected(t *testing.T, res control.Result) aep.Rejected {
	t.Helper()
	if res.Accepted() {
		t.Fatalf("the command was accepted; want it refused")
	}
	var r aep.Rejected
	json.Unmarshal(res.Ack.Data, &r)
	return r
}

func permission(t *testing.T, ev aep.Event) aep.AttentionRequested {
	t.Helper()
	var d aep.AttentionRequested
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		t.Fatalf("attention.requested data: %v", err)
	}
	if d.Kind != "permission" {
		t.Fatalf("kind %q; want permission", d.Kind)
	}
	return d
}

func TestPolicyAllowPassesAndIsRecorded(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	if got := toolText(t, s.result(s.call("echo", map[string]any{"message": "hello"}, nil))); got != "hello" {
		t.Fatalf("echo returned %q", got)
	}
	req := s.next("tool.requested")
	done := s.next("tool.completed")
	var rd map[string]any
	json.Unmarshal(req.Data, &rd)
	if rd["args_digest"] != policy.ArgsDigest([]byte(`{"message":"hello"}`)) {
		t.Errorf("tool.requested args_digest %v; want the digest of the arguments", rd["args_digest"])
	}
	if _, ok := rd["args"]; ok {
		t.Errorf("tool.requested carries args above the metadata ceiling: %s", req.Data)
	}
	if _, ok := rd["args_redacted"]; ok {
		t.Errorf("tool.requested carries args_redacted above the metadata ceiling: %s", req.Data)
	}
	if done.Cause != req.ID || req.Subject != "echo" {
		t.Errorf("tool.completed cause %s subject %s; want %s and echo", done.Cause, req.Subject, req.ID)
	}
}

func TestPolicyDenyNeverReachesTheServer(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	res := s.result(s.call("echo", map[string]any{"message": "rm -rf /"}, nil))
	if !res.IsError || !strings.Contains(toolText(t, res), "Deleting everything is not allowed.") {
		t.Fatalf("denied call: isError %v text %q; want an error result with the rule's reason", res.IsError, toolText(t, res))
	}
	denied := s.next("tool.denied")
	var d map[string]any
	json.Unmarshal(denied.Data, &d)
	if d["by"] != "policy" || d["rule"] != "no-rm" {
		t.Errorf("tool.denied %s; want by policy, rule no-rm", denied.Data)
	}
	s.settle()
	if s.serverGot("rm -rf") {
		t.Fatal("the server received the denied call")
	}
}

func TestPolicyAskOneApprover(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	call := s.call("echo", map[string]any{"message": "one: deploy"}, nil)
	req := s.next("attention.requested")
	d := permission(t, req)
	if req.Subject != "elicit-test-server" || strings.Join(d.RespondVia, ",") != "control" {
		t.Errorf("subject %q respond_via %v; want the server and control", req.Subject, d.RespondVia)
	}
	var opts []string
	for _, o := range d.Options {
		opts = append(opts, o.ID)
	}
	if strings.Join(opts, ",") != "allow,deny" {
		t.Errorf("options %v; want allow, deny", opts)
	}
	if !strings.Contains(d.Prompt, "echo") || !strings.Contains(d.Prompt, "one: deploy") {
		t.Errorf("prompt %q; want the tool and its arguments", d.Prompt)
	}
	var ext map[string]string
	for _, k := range []string{attention.ExtTool, attention.ExtRule, attention.ExtRevision} {
		var v string
		json.Unmarshal(req.Extensions[k], &v)
		if ext == nil {
			ext = map[string]string{}
		}
		ext[k] = v
	}
	if ext[attention.ExtTool] != "echo" || ext[attention.ExtRule] != "one" || ext[attention.ExtRevision] != s.rel.Policy().Revision() {
		t.Errorf("extensions %v; want tool echo, rule one and the policy's revision", ext)
	}
	// bob is no approver of rule one.
	if r := rejected(t, s.vote(req.ID, "bob", aep.Answer{Option: "allow"})); r.Reason != aep.ReasonUnauthorized {
		t.Errorf("bob's approval: %+v; want unauthorized", r)
	}
	s.settle() // the held call has not reached the server
	if s.serverGot("one: deploy") {
		t.Fatal("the server received the held call before it was approved")
	}
	if res := s.vote(req.ID, "alice", aep.Answer{Option: "allow"}); !res.Accepted() {
		t.Fatalf("alice's approval: %s", res.Raw)
	}
	if got := toolText(t, s.result(call)); got != "one: deploy" {
		t.Fatalf("the approved call returned %q", got)
	}
	ans := s.next("attention.answered")
	var ad aep.AttentionAnswered
	json.Unmarshal(ans.Data, &ad)
	if ad.By != "alice" || ad.Answer.Option != "allow" {
		t.Errorf("attention.answered %s; want allow by alice", ans.Data)
	}
	s.next("attention.resolved")
	s.next("tool.completed")
}

func TestPolicyTwoPersonRule(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	call := s.call("echo", map[string]any{"message": "two: migrate"}, nil)
	req := s.next("attention.requested")
	if res := s.vote(req.ID, "alice", aep.Answer{Option: "allow"}); !res.Accepted() {
		t.Fatalf("alice's approval: %s", res.Raw)
	}
	v := s.next(attention.TypeVote)
	var vd attention.Vote
	json.Unmarshal(v.Data, &vd)
	if vd.By != "alice" || vd.Needed != 2 || strings.Join(vd.Approved, ",") != "alice" {
		t.Errorf("vote %s; want alice, 1 of 2", v.Data)
	}
	if r := rejected(t, s.vote(req.ID, "alice", aep.Answer{Option: "allow"})); r.Reason != aep.ReasonRefused {
		t.Errorf("alice's second approval: %+v; want refused", r)
	}
	s.settle()
	if s.serverGot("two: migrate") {
		t.Fatal("one approval of two released the call")
	}
	if res := s.vote(req.ID, "carol", aep.Answer{Option: "allow"}); !res.Accepted() {
		t.Fatalf("carol's approval: %s", res.Raw)
	}
	if got := toolText(t, s.result(call)); got != "two: migrate" {
		t.Fatalf("the approved call returned %q", got)
	}
}

func TestPolicyApproverDenies(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	call := s.call("echo", map[string]any{"message": "two: drop"}, nil)
	req := s.next("attention.requested")
	s.vote(req.ID, "alice", aep.Answer{Option: "allow"})
	if res := s.vote(req.ID, "carol", aep.Answer{Option: "deny", Text: "not during the freeze"}); !res.Accepted() {
		t.Fatalf("carol's denial: %s", res.Raw)
	}
	res := s.result(call)
	if !res.IsError || !strings.Contains(toolText(t, res), "not during the freeze") || !strings.Contains(toolText(t, res), "carol") {
		t.Fatalf("denied call: isError %v text %q; want an error naming carol and her reason", res.IsError, toolText(t, res))
	}
	var d map[string]any
	json.Unmarshal(s.next("tool.denied").Data, &d)
	if d["by"] != "user_setting" || d["rule"] != "two" {
		t.Errorf("tool.denied %v; want by user_setting, rule two", d)
	}
	s.settle()
	if s.serverGot("two: drop") {
		t.Fatal("the server received the denied call")
	}
}

func TestPolicyTimeoutDenies(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	call := s.call("echo", map[string]any{"message": "quick: restart"}, nil)
	req := s.next("attention.requested")
	to := s.next("attention.timeout")
	if to.Subject != req.ID {
		t.Errorf("timeout subject %s; want %s", to.Subject, req.ID)
	}
	res := s.result(call)
	if !res.IsError || !strings.Contains(toolText(t, res), "no decision within") {
		t.Fatalf("timed-out call: isError %v text %q", res.IsError, toolText(t, res))
	}
	if r := rejected(t, s.vote(req.ID, "alice", aep.Answer{Option: "allow"})); r.Reason != aep.ReasonRefused {
		t.Errorf("a late approval: %+v; want refused", r)
	}
	s.settle()
	if s.serverGot("quick: restart") {
		t.Fatal("the server received the timed-out call")
	}
}

func TestPolicyClientCancelDismisses(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	ctxCall := make(chan error, 1)
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "echo", map[string]any{"message": "one: cancel me"}
	ctx, cancel := contextWithCancel()
	go func() {
		_, err := s.client.CallTool(ctx, req)
		ctxCall <- err
	}()
	ask := s.next("attention.requested")
	cancel() // mcp-go sends notifications/cancelled
	if err := <-ctxCall; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	res := s.next("attention.resolved")
	var rd aep.AttentionResolved
	json.Unmarshal(res.Data, &rd)
	if res.Subject != ask.ID || rd.Resolution != aep.ResolutionDismissed {
		t.Fatalf("attention.resolved %s %s; want %s dismissed", res.Subject, res.Data, ask.ID)
	}
	s.settle()
	for _, m := range s.rec.received() {
		if bytes.Contains(m, []byte("cancel me")) || bytes.Contains(m, []byte("notifications/cancelled")) {
			t.Fatalf("the server received %s; it never saw the held call", m)
		}
	}
}

func TestPolicyReloadKeepsTheHeldRevision(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	before := s.rel.Policy().Revision()
	call := s.call("echo", map[string]any{"message": "one: held"}, nil)
	req := s.next("attention.requested")
	// The new policy has no rule one: alice is no approver of anything.
	if _, changed, err := s.rel.Load([]byte("rules:\n  - {id: other, tool: nothing, action: ask, approvers: [dave]}\n")); err != nil || !changed {
		t.Fatalf("reload: changed %v err %v", changed, err)
	}
	if res := s.vote(req.ID, "alice", aep.Answer{Option: "allow"}); !res.Accepted() {
		t.Fatalf("alice's approval under the revision the call was held under: %s", res.Raw)
	}
	if got := toolText(t, s.result(call)); got != "one: held" {
		t.Fatalf("the approved call returned %q", got)
	}
	var rev string
	json.Unmarshal(req.Extensions[attention.ExtRevision], &rev)
	if rev != before {
		t.Errorf("the request names revision %s; want %s", rev, before)
	}
	// A new call is decided by the new policy: allowed by its default.
	if got := toolText(t, s.result(s.call("echo", map[string]any{"message": "one: after"}, nil))); got != "one: after" {
		t.Fatalf("the call after the reload returned %q", got)
	}
}

func TestPolicyAllowSessionRemembers(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	args := map[string]any{"message": "sess: status"}
	call := s.call("echo", args, nil)
	req := s.next("attention.requested")
	if d := permission(t, req); len(d.Options) != 3 || d.Options[1].ID != "allow-session" {
		t.Fatalf("options %+v; want allow, allow-session, deny", d.Options)
	}
	if res := s.vote(req.ID, "alice", aep.Answer{Option: "allow-session"}); !res.Accepted() {
		t.Fatalf("allow-session: %s", res.Raw)
	}
	s.result(call)
	// The same call again passes without asking; other arguments ask.
	if got := toolText(t, s.result(s.call("echo", args, nil))); got != "sess: status" {
		t.Fatalf("the remembered call returned %q", got)
	}
	s.call("echo", map[string]any{"message": "sess: other"}, nil)
	again := s.next("attention.requested")
	if again.ID == req.ID {
		t.Fatal("no new permission request for other arguments")
	}
	s.vote(again.ID, "alice", aep.Answer{Option: "deny"})
}

func TestPolicyKeepaliveWhileHeld(t *testing.T) {
	t.Parallel()
	rel, _ := policy.NewReloader([]byte(testPolicy))
	s := startSession(t, sessionConfig{opts: Options{Policy: rel, Keepalive: 20 * time.Millisecond}})
	progress := make(chan float64, 64)
	s.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			if v, ok := n.Params.AdditionalFields["progress"].(float64); ok {
				select {
				case progress <- v:
				default:
				}
			}
		}
	})
	call := s.call("echo", map[string]any{"message": "one: slow"}, &mcp.Meta{ProgressToken: "tok-held"})
	req := s.next("attention.requested")
	for i := 0; i < 2; i++ {
		select {
		case <-progress:
		case <-time.After(waitLimit):
			t.Fatal("no keepalive progress while the call is held")
		}
	}
	res, err := s.b.Intake().Submit(command(s.b.Session(), req.ID, aep.Answer{Option: "allow"}), control.Sender{Authenticated: true, By: "alice"})
	if err != nil || !res.Accepted() {
		t.Fatalf("approval: %v %s", err, res.Raw)
	}
	if got := toolText(t, s.result(call)); got != "one: slow" {
		t.Fatalf("got %q", got)
	}
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*waitLimit)
}

// TestPolicyAllowedCallsAllRecordedBeforeTheEnd: an allowed call's
// tool.requested and tool.completed are emitted off its path, after the
// messages are forwarded; none is lost for it. Calls made at once, then
// the client leaving at once, still leave every call's pair in the
// session log, each tool.completed after its own tool.requested (its
// cause), all before session.ended.
func TestPolicyAllowedCallsAllRecordedBeforeTheEnd(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	const n = 40
	calls := make([]<-chan callResult, n)
	for i := range calls {
		calls[i] = s.call("echo", map[string]any{"message": fmt.Sprintf("m%d", i)}, nil)
	}
	for i, c := range calls {
		if got := toolText(t, s.result(c)); got != fmt.Sprintf("m%d", i) {
			t.Fatalf("call %d returned %q", i, got)
		}
	}
	if err := s.close(); err != nil {
		t.Fatalf("Run after the client left: %v", err)
	}
	rep := s.checkLog()
	requested := map[string]bool{}
	completed := 0
	for i, ev := range rep.Lines {
		switch ev.Type {
		case "tool.requested":
			requested[ev.ID] = true
		case "tool.completed":
			if !requested[ev.Cause] {
				t.Errorf("tool.completed %s names cause %q, which no earlier tool.requested is", ev.ID, ev.Cause)
			}
			completed++
		case "session.ended":
			if i != len(rep.Lines)-1 {
				t.Errorf("session.ended is line %d of %d; want the last", i+1, len(rep.Lines))
			}
		}
	}
	if len(requested) != n || completed != n {
		t.Fatalf("the log holds %d tool.requested and %d tool.completed; want %d of each", len(requested), completed, n)
	}
}

// TestPolicyApprovedCallsRetryIsNotAskedAgain: a 2026-07-28 call that
// alice approved comes back from the server with input_required; the
// client answers it itself and retries the call with the requestState.
// The retry is the approved call itself (same arguments, rule and
// revision, within the approval's window): it goes to the server without
// a second permission request, and the client gets the final result.
func TestPolicyApprovedCallsRetryIsNotAskedAgain(t *testing.T) {
	t.Parallel()
	rel, err := policy.NewReloader([]byte("rules:\n  - {id: ask-mrtr, tool: mrtr-ask, action: ask, approvers: [alice]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	handler := elicitingClient{func(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: "accept", Content: map[string]any{"who": "from-the-ide"}}}, nil
	}}
	s := &policySession{session: startSession(t, sessionConfig{protocol: mcp.ProtocolVersion20260728, opts: Options{Policy: rel},
		clientOpts: []client.ClientOption{client.WithElicitationHandler(handler)}}), rel: rel}
	call := s.call("mrtr-ask", map[string]any{"rounds": 1}, nil)
	perm := s.next("attention.requested")
	permission(t, perm)
	if res := s.vote(perm.ID, "alice", aep.Answer{Option: "allow"}); !res.Accepted() {
		t.Fatalf("alice's approval: %s", res.Raw)
	}
	// The server's input_required raises its question, which the client
	// answers itself; its retry must not raise a second permission
	// request: the call ends first.
	deadline := time.After(waitLimit)
	for {
		select {
		case d := <-s.events.C:
			if d.Event.Type == "attention.requested" && strings.Contains(string(d.Event.Data), `"kind":"permission"`) {
				t.Fatalf("the approved call's retry was asked about again: %s", d.Event.Data)
			}
			continue
		case r := <-call:
			if r.err != nil {
				t.Fatalf("tools/call: %v", r.err)
			}
			if got := toolText(t, r.res); got != `{"action":"accept","content":{"who":"from-the-ide"}}` {
				t.Fatalf("the server got %s", got)
			}
		case <-deadline:
			t.Fatalf("the call did not end within %s", waitLimit)
		}
		break
	}
}

// TestPolicyStreamedResultIsRecorded: an allowed call whose result is
// over what the bridge reads whole (4 MiB on stdio) is relayed as a
// stream, and still ends on the bus: tool.completed, naming its
// tool.requested.
func TestPolicyStreamedResultIsRecorded(t *testing.T) {
	t.Parallel()
	s := startPolicySession(t, testPolicy)
	const size = 5 << 20
	res := s.result(s.call("blob", map[string]any{"bytes": size}, nil))
	if got := len(toolText(t, res)); got != size {
		t.Fatalf("the client got %d bytes; want %d", got, size)
	}
	req := s.next("tool.requested")
	done := s.next("tool.completed")
	if done.Cause != req.ID || done.Subject != "blob" {
		t.Fatalf("tool.completed cause %s subject %s; want %s and blob", done.Cause, done.Subject, req.ID)
	}
	if len(done.Data) > 1024 {
		t.Fatalf("tool.completed carries %d bytes; the result is never on the bus", len(done.Data))
	}
}
