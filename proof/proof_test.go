package proof

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const (
	token = "a-token-of-at-least-thirty-two-characters"
	host  = "127.0.0.1:8787"
)

// exchange runs a bridge with bridgeToken, dialing bridgeHost, against a hub
// with hubToken that sees hubHost. It returns the first error and which side
// raised it.
func exchange(t *testing.T, bridgeToken, bridgeHost, hubToken, hubHost string) (side string, err error) {
	t.Helper()
	b, challenge, err := NewBridge(bridgeToken, bridgeHost, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHub(hubToken, hubHost, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	response, err := h.Challenge(challenge)
	if err != nil {
		return "hub challenge", err
	}
	finish, err := b.Verify(response)
	if err != nil {
		return "bridge verify", err
	}
	if err := h.Finish(finish); err != nil {
		return "hub finish", err
	}
	return "", nil
}

func TestExchange(t *testing.T) {
	for _, tc := range []struct {
		name                string
		bridgeTok, hubTok   string
		bridgeHost, hubHost string
		wantSide            string
		wantText            string
	}{
		{name: "same token and host", bridgeTok: token, hubTok: token, bridgeHost: host, hubHost: host},
		{name: "host compared without case", bridgeTok: token, hubTok: token, bridgeHost: "LocalHost:1", hubHost: "localhost:1"},
		{name: "hub with another token", bridgeTok: token, hubTok: token + "x", bridgeHost: host, hubHost: host,
			wantSide: "bridge verify", wantText: "does not know this token"},
		{name: "hub that sees another host", bridgeTok: token, hubTok: token, bridgeHost: host, hubHost: "127.0.0.1:9999",
			wantSide: "bridge verify", wantText: `bound it to host "127.0.0.1:9999", this bridge dialed "127.0.0.1:8787"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			side, err := exchange(t, tc.bridgeTok, tc.bridgeHost, tc.hubTok, tc.hubHost)
			if tc.wantSide == "" {
				if err != nil {
					t.Fatalf("got %s: %v; want the exchange to complete", side, err)
				}
				return
			}
			if side != tc.wantSide || !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("got %s: %v; want %s to fail with ErrMismatch saying %q", side, err, tc.wantSide, tc.wantText)
			}
		})
	}
}

// TestTranscript pins the transcript independently of mac: HMAC-SHA256 keyed
// with the token over length-prefixed label, direction, host, nonces.
func TestTranscript(t *testing.T) {
	bn, hn := bytes.Repeat([]byte{1}, NonceSize), bytes.Repeat([]byte{2}, NonceSize)
	var buf bytes.Buffer
	for _, s := range []string{"aep-mcp-bridge token-proof v1", "hub", "example:1", string(bn), string(hn)} {
		binary.Write(&buf, binary.BigEndian, uint32(len(s)))
		buf.WriteString(s)
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write(buf.Bytes())
	if got, want := mac([]byte(token), hubLabel, "EXAMPLE:1", bn, hn), m.Sum(nil); !bytes.Equal(got, want) {
		t.Fatalf("got %x; want %x", got, want)
	}
}

// TestReflectedProofFails plays a peer without the token that hands the
// hub's own proof back to it as the bridge's proof.
func TestReflectedProofFails(t *testing.T) {
	h, _ := NewHub(token, host, rand.Reader)
	_, challenge, _ := NewBridge("anything", host, rand.Reader)
	response, err := h.Challenge(challenge)
	if err != nil {
		t.Fatal(err)
	}
	var f Frame
	json.Unmarshal(response, &f)
	reflected, _ := json.Marshal(Frame{Type: TypeFinish, V: Version, MAC: f.MAC})
	if err := h.Finish(reflected); !errors.Is(err, ErrMismatch) {
		t.Fatalf("got %v; want the reflected proof refused with ErrMismatch", err)
	}
}

// TestBridgeRefuses feeds the bridge responses that must not verify.
func TestBridgeRefuses(t *testing.T) {
	nonce32 := b64.EncodeToString(bytes.Repeat([]byte{7}, NonceSize))
	mac32 := b64.EncodeToString(bytes.Repeat([]byte{9}, 32))
	for _, tc := range []struct {
		name, response, want string
	}{
		{name: "not JSON", response: `HTTP/1.1 200 OK`, want: "did not send a JSON frame"},
		{name: "an AEP hello", response: `{"type":"hello","versions":["0.1"]}`, want: `frame of type "hello"`},
		{name: "an error frame", response: `{"type":"error","code":"unauthorized","detail":"no\nway"}`, want: `refused: "unauthorized: no\nway"`},
		{name: "another version", response: `{"type":"proof-response","v":2}`, want: "version 2"},
		{name: "short nonce", response: `{"type":"proof-response","v":1,"nonce":"AAAA","mac":"` + mac32 + `"}`, want: "hub's nonce is not 32 bytes"},
		{name: "padded mac", response: `{"type":"proof-response","v":1,"nonce":"` + nonce32 + `","mac":"` + mac32 + `="}`, want: "hub's proof is not 32 bytes"},
		{name: "empty mac", response: `{"type":"proof-response","v":1,"nonce":"` + nonce32 + `","mac":""}`, want: "hub's proof is not 32 bytes"},
		{name: "a made-up mac", response: `{"type":"proof-response","v":1,"nonce":"` + nonce32 + `","mac":"` + mac32 + `"}`, want: "does not know this token"},
		{name: "oversized", response: `{"type":"proof-response","v":1,"pad":"` + strings.Repeat("x", MaxFrame) + `"}`, want: "at most 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _, err := NewBridge(token, host, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			finish, err := b.Verify([]byte(tc.response))
			if err == nil || finish != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %q, %v; want no finish and an error saying %q", finish, err, tc.want)
			}
		})
	}
}

func TestBridgeRefusesItsOwnNonce(t *testing.T) {
	b, challenge, _ := NewBridge(token, host, rand.Reader)
	var c Frame
	json.Unmarshal(challenge, &c)
	echo, _ := json.Marshal(Frame{Type: TypeResponse, V: Version, Nonce: c.Nonce, MAC: b64.EncodeToString(make([]byte, 32))})
	if _, err := b.Verify(echo); err == nil || !strings.Contains(err.Error(), "echoed") {
		t.Fatalf("got %v; want the echoed nonce refused", err)
	}
}

func TestOneUsePerSide(t *testing.T) {
	h, _ := NewHub(token, host, rand.Reader)
	if err := h.Finish([]byte(`{}`)); err == nil {
		t.Error("Finish before Challenge succeeded")
	}
	b, challenge, _ := NewBridge(token, host, rand.Reader)
	response, err := h.Challenge(challenge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Challenge(challenge); err == nil {
		t.Error("a second Challenge succeeded")
	}
	if _, err := b.Verify(response); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(response); err == nil {
		t.Error("a second Verify succeeded")
	}
	if _, _, err := NewBridge("", host, rand.Reader); err == nil {
		t.Error("NewBridge without a token succeeded")
	}
	if _, err := NewHub("", host, rand.Reader); err == nil {
		t.Error("NewHub without a token succeeded")
	}
}

func TestAdvertised(t *testing.T) {
	for _, tc := range []struct {
		name, exp string
		want      bool
	}{
		{name: "ours", exp: string(Advertisement()), want: true},
		{name: "among others", exp: `{"x":1,"token-proof":{"versions":[3,1]}}`, want: true},
		{name: "another version", exp: `{"token-proof":{"versions":[2]}}`},
		{name: "empty", exp: `{}`},
		{name: "absent", exp: ``},
		{name: "malformed", exp: `{"token-proof":"yes"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Advertised(json.RawMessage(tc.exp)); got != tc.want {
				t.Fatalf("got %v; want %v", got, tc.want)
			}
		})
	}
}
