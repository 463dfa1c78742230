package endpoint

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenteventprotocol/aep-mcp-bridge/authority"
	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
	"github.com/agenteventprotocol/aep-mcp-bridge/plane"
)

// TestPlanePrincipalCarriesGroups: a command another process of the
// operator plane owns travels with its operator's identity groups, which
// the owner's approval policy may name as approvers.
func TestPlanePrincipalCarriesGroups(t *testing.T) {
	t.Parallel()
	got := planePrincipal(authority.Operator(identity.Operator{Name: "alice", Can: identity.Answer, Groups: []string{"sre"}}))
	want := plane.Principal{Name: "alice", Rights: []string{plane.RightRead, plane.RightAnswer}, Scopes: []string{"*"}, Groups: []string{"sre"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("planePrincipal (-want +got):\n%s", diff)
	}
}
