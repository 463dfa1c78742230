package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/elicit"
)

func TestAcceptTypedContent(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	started := s.next("session.started")
	var sd map[string]map[string]string
	json.Unmarshal(started.Data, &sd)
	if sd["client"]["name"] != "e2e-client" || sd["client"]["version"] != "1.2.3" {
		t.Errorf("session.started client: got %v", sd)
	}
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	if req.Subject != "elicit-test-server" || req.Severity != aep.SeverityNotice {
		t.Errorf("attention.requested subject %q severity %s; want elicit-test-server, notice", req.Subject, req.Severity)
	}
	var data aep.AttentionRequested
	json.Unmarshal(req.Data, &data)
	if data.Kind != "form" || len(data.Fields) != 4 || data.ExpiresAt == "" || strings.Join(data.RespondVia, ",") != "control" {
		t.Errorf("attention.requested data: %+v", data)
	}
	res, _ := s.respond(req.ID, aep.Answer{Values: map[string]any{
		"environment": "production", "replicas": json.Number("3"), "reason": "hotfix", "confirm": true}})
	if !res.Accepted() {
		t.Fatalf("answer not accepted: %s", res.Raw)
	}
	got := elicitResult(t, s.result(call))
	if got["action"] != "accept" {
		t.Fatalf("action %v; want accept", got["action"])
	}
	content := got["content"].(map[string]any)
	if n, ok := content["replicas"].(json.Number); !ok || n.String() != "3" {
		t.Errorf("replicas: got %#v; want the integer 3", content["replicas"])
	}
	if content["environment"] != "production" || content["confirm"] != true || content["reason"] != "hotfix" {
		t.Errorf("content: got %v", content)
	}
	answered := s.next("attention.answered")
	resolved := s.next("attention.resolved")
	if answered.Subject != req.ID || resolved.Subject != req.ID || answered.Cause != res.Ack.Cause || resolved.Cause != answered.ID {
		t.Errorf("lifecycle links: answered %s/%s resolved %s/%s", answered.Subject, answered.Cause, resolved.Subject, resolved.Cause)
	}
	var ad aep.AttentionAnswered
	json.Unmarshal(answered.Data, &ad)
	if ad.By != "token holder" || ad.Via != "control" {
		t.Errorf("answered by %q via %q; want the token's holder (who submitted it, whatever the command's agent) via control", ad.By, ad.Via)
	}
	if *answered.Seq <= *res.Ack.Seq {
		t.Errorf("control.accepted (seq %d) must precede attention.answered (seq %d)", *res.Ack.Seq, *answered.Seq)
	}
}

func TestDecline(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	if res, _ := s.respond(req.ID, aep.Answer{Text: "  Decline "}); !res.Accepted() {
		t.Fatalf("decline not accepted: %s", res.Raw)
	}
	if got := elicitResult(t, s.result(call)); got["action"] != "decline" || got["content"] != nil {
		t.Fatalf("got %v; want decline without content", got)
	}
}

func TestTimeoutBecomesCancel(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{opts: Options{Timeout: 300 * time.Millisecond}})
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	to := s.next("attention.timeout")
	if to.Subject != req.ID || to.Cause != req.ID {
		t.Errorf("timeout links: subject %s cause %s; want %s", to.Subject, to.Cause, req.ID)
	}
	if got := elicitResult(t, s.result(call)); got["action"] != "cancel" {
		t.Fatalf("got %v; want cancel", got)
	}
	// A late answer is refused, and nothing more reaches the server.
	if res, _ := s.respond(req.ID, aep.Answer{Option: "decline"}); res.Accepted() {
		t.Fatalf("late answer accepted: %s", res.Raw)
	}
}

func TestInvalidAnswerIsNackedAndStaysPending(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	tests := []struct {
		values     map[string]any
		wantDetail string
	}{
		{map[string]any{"environment": "production", "replicas": "three", "confirm": true}, `field "replicas": type`},
		{map[string]any{"environment": "moon", "confirm": true}, `field "environment": enum`},
		{map[string]any{"environment": "staging"}, `field "confirm": required`},
	}
	for _, tt := range tests {
		res, _ := s.respond(req.ID, aep.Answer{Values: tt.values})
		var rej aep.Rejected
		json.Unmarshal(res.Ack.Data, &rej)
		if res.Ack.Type != "control.rejected" || rej.Reason != "invalid" || !strings.Contains(rej.Detail, tt.wantDetail) {
			t.Fatalf("got %s; want an invalid nack naming %s", res.Raw, tt.wantDetail)
		}
		if strings.Contains(rej.Detail, "three") || strings.Contains(rej.Detail, "moon") {
			t.Errorf("nack detail quotes the answer: %q", rej.Detail)
		}
	}
	if n := s.b.Manager().Len(); n != 1 {
		t.Fatalf("%d questions pending after invalid answers; want 1", n)
	}
	if res, _ := s.respond(req.ID, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": false}}); !res.Accepted() {
		t.Fatalf("valid answer after nacks: %s", res.Raw)
	}
	if got := elicitResult(t, s.result(call)); got["action"] != "accept" {
		t.Fatalf("got %v", got)
	}
}

func TestDuplicateCommandGetsOneDecision(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	cmd := command(s.b.Session(), req.ID, aep.Answer{Values: map[string]any{"environment": "staging", "confirm": true}})
	first, err := s.b.Intake().Submit(cmd, controlSender)
	if err != nil || !first.Accepted() {
		t.Fatalf("first delivery: %v %s", err, first.Raw)
	}
	second, err := s.b.Intake().Submit(cmd, controlSender)
	if err != nil || !second.Duplicate || string(second.Raw) != string(first.Raw) {
		t.Fatalf("redelivery: duplicate=%v\n got %s\nwant %s", second.Duplicate, second.Raw, first.Raw)
	}
	s.result(call)
	s.close()
	rep := s.checkLog()
	if rep.Types["control.accepted"] != 1 || rep.Types["attention.answered"] != 1 {
		t.Fatalf("log has %d acks and %d answers; want one decision", rep.Types["control.accepted"], rep.Types["attention.answered"])
	}
}

func TestServerCancelDismisses(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	ask := s.call("ask", map[string]any{"schema": "pinned", "key": "k1"}, nil)
	req := s.next("attention.requested")
	s.result(s.call("cancel-ask", map[string]any{"key": "k1"}, nil))
	resolved := s.next("attention.resolved")
	var rd aep.AttentionResolved
	json.Unmarshal(resolved.Data, &rd)
	if resolved.Subject != req.ID || rd.Resolution != "dismissed" {
		t.Fatalf("got %s %+v; want dismissed for %s", resolved.Subject, rd, req.ID)
	}
	if res := s.result(ask); !res.IsError {
		t.Errorf("the withdrawn ask returned %v; want the server's cancellation error", toolText(t, res))
	}
	if res, _ := s.respond(req.ID, aep.Answer{Option: "decline"}); res.Accepted() {
		t.Fatalf("answer to a dismissed question accepted")
	}
}

// elicitingClient declares elicitation and answers with handler.
type elicitingClient struct {
	handle func(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
}

func (c elicitingClient) Elicit(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return c.handle(ctx, r)
}

func TestClientWinsRace(t *testing.T) {
	t.Parallel()
	handler := elicitingClient{func(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: "accept",
			Content: map[string]any{"environment": "staging", "confirm": true, "reason": "typed in the IDE"}}}, nil
	}}
	s := startSession(t, sessionConfig{clientOpts: []client.ClientOption{client.WithElicitationHandler(handler)}})
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	var data aep.AttentionRequested
	json.Unmarshal(req.Data, &data)
	if strings.Join(data.RespondVia, ",") != "control,oob" {
		t.Errorf("respond_via %v; want control,oob", data.RespondVia)
	}
	got := elicitResult(t, s.result(call))
	if c := got["content"].(map[string]any); got["action"] != "accept" || c["reason"] != "typed in the IDE" {
		t.Fatalf("server got %v; want the client's answer", got)
	}
	answered := s.next("attention.answered")
	var ad aep.AttentionAnswered
	json.Unmarshal(answered.Data, &ad)
	if ad.Via != "oob" || ad.By != "e2e-client" {
		t.Errorf("answered via %q by %q; want oob by e2e-client", ad.Via, ad.By)
	}
	s.next("attention.resolved")
	if res, _ := s.respond(req.ID, aep.Answer{Option: "decline"}); res.Accepted() {
		t.Fatalf("operator answer after the client won was accepted")
	}
}

func TestOperatorWinsRaceAndClientCopyIsCancelled(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	handler := elicitingClient{func(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		<-release
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: "decline"}}, nil
	}}
	cancelled := make(chan mcp.JSONRPCNotification, 1)
	s := startSession(t, sessionConfig{clientOpts: []client.ClientOption{client.WithElicitationHandler(handler)}})
	s.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/cancelled" {
			select {
			case cancelled <- n:
			default:
			}
		}
	})
	defer once.Do(func() { close(release) })
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	if res, _ := s.respond(req.ID, aep.Answer{Values: map[string]any{"environment": "production", "confirm": true}}); !res.Accepted() {
		t.Fatalf("operator answer: %s", res.Raw)
	}
	if got := elicitResult(t, s.result(call)); got["action"] != "accept" {
		t.Fatalf("server got %v; want the operator's accept", got)
	}
	select {
	case <-cancelled:
	case <-time.After(waitLimit):
		t.Fatal("the client's copy was not cancelled")
	}
	once.Do(func() { close(release) }) // the client's late decline must be dropped
	// The server is still healthy and got exactly one answer.
	if txt := toolText(t, s.result(s.call("echo", map[string]any{"message": "still here"}, nil))); txt != "still here" {
		t.Fatalf("echo after the race: %q", txt)
	}
}

func TestUnsupportedSchema(t *testing.T) {
	t.Parallel()
	t.Run("client cannot elicit: server gets an error naming the property", func(t *testing.T) {
		s := startSession(t, sessionConfig{})
		res := s.result(s.call("ask", map[string]any{"schema": "nested"}, nil))
		if txt := toolText(t, res); !res.IsError || !strings.Contains(txt, "properties.address") {
			t.Fatalf("got %q; want an error naming properties.address", txt)
		}
		raised := s.next("error.raised")
		if raised.Subject != "elicit-test-server" {
			t.Errorf("error.raised subject %q", raised.Subject)
		}
	})
	t.Run("client can elicit: the question goes to the client whole", func(t *testing.T) {
		var got mcp.ElicitationRequest
		handler := elicitingClient{func(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			got = r
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: "accept",
				Content: map[string]any{"address": map[string]any{"city": "Oslo"}}}}, nil
		}}
		s := startSession(t, sessionConfig{clientOpts: []client.ClientOption{client.WithElicitationHandler(handler)}})
		res := elicitResult(t, s.result(s.call("ask", map[string]any{"schema": "nested"}, nil)))
		if res["action"] != "accept" || got.Params.RequestedSchema == nil {
			t.Fatalf("got %v", res)
		}
		req := s.next("attention.requested")
		var data aep.AttentionRequested
		json.Unmarshal(req.Data, &data)
		if data.Kind != "input" || strings.Join(data.RespondVia, ",") != "oob" {
			t.Errorf("bus record: %+v; want an informational oob request", data)
		}
		s.next("attention.resolved")
	})
}

func TestKeepaliveProgress(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{opts: Options{Keepalive: 20 * time.Millisecond}})
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
	call := s.call("ask", map[string]any{"schema": "pinned"}, &mcp.Meta{ProgressToken: "tok-1"})
	req := s.next("attention.requested")
	var last float64
	for i := 0; i < 3; i++ {
		select {
		case v := <-progress:
			if v <= last {
				t.Fatalf("progress %v after %v is not increasing", v, last)
			}
			last = v
		case <-time.After(waitLimit):
			t.Fatal("no keepalive progress while the question waits")
		}
	}
	s.respond(req.ID, aep.Answer{Option: "cancel"})
	if got := elicitResult(t, s.result(call)); got["action"] != "cancel" {
		t.Fatalf("got %v", got)
	}
}

func TestServerDeathFailsInflightAndDismisses(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	ask := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	s.next("attention.requested")
	crash := s.call("crash", map[string]any{"code": 3}, nil)
	for _, ch := range []<-chan callResult{ask, crash} {
		select {
		case r := <-ch:
			if r.err == nil || !strings.Contains(r.err.Error(), "status 3") {
				t.Errorf("in-flight call: got %v; want an error naming status 3", r.err)
			}
		case <-time.After(waitLimit):
			t.Fatal("in-flight call hung after the server died")
		}
	}
	resolved := s.next("attention.resolved")
	var rd aep.AttentionResolved
	json.Unmarshal(resolved.Data, &rd)
	if rd.Resolution != "dismissed" {
		t.Errorf("pending question: %+v; want dismissed", rd)
	}
	err := s.close()
	if !errors.Is(err, ErrUpstreamExited) {
		t.Fatalf("Run returned %v; want ErrUpstreamExited", err)
	}
	rep := s.checkLog()
	var ended map[string]any
	json.Unmarshal(rep.Lines[len(rep.Lines)-1].Data, &ended)
	if ended["reason"] != "error" {
		t.Errorf("session.ended reason %v; want error", ended["reason"])
	}
}

func TestRouteRemoteDoesNotAskTheClient(t *testing.T) {
	t.Parallel()
	handler := elicitingClient{func(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		t.Error("route remote forwarded the question to the client")
		return nil, errors.New("unexpected")
	}}
	s := startSession(t, sessionConfig{opts: Options{Route: elicit.RouteRemote}, clientOpts: []client.ClientOption{client.WithElicitationHandler(handler)}})
	call := s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	s.respond(req.ID, aep.Answer{Option: "decline"})
	if got := elicitResult(t, s.result(call)); got["action"] != "decline" {
		t.Fatalf("got %v", got)
	}
}

func TestMetadataCeilingKeepsFreeTextOffTheBus(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{opts: Options{AttentionCapture: aep.CaptureMetadata}})
	call := s.call("ask", map[string]any{"schema": "pinned", "message": "Deploy for alice@example.com"}, nil)
	req := s.next("attention.requested")
	var data aep.AttentionRequested
	json.Unmarshal(req.Data, &data)
	if data.Prompt != "aep-mcp-bridge requests input (4 fields)" {
		t.Errorf("metadata prompt: %q", data.Prompt)
	}
	for _, f := range data.Fields {
		if f.Label != f.ID {
			t.Errorf("metadata label of %s: %q; want the id", f.ID, f.Label)
		}
	}
	s.respond(req.ID, aep.Answer{Values: map[string]any{"environment": "staging", "reason": "SECRET-REASON", "confirm": true}})
	got := elicitResult(t, s.result(call))
	if got["content"].(map[string]any)["reason"] != "SECRET-REASON" {
		t.Errorf("the server must get the real answer: %v", got)
	}
	answered := s.next("attention.answered")
	if strings.Contains(string(answered.Data), "SECRET-REASON") {
		t.Errorf("free text reached the bus at metadata: %s", answered.Data)
	}
}

func TestClientLeavingDismissesPendingQuestions(t *testing.T) {
	t.Parallel()
	s := startSession(t, sessionConfig{})
	s.call("ask", map[string]any{"schema": "pinned"}, nil)
	req := s.next("attention.requested")
	if err := s.close(); err != nil {
		t.Fatalf("Run after the client left: %v", err)
	}
	rep := s.checkLog()
	n := len(rep.Lines)
	last, prev := rep.Lines[n-1], rep.Lines[n-2]
	if prev.Type != "attention.resolved" || prev.Subject != req.ID || !strings.Contains(string(prev.Data), "dismissed") || last.Type != "session.ended" {
		t.Fatalf("log ends with %s %s / %s; want the question dismissed, then session.ended", prev.Type, prev.Data, last.Type)
	}
}

// TestServerNeverGetsTheBridgesToken: the spawned server's environment
// lacks the bridge's own credentials, whatever else it inherits.
func TestServerNeverGetsTheBridgesToken(t *testing.T) {
	t.Setenv("AEP_TOKEN", "bridge-token-0123456789abcdef0123456789")
	t.Setenv("AEP_MCP_TOKEN", "mcp-token-0123456789abcdef0123456789")
	t.Setenv("SERVER_SETTING", "kept")
	var stderr lockedWriter
	s := startSession(t, sessionConfig{opts: Options{Command: []string{"sh", "-c", `env >&2; exec "$0"`, serverBin}, ServerStderr: &stderr}})
	stderr.waitFor(t, "SERVER_SETTING=kept")
	s.close()
	if out := stderr.String(); strings.Contains(out, "AEP_TOKEN") || strings.Contains(out, "token-0123456789") {
		t.Fatalf("the server's environment holds the bridge's token:\n%s", out)
	}
}
