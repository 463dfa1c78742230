package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// wholeNames are the members of params and result the tests read.
var wholeNames = WholeOptions{Params: []string{"_meta", "requestState"}, Result: []string{"resultType", "_meta"}}

// wholeScan is how a Scanner reads the members ReadWhole reads: the
// reference ReadWhole must agree with.
var wholeScan = ScanOptions{Alias: true, Capture: map[string]int{
	"params._meta": 0, "params.requestState": 0, "result.resultType": 0, "result._meta": 0,
}}

// checkWhole compares ReadWhole with json.Valid and, for a JSON object,
// with what the Scanner reads of it; and Valid with json.Valid.
func checkWhole(t *testing.T, raw []byte) {
	t.Helper()
	var w Whole
	object, valid := ReadWhole(raw, &wholeNames, &w)
	if want := json.Valid(raw); valid != want || Valid(raw) != want {
		t.Fatalf("%.200q: ReadWhole says valid %t, Valid %t; json.Valid says %t", raw, valid, Valid(raw), want)
	}
	if !valid {
		return
	}
	if want := bytes.TrimLeft(raw, " \t\r\n")[0] == '{'; object != want {
		t.Fatalf("%.200q: object %t; want %t", raw, object, want)
	}
	if !object {
		return
	}
	// Member reads an object's members as encoding/json decodes them
	// into a map: exact names, the last one of two.
	var m map[string]json.RawMessage
	json.Unmarshal(raw, &m)
	for _, name := range []string{"id", "params", "_meta"} {
		if got, want := Member(raw, name), m[name]; !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("%.200q: Member %q: got %.100q; encoding/json reads %.100q", raw, name, got, want)
		}
	}
	sc, err := Scan(raw, wholeScan)
	if err != nil {
		t.Fatalf("%.200q: the Scanner fails on valid JSON: %v", raw, err)
	}
	for _, c := range []struct {
		name      string
		got, want []byte
	}{
		{"id", w.ID, sc.IDAt.Of(raw)},
		{"method", w.Method, sc.MethodAt.Of(raw)},
		{"params", w.Params, sc.ParamsAt.Of(raw)},
		{"result", w.Result, sc.ResultAt.Of(raw)},
		{"error", w.Error, sc.ErrorAt.Of(raw)},
		{"params._meta", w.InParams[0], sc.Members["params._meta"]},
		{"params.requestState", w.InParams[1], sc.Members["params.requestState"]},
		{"result.resultType", w.InResult[0], sc.Members["result.resultType"]},
		{"result._meta", w.InResult[1], sc.Members["result._meta"]},
	} {
		if !bytes.Equal(c.got, c.want) || (c.got == nil) != (c.want == nil) {
			t.Errorf("%.200q: %s: got %.100q; the Scanner reads %.100q", raw, c.name, c.got, c.want)
		}
	}
	if got := DecodeString(w.Method); got != sc.Method {
		t.Errorf("%.200q: method name %q; the Scanner reads %q", raw, got, sc.Method)
	}
}

func TestReadWhole(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"resultType":"input_required","_meta":{"k":1},"inputRequests":{}}}`,
		`  {"id":1,"id":2,"method":"a","method":"b"}  `,
		`{"params":{"_meta":1},"params":{"x":2}}`,
		`{"params":{"_meta":1},"params":[1]}`,
		`{"\u0069d":5,"par\u0061ms":{"_m\u0065ta":{}}}`,
		`{"\\id":5}`,
		`{"method":5}`,
		`{"method":"\u0074ools/call"}`,
		`{"method":"bad\xffutf8"}`,
		`{"id":{"a":[1,2,{"b":null}]},"error":{"code":-32600,"message":"x"}}`,
		`{"result":"not an object","params":[{"_meta":1}]}`,
		`{}`, `{ }`, `[]`, `[1,2]`, `42`, `"s"`, `null`, `true`, `-0.5e+10`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":tru}`, `{"a":nul}`,
		`{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12G4"}`, `{"a":"unterminated}`, `{"a":1,}`, `{"a":1 "b":2}`,
		`{"a":[1,]}`, `{"a":{"b":1,}}`, `{"a":1}x`, `{"a":1}}`, ``, `   `, `{`, `{"a"`, `{"a":`, `{"a" 1}`,
		`{"s":"` + strings.Repeat("é\\n\\u00e9\\\"", 40) + `"}`,
		`{"id":1,"params":{"x":` + deep(9998) + `}}`,
		`{"id":1,"params":{"x":` + deep(9999) + `}}`,
		deep(10000), deep(10001),
	} {
		checkWhole(t, []byte(raw))
	}
}

// FuzzReadWhole: for any bytes, ReadWhole and Valid agree with
// json.Valid, and, on a JSON object, ReadWhole reads every member as the
// Scanner does.
func FuzzReadWhole(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1},"requestState":"s"}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}}}}`,
		`{"\u0069d":5,"par\u0061ms":{"_m\u0065ta":{}}, "x":[1,-2.5e3,true,false,null,"\"\\\/\b\f\n\r\t\u00e9"]}`,
		`[{"id":1},{"method":"x"}]`, `{"a":01}`, `{"a":"\x01"}`, `{"a":1}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkWhole(t, raw)
	})
}
