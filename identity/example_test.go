package identity_test

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// An operator is added with a fresh credential, which is shown once; the
// document keeps only its verifier, and a directory of the document tells
// who presents it.
func Example() {
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	credential, verifier, err := identity.NewCredential(identity.KindOperator, rand.Reader)
	if err != nil {
		panic(err)
	}
	scope, _ := identity.ParseScope([]string{"deploy-*"})
	var doc identity.Document
	doc.AddOperator(identity.Operator{Name: "alice", Can: identity.Answer, Servers: scope, Created: now, Credential: &verifier})
	fmt.Println("stored in clear:", strings.Contains(string(doc.Encode()), credential))

	dir := identity.NewDirectory(&doc)
	o, err := dir.Authenticate(credential, now)
	fmt.Println(o.Name, o.Can, o.Servers, err)
	fmt.Println("reaches deploy-web:", o.Servers.Allows("deploy-web"), "billing:", o.Servers.Allows("billing"))

	doc.RemoveOperator("alice")
	_, err = identity.NewDirectory(&doc).Authenticate(credential, now)
	fmt.Println(err)
	// Output:
	// stored in clear: false
	// alice answer deploy-* <nil>
	// reaches deploy-web: true billing: false
	// no record has this credential: it was revoked, or never issued
}
