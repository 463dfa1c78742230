package main

import (
	"strings"
	"testing"
)

// TestAMalformedHeaderIsNotEchoed: a --header or --header-env value that
// is not 'Name: value' is most likely a credential given without its
// name (--header "Bearer …"); the usage error says which flag is wrong
// and never shows the value, which would land in the MCP host's log.
func TestAMalformedHeaderIsNotEchoed(t *testing.T) {
	const secret = "malformed-header-secret-0123456789"
	t.Setenv("AEP_TEST_BAD_HEADER", "Bearer "+secret)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "--header", args: []string{"--header", "Bearer " + secret}, want: "--header"},
		{name: "--header=", args: []string{"--header=Bearer " + secret}, want: "--header"},
		{name: "the second --header", args: []string{"--header", "X-Ok: 1", "--header", ": " + secret}, want: "--header"},
		{name: "--header-env", args: []string{"--header-env", "AEP_TEST_BAD_HEADER"}, want: "--header-env AEP_TEST_BAD_HEADER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, tc.args...), "--url", "http://127.0.0.1:9/mcp", "--listen", "off", "--log-dir", "off")
			out, errOut, code := cli(t, args...)
			if code == 0 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "'Name: value'") {
				t.Fatalf("exit %d; stderr %q; want a usage error naming %s", code, errOut, tc.want)
			}
			if strings.Contains(out+errOut, secret) {
				t.Errorf("the error shows the header's value:\n%s", errOut)
			}
		})
	}
}
