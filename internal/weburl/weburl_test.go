package weburl

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name, url string
		ok        bool
	}{
		{"https", "https://hooks.example/x?token=s3cret", true},
		{"http to 127.0.0.1", "http://127.0.0.1:9/x", true},
		{"http to another loopback address", "http://127.8.9.10/x", true},
		{"http to ::1", "http://[::1]:80/x", true},
		{"http to localhost", "http://LocalHost:8080/x", true},
		{"http to a remote host", "http://hooks.example/secret-path?token=s3cret", false},
		{"http to a name that may resolve to loopback", "http://localtest.me/x", false},
		{"https without a host", "https:///secret-path", false},
		{"javascript", "javascript:secret-path", false},
		{"file", "file:///etc/secret-path", false},
		{"relative", "secret-path?token=s3cret", false},
		{"unparsable", "http://[::1/secret-path", false},
		{"a pasted secret before a colon", "s3cretverylongsecretvalue:x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.url)
			if (err == nil) != tt.ok {
				t.Fatalf("Check(%q) = %v; want ok=%v", tt.url, err, tt.ok)
			}
			if err == nil {
				return
			}
			for _, secret := range []string{"secret-path", "s3cret"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("Check(%q) = %q; it shows %q of the URL", tt.url, err, secret)
				}
			}
			if !strings.Contains(err.Error(), Rule) {
				t.Errorf("Check(%q) = %q; want it to say the rule", tt.url, err)
			}
		})
	}
}

func TestDisplay(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://hooks.example/services/T/B/secret?x=1", "https://hooks.example"},
		{"http://user:pw@127.0.0.1:8080/a", "http://127.0.0.1:8080"},
		{"javascript:alert(1)", "javascript:"},
		{"no scheme/at all", "(not an absolute URL)"},
		{"http://[::1/x", "(not an absolute URL)"},
		{"s3cretverylongsecretvalue:x", "(a URL with an unknown scheme)"},
	}
	for _, tt := range tests {
		if got := Display(tt.in); got != tt.want {
			t.Errorf("Display(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
