package attention

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/policy"
)

func TestPermissionVerdict(t *testing.T) {
	t.Parallel()
	offers := []policy.Verdict{policy.VerdictAllow, policy.VerdictAllowSession, policy.VerdictDeny}
	type out struct {
		Verdict policy.Verdict
		Reason  string
		Err     bool
	}
	for _, tc := range []struct {
		name string
		a    aep.Answer
		want out
	}{
		{"option allow", aep.Answer{Option: "allow"}, out{Verdict: policy.VerdictAllow}},
		{"option allow ignores text", aep.Answer{Option: "allow", Text: "sure"}, out{Verdict: policy.VerdictAllow}},
		{"option deny keeps the reason", aep.Answer{Option: "deny", Text: "freeze"}, out{Verdict: policy.VerdictDeny, Reason: "freeze"}},
		{"text naming an option", aep.Answer{Text: "  Allow "}, out{Verdict: policy.VerdictAllow}},
		{"text naming a label", aep.Answer{Text: "allow for this session"}, out{Verdict: policy.VerdictAllowSession}},
		// AEP-0002 §5.3: unmatched text never allows a permission request.
		{"other text denies with it as the reason", aep.Answer{Text: "yes please"}, out{Verdict: policy.VerdictDeny, Reason: "yes please"}},
		{"no option, no text", aep.Answer{}, out{Err: true}},
		{"values", aep.Answer{Values: map[string]any{"x": true}}, out{Err: true}},
		{"an option not offered", aep.Answer{Option: "accept"}, out{Err: true}},
	} {
		v, reason, err := permissionVerdict(offers, tc.a)
		got := out{Verdict: v, Reason: reason, Err: err != nil}
		if err != nil {
			got = out{Err: true}
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, d)
		}
	}
}
