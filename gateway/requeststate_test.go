package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStateWrapperChecks: a wrapper opens only with the fleet's key,
// unaltered, before it expires, on its own request and for its own
// client; each failure says which.
func TestStateWrapperChecks(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_900_000_000_000)
	fleet, err := newStateSealer("the fleet's token")
	if err != nil {
		t.Fatal(err)
	}
	peer, _ := newStateSealer("the fleet's token")
	stranger, _ := newStateSealer("another fleet's token")
	lone, _ := newStateSealer("")
	ask := requestBinding("tools/call", "ask")
	want := sealedState{round: newRoundID(), expires: now.Add(time.Minute), client: clientBinding("token:0123"), request: ask, state: json.RawMessage(`{"step":2}`)}
	w, _ := json.Marshal(fleet.seal(want))
	altered := []byte(string(w))
	altered[len(altered)/2] ^= 0x01
	tests := []struct {
		name    string
		sealer  *stateSealer
		wrapper string
		now     time.Time
		request binding
		who     principal
		wantErr error
	}{
		{"its own gateway", fleet, string(w), now, ask, "token:0123", nil},
		{"another gateway of the fleet", peer, string(w), now, ask, "token:0123", nil},
		{"a gateway of another fleet", stranger, string(w), now, ask, "token:0123", errNotMinted},
		{"a gateway with no fleet secret", lone, string(w), now, ask, "token:0123", errNotMinted},
		{"altered", fleet, string(altered), now, ask, "token:0123", errNotMinted},
		{"the server's own state", fleet, `"ask-1"`, now, ask, "token:0123", errNotMinted},
		{"another format version", fleet, strings.Replace(string(w), "aepgw1.", "aepgw2.", 1), now, ask, "token:0123", errNotMinted},
		{"not a string", fleet, `{"round":1}`, now, ask, "token:0123", errNotMinted},
		{"at its expiry", fleet, string(w), now.Add(time.Minute), ask, "token:0123", errExpired},
		{"another tool", fleet, string(w), now, requestBinding("tools/call", "echo"), "token:0123", errOtherReq},
		{"another method", fleet, string(w), now, requestBinding("prompts/get", "ask"), "token:0123", errOtherReq},
		{"another client", fleet, string(w), now, ask, "anonymous", errOtherWho},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.sealer.open(json.RawMessage(tc.wrapper), tc.now, tc.request, tc.who)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v; want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got.round != want.round || !got.expires.Equal(want.expires) || string(got.state) != string(want.state) {
				t.Errorf("opened %+v; want %+v", got, want)
			}
		})
	}
}

// TestRoundTable: a round is taken once; a round the table does not know
// is recorded as used when taken; forgotten rounds and expired ones go;
// a full table refuses to record more.
func TestRoundTable(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_900_000_000_000)
	sess := &session{}
	var tb roundTable
	open, foreign := newRoundID(), newRoundID()
	tb.add(open, &roundEntry{sess: sess, expires: now.Add(time.Minute)}, now)
	if got, err := tb.take(open, now.Add(time.Minute), now); got != sess || err != nil {
		t.Errorf("the first retry: got %v, %v; want its session", got, err)
	}
	if _, err := tb.take(open, now.Add(time.Minute), now); !errors.Is(err, errReplayed) {
		t.Errorf("the second retry: got %v; want errReplayed", err)
	}
	if got, err := tb.take(foreign, now.Add(time.Minute), now); got != nil || err != nil {
		t.Errorf("another gateway's round: got %v, %v; want no session", got, err)
	}
	if _, err := tb.take(foreign, now.Add(time.Minute), now); !errors.Is(err, errReplayed) {
		t.Errorf("another gateway's round again: got %v; want errReplayed", err)
	}
	left := newRoundID()
	tb.add(left, &roundEntry{sess: sess, expires: now.Add(time.Minute)}, now)
	tb.forget(left, sess)
	if _, ok := tb.byID[left]; ok {
		t.Error("a round its session forgot is still kept")
	}
	tb.sweep(now.Add(time.Minute))
	if n := len(tb.byID); n != 0 {
		t.Errorf("after every round expired: %d kept", n)
	}
	for range maxRounds {
		if !tb.add(newRoundID(), &roundEntry{expires: now.Add(time.Hour), used: true}, now) {
			t.Fatal("the table refused a round before it was full")
		}
	}
	if _, err := tb.take(newRoundID(), now.Add(time.Hour), now); !errors.Is(err, errTooManyRounds) {
		t.Errorf("a retry with the table full: got %v; want errTooManyRounds", err)
	}
	if _, err := tb.take(newRoundID(), now.Add(2*time.Hour), now.Add(time.Hour)); err != nil {
		t.Errorf("a retry once the others expired: %v", err)
	}
}

// TestReplaceMember: what replaceMember rewrites, what it leaves, and
// what it refuses.
func TestReplaceMember(t *testing.T) {
	t.Parallel()
	mark := func(json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"W"`), nil }
	tests := []struct {
		name, in, container string
		want                string // "" when not found; "!" when refused
	}{
		{"a retry", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","requestState":"s","arguments":{"x":[1, 2]}}}`, "params",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","requestState":"W","arguments":{"x":[1, 2]}}}`},
		{"a result", `{"id":1,"result":{"resultType":"input_required","requestState":{"any":"json"}}}`, "result",
			`{"id":1,"result":{"resultType":"input_required","requestState":"W"}}`},
		{"an escaped name", `{"params":{"request\u0053tate":"s"}}`, "params", `{"params":{"requestState":"W"}}`},
		{"no requestState", `{"params":{"name":"a"}}`, "params", ""},
		{"no params", `{"id":1,"method":"ping"}`, "params", ""},
		{"params that are no object", `{"params":[1]}`, "params", ""},
		{"requestState deeper down", `{"params":{"arguments":{"requestState":"s"}}}`, "params", ""},
		{"another case", `{"params":{"RequestState":"s"}}`, "params", "!"},
		{"twice", `{"params":{"requestState":"a","requestState":"b"}}`, "params", "!"},
		{"params twice", `{"params":{"requestState":"a"},"params":{}}`, "params", "!"},
		{"params in another case", `{"Params":{"requestState":"a"}}`, "params", "!"},
		{"not an object", `[{"params":{}}]`, "params", "!"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, found, err := replaceMember([]byte(tc.in), tc.container, "requestState", mark)
			switch {
			case tc.want == "!":
				if err == nil {
					t.Errorf("got %s; want it refused", out)
				}
			case tc.want == "":
				if err != nil || found || string(out) != tc.in {
					t.Errorf("got %s, %v, %v; want it as it was", out, found, err)
				}
			default:
				if err != nil || !found {
					t.Fatalf("got %v, %v; want it rewritten", found, err)
				}
				if diff := cmp.Diff(tc.want, string(out)); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}
