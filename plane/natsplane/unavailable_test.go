package natsplane

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestWhileUnavailable: a cluster electing its leaders (a 503, no
// responders, an attempt without an answer) is asked again until it
// answers or the caller's deadline ends; any other error ends at once.
func TestWhileUnavailable(t *testing.T) {
	unavailable := &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
	denied := &jetstream.APIError{Code: 403, Description: "permissions violation"}
	// A 503 too, which no election ends.
	noJetStream := &jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabled, Description: "jetstream not enabled"}
	noJetStreamHere := &jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabledForAccount, Description: "jetstream not enabled for account"}
	for _, tc := range []struct {
		name    string
		errs    []error // one per attempt; past the end, nil
		calls   int
		wantErr error
	}{
		{"answers at once", nil, 1, nil},
		{"electing, then answers", []error{unavailable, nats.ErrNoResponders, context.DeadlineExceeded}, 4, nil},
		{"refused", []error{denied}, 1, denied},
		{"electing, then refused", []error{unavailable, denied}, 2, denied},
		{"a server without JetStream", []error{noJetStream}, 1, noJetStream},
		{"an account without JetStream", []error{noJetStreamHere}, 1, noJetStreamHere},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				err := whileUnavailable(t.Context(), func(context.Context) error {
					calls++
					if calls <= len(tc.errs) {
						return tc.errs[calls-1]
					}
					return nil
				})
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) || calls != tc.calls {
					t.Fatalf("got %v after %d attempts; want %v after %d", err, calls, tc.wantErr, tc.calls)
				}
			})
		})
	}
	t.Run("never available", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			err := whileUnavailable(ctx, func(context.Context) error { return unavailable })
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v; want the caller's deadline, with the last error", err)
			}
		})
	})
}
