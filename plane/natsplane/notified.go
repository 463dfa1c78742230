package natsplane

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Every front door of a fleet may be given the same webhooks (--notify),
// and every one sees every question: without a word between them, each
// would notify each question once. So a door claims a notification
// before it sends it, in the bucket P_notified, by a key that names it
// wherever it is made (package notify's Options.Claim: what happened, to
// which question, for which target); the door whose claim the bucket
// takes first sends it, the others do not. The key is a MAC under a key
// derived from the fleet's token, so the bucket shows no question id
// and no webhook URL.
//
// A claim is kept for notifiedKept, so a door that starts later and
// reads questions still open does not notify them again. When the
// cluster cannot be reached within notifyClaimWait, the door sends: a
// duplicate is better than no notification.

// notifiedKept is how long a claim is kept.
const notifiedKept = 7 * 24 * time.Hour

// notifyClaimWait bounds a claim.
const notifyClaimWait = 10 * time.Second

// ClaimNotification reports whether this front door sends the
// notification key names (notify.Options.Claim): true when its claim is
// the first, or when the cluster could not say within notifyClaimWait;
// false when another door claimed it.
func (m *Member) ClaimNotification(key string) bool {
	mac := hmac.New(sha256.New, m.notifyKey)
	mac.Write([]byte(key))
	k := hex.EncodeToString(mac.Sum(nil)[:16])
	// The value names this claim: a Create sent again after its reply was
	// lost finds its own value, and knows the claim is its own.
	var nonce [16]byte
	rand.Read(nonce[:]) // crypto/rand.Read never fails (Go 1.24+)
	mine := []byte(m.fp + "." + hex.EncodeToString(nonce[:]))
	ctx, cancel := context.WithTimeout(m.ctx, notifyClaimWait)
	defer cancel()
	won := true
	err := m.retry(ctx, "claiming a notification", func(ctx context.Context) error {
		_, err := m.kvs.notified.Create(ctx, k, mine)
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		e, err := m.kvs.notified.Get(ctx, k)
		if err != nil {
			return err
		}
		won = string(e.Value()) == string(mine)
		return nil
	})
	if err != nil {
		m.log.Warn("the operator plane could not say whether another front door sends a notification; this one sends it", "err", err)
		return true
	}
	return won
}

// notifyKeyOf derives the key of the claims' MACs of the plane prefix
// from the fleet's token.
func notifyKeyOf(token, prefix string) ([]byte, error) {
	return hkdf.Key(sha256.New, []byte(token), []byte("aep-mcp-bridge operator plane"), "notifications v1 "+prefix, 32)
}
