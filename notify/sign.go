package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers of every notification request.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>" on
	// a target with a secret (every json target has one). The MAC covers
	// "<t>." followed by the body's exact bytes, so a receiver that
	// checks it also knows when the body was signed.
	SignatureHeader = "X-AEP-Signature"
	// DeliveryHeader carries the notification's id (Notification.ID): the
	// same on every retry, so a receiver can drop a repeat.
	DeliveryHeader = "X-AEP-Delivery"
	// EventHeader carries the notification's type, e.g. question.opened.
	EventHeader = "X-AEP-Event"
)

// DefaultTolerance is how old a signature Verify accepts: five minutes,
// either way.
const DefaultTolerance = 5 * time.Minute

// MinSecretLen is the shortest secret a target may sign with, in bytes:
// 32, as for the bridge's token (openssl rand -hex 32 makes one).
const MinSecretLen = 32

// Sign returns the SignatureHeader value for body signed at t with secret.
// A new signature is made for every attempt, so a retry is not refused as
// a replay.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrSignatureFormat = errors.New("the signature header is not t=<unix seconds>,v1=<hex>")
	ErrSignatureStale  = errors.New("the signature's timestamp is outside the tolerance: a replay, or a clock far off")
	ErrSignature       = errors.New("no v1 signature matches the body with this secret")
)

// Verify checks a SignatureHeader value against body and secret, as a
// receiver does: the timestamp within tolerance of now (0 means
// DefaultTolerance), and one v1 entry equal, in constant time, to the MAC
// of "<t>." + body. Several v1 entries are allowed, so a sender can sign
// with an old and a new secret while receivers move over.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrSignatureFormat
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrSignatureFormat
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w (signed %s ago)", ErrSignatureStale, d.Round(time.Second))
	}
	want := []byte(mac(secret, ts, body))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), want) {
			return nil
		}
	}
	return ErrSignature
}
