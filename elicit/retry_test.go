package elicit

import (
	"testing"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

// TestRetryGrantIsBoundToTheCall: the approval an approved call's
// input_required left under its requestState covers a retry only with
// the same arguments, under the same rule and policy revision, before it
// expires, and only once; a requestState it never gave covers nothing.
func TestRetryGrantIsBoundToTheCall(t *testing.T) {
	t.Parallel()
	const doc = "rules:\n  - {id: ask-deploy, tool: deploy, action: ask, approvers: [alice]}\n"
	pol, err := policy.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	other, err := policy.Parse([]byte(doc + "  - {id: extra, tool: other, action: deny, reason: no}\n"))
	if err != nil {
		t.Fatal(err)
	}
	args := []byte(`{"env":"prod"}`)
	digest := policy.ArgsDigest(args)
	decide := func(p *policy.Policy, a []byte) policy.Decision {
		return p.Decide(policy.Call{Server: "s", Tool: "deploy", Arguments: a})
	}
	approved := func(now time.Time) *policy.Grant {
		h, err := policy.NewHold(decide(pol, args), "sess", digest, now)
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Vote(policy.Vote{Actor: policy.Actor{Name: "alice"}, Verdict: policy.VerdictAllow}, now)
		if err != nil || out.Grant == nil {
			t.Fatalf("alice's approval: %+v %v", out, err)
		}
		return out.Grant
	}
	retry := func(state string) *message { return &message{ReqState: []byte(`"` + state + `"`)} }
	for _, tc := range []struct {
		name   string
		grant  *policy.Grant
		state  string
		d      policy.Decision
		digest string
		want   bool
	}{
		{"the same call", approved(time.Now()), "S", decide(pol, args), digest, true},
		{"other arguments", approved(time.Now()), "S", decide(pol, []byte(`{"env":"dev"}`)), policy.ArgsDigest([]byte(`{"env":"dev"}`)), false},
		{"another policy revision", approved(time.Now()), "S", decide(other, args), digest, false},
		{"expired", approved(time.Now().Add(-2 * policy.CallGrantWindow)), "S", decide(pol, args), digest, false},
		{"a requestState the server never gave", approved(time.Now()), "forged", decide(pol, args), digest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Options{Client: newMemConn(), Server: newMemConn(), Session: "sess"})
			p.retries.put("S", tc.grant)
			if _, got := p.retryGrant(retry(tc.state), tc.d, tc.digest); got != tc.want {
				t.Fatalf("retryGrant = %v; want %v", got, tc.want)
			}
			if _, again := p.retryGrant(retry(tc.state), tc.d, tc.digest); again {
				t.Fatal("a requestState covered a second retry")
			}
		})
	}
}
