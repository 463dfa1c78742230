package jsonrpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzScanner checks the envelope reader on any input, written in two
// pieces split anywhere: it never panics, passes every byte through
// unchanged, and on a valid JSON object agrees with encoding/json about
// the id and the method.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"}}}`,
		`{"id":"a\"b","params":{"x":[{"y":"}"}]},"method":"m"}`,
		`{"result":{"resultType":"input_required"},"id":2}`,
		`[{"id":1}]`, `{"\u0069d":3}`, `{"id":1,"id":2}`, `{"a":"\\\\"}`, `[[[[`, `{"id":-1.5e3,"method":null}`,
	} {
		f.Add([]byte(s), uint16(3))
	}
	f.Fuzz(func(t *testing.T, msg []byte, split uint16) {
		k := int(split) % (len(msg) + 1)
		var out bytes.Buffer
		s := NewScanner(ScanOptions{Out: &out, Capture: map[string]int{"params._meta": 64, "result.resultType": 64}})
		s.Write(msg[:k])
		s.Write(msg[k:])
		s.Finish()
		if !bytes.Equal(out.Bytes(), msg) {
			t.Fatalf("wrote %q; want the %q read", out.Bytes(), msg)
		}
		isObject := json.Valid(msg) && bytes.HasPrefix(bytes.TrimSpace(msg), []byte("{"))
		if !isObject {
			return
		}
		if s.Err() != nil {
			t.Fatalf("valid object %q: scanner error %v", msg, s.Err())
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(msg, &m) != nil {
			return // an array or a scalar
		}
		env := s.Envelope()
		if env.Duplicate != "" {
			return // encoding/json keeps the last; the scanner says so
		}
		if id, ok := m["id"]; ok && len(id) <= MaxEnvelopeMember && !bytes.Equal(compact(id), compact(env.ID)) {
			t.Fatalf("id: got %s; encoding/json reads %s", env.ID, id)
		}
		var method string
		if json.Unmarshal(m["method"], &method) == nil && method != env.Method {
			t.Fatalf("method: got %q; encoding/json reads %q", env.Method, method)
		}
	})
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}
