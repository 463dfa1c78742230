package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// TestDescribeNetErr sends real requests that fail in each way the advice
// distinguishes, and checks the advice and that the cause stays matchable.
func TestDescribeNetErr(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	defer untrusted.Close()
	wantsClientCert := httptest.NewUnstartedServer(http.NotFoundHandler())
	wantsClientCert.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	wantsClientCert.StartTLS()
	defer wantsClientCert.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	tests := []struct {
		name   string
		client *http.Client
		url    string
		want   string
		cause  func(error) bool
	}{
		{name: "nothing listens", client: http.DefaultClient, url: closed.URL, want: "cannot connect to " + closed.URL + ": ",
			cause: func(err error) bool { _, ok := errors.AsType[*net.OpError](err); return ok }},
		{name: "certificate of an unknown authority", client: http.DefaultClient, url: untrusted.URL, want: "TLS failed talking to",
			cause: func(err error) bool { _, ok := errors.AsType[*tls.CertificateVerificationError](err); return ok }},
		{name: "https to a plain HTTP port", client: http.DefaultClient, url: strings.Replace(plain.URL, "http:", "https:", 1), want: "check the URL's scheme",
			cause: func(err error) bool { return errors.Is(err, http.ErrSchemeMismatch) }},
		{name: "the server refuses the handshake", client: wantsClientCert.Client(), url: wantsClientCert.URL, want: "TLS failed talking to",
			cause: func(err error) bool { op, ok := errors.AsType[*net.OpError](err); return ok && op.Op == "remote error" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := tt.client.Get(tt.url)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s succeeded; the test needs it to fail", tt.url)
			}
			got := describeNetErr(tt.url, err)
			if !strings.Contains(got.Error(), tt.want) {
				t.Errorf("got %q; want it to contain %q", got, tt.want)
			}
			if !tt.cause(got) {
				t.Errorf("got %v; want the cause matchable with errors.As", got)
			}
		})
	}
}

func TestDescribeNetErrDNS(t *testing.T) {
	cause := &url.Error{Op: "Get", URL: "http://mcp.invalid/", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "mcp.invalid", IsNotFound: true}}}
	got := describeNetErr("http://mcp.invalid/", cause)
	if want := "cannot resolve the server's host (http://mcp.invalid/): lookup mcp.invalid: no such host; check --url"; got.Error() != want {
		t.Errorf("got %q; want %q", got, want)
	}
	if _, ok := errors.AsType[*net.DNSError](got); !ok {
		t.Errorf("got %v; want a *net.DNSError inside", got)
	}
}

// TestTLSFailureTypes checks each certificate error type on its own: a
// proxy or a custom dialer may return them without crypto/tls's wrapper.
func TestTLSFailureTypes(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "unknown authority", err: x509.UnknownAuthorityError{}, want: true},
		{name: "wrong host", err: x509.HostnameError{Host: "a"}, want: true},
		{name: "expired", err: x509.CertificateInvalidError{Reason: x509.Expired}, want: true},
		{name: "not TLS", err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, want: true},
		{name: "an alert we sent", err: tls.AlertError(42), want: true},
		{name: "wrapped", err: &url.Error{Op: "Post", URL: "https://x", Err: x509.UnknownAuthorityError{}}, want: true},
		{name: "a reset connection", err: &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}},
		{name: "a message that mentions a certificate", err: errors.New("the certificate store is full")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isTLSFailure(tt.err); got != tt.want {
				t.Fatalf("got %v; want %v", got, tt.want)
			}
		})
	}
}

func TestHTTPStatusError(t *testing.T) {
	tests := []struct {
		name   string
		err    *HTTPStatusError
		unauth bool
		want   string
	}{
		{name: "401", err: &HTTPStatusError{Method: "POST", URL: "http://s/mcp", Code: 401}, unauth: true,
			want: "the server wants credentials (HTTP 401 from http://s/mcp); pass --header 'Authorization: …' with the server's credentials"},
		{name: "403", err: &HTTPStatusError{Method: "GET", URL: "http://s/sse", Code: 403, Body: "no"}, unauth: true,
			want: "the server wants credentials (HTTP 403 from http://s/sse); pass --header 'Authorization: …' with the server's credentials"},
		{name: "405", err: &HTTPStatusError{Method: "GET", URL: "http://s/mcp", Code: 405}, want: "the server answered GET with HTTP 405"},
		{name: "500 with a body", err: &HTTPStatusError{Method: "POST", URL: "http://s/mcp", Code: 500, Body: "boom"},
			want: "the server answered POST with HTTP 500: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error = tt.err
			if got := err.Error(); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
			if got := errors.Is(err, ErrUnauthorized); got != tt.unauth {
				t.Errorf("errors.Is(err, ErrUnauthorized): got %v; want %v", got, tt.unauth)
			}
			if !hasStatus(err, tt.err.Code) || hasStatus(err, 999) {
				t.Errorf("hasStatus does not match the code %d alone", tt.err.Code)
			}
		})
	}
}

func TestDisplayURLDropsCredentials(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://user:pass@mcp.example/mcp?api_key=s3cret#x", "https://mcp.example/mcp?…"},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"},
	} {
		if got := DisplayURL(tc.in); got != tc.want {
			t.Errorf("DisplayURL(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// TestDialRefusesAURLWithoutShowingItsCredentials: a --url of another
// scheme is refused with its address, not its password or query.
func TestDialRefusesAURLWithoutShowingItsCredentials(t *testing.T) {
	for _, raw := range []string{"ws://user:pass-s3cret@mcp.example/mcp?api_key=key-s3cret", "HTTPS://user:pass-s3cret@mcp.example/mcp?api_key=key-s3cret"} {
		_, err := Dial(Options{URL: raw})
		if err == nil || !strings.Contains(err.Error(), "want an http:// or https:// URL") {
			t.Fatalf("Dial(%s…): %v; want it refused", raw[:5], err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows a credential: %v", err)
		}
	}
}

// TestNetworkErrorsDoNotQuoteTheURL: net/http's errors quote the whole
// request URL, whose query may hold a credential (?api_key=…); what the
// client is answered and what Dial returns shows the server's address
// without it.
func TestNetworkErrorsDoNotQuoteTheURL(t *testing.T) {
	raw := "http://" + testenv.RefusedAddr(t) + "/mcp?api_key=key-s3cret"
	t.Run("streamable", func(t *testing.T) {
		c := dial(t, Options{URL: raw, Transport: "streamable"})
		if err := c.writeMessage([]byte(initialize)); err != nil {
			t.Fatal(err)
		}
		got := next(t, c)
		if !strings.Contains(got, "cannot connect to") || strings.Contains(got, "s3cret") {
			t.Errorf("the client got %s; want a connection error without the query", got)
		}
	})
	t.Run("HTTP+SSE", func(t *testing.T) {
		c, err := Dial(Options{URL: raw, Transport: "sse"})
		if err == nil {
			c.Close()
			t.Fatal("Dial connected to a refused address")
		}
		if !strings.Contains(err.Error(), "cannot connect to") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Dial: %v; want a connection error without the query", err)
		}
	})
	t.Run("GET stream", func(t *testing.T) {
		c := dial(t, Options{URL: raw, Transport: "streamable"})
		_, err := c.get(context.Background(), "")
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("get: %v; want an error without the query", err)
		}
	})
}
