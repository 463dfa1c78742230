package notify

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestVerify(t *testing.T) {
	secret, body := []byte(testSecret), []byte(`{"type":"question.opened"}`)
	now := time.Unix(1_800_000_000, 0)
	h := Sign(secret, now, body)
	tests := []struct {
		name   string
		header string
		body   []byte
		at     time.Time
		want   error
	}{
		{"fresh", h, body, now.Add(time.Minute), nil},
		{"rotated secrets: one of two matches", "t=1800000000,v1=00ff," + h[len("t=1800000000,"):], body, now, nil},
		{"older than five minutes", h, body, now.Add(5*time.Minute + time.Second), ErrSignatureStale},
		{"from the future", h, body, now.Add(-6 * time.Minute), ErrSignatureStale},
		{"another body", h, []byte(`{"type":"question.answered"}`), now, ErrSignature},
		{"no v1", "t=1800000000", body, now, ErrSignatureFormat},
		{"not a header", "sha256=abc", body, now, ErrSignatureFormat},
	}
	for _, tt := range tests {
		if err := Verify(secret, tt.header, tt.body, tt.at, 0); !errors.Is(err, tt.want) {
			t.Errorf("%s: Verify = %v; want %v", tt.name, err, tt.want)
		}
	}
	if err := Verify([]byte("another secret of thirty-two bytes!!"), h, body, now, 0); !errors.Is(err, ErrSignature) {
		t.Errorf("another secret: %v", err)
	}
}

// ExampleVerify is what a receiver written in Go does with a request.
func ExampleVerify() {
	secret := []byte("0123456789abcdef0123456789abcdef")
	body := []byte(`{"version":1,"type":"question.opened"}`)
	signedAt := time.Unix(1_800_000_000, 0)
	header := Sign(secret, signedAt, body) // the X-AEP-Signature the bridge sent

	fmt.Println(Verify(secret, header, body, signedAt.Add(30*time.Second), 0))
	fmt.Println(Verify(secret, header, body, signedAt.Add(10*time.Minute), 0) != nil)
	// Output:
	// <nil>
	// true
}
