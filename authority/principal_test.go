package authority

import (
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

func TestPrincipals(t *testing.T) {
	ev := &aep.Event{Type: "attention.requested", Session: "s"}
	for _, tc := range []struct {
		name                 string
		p                    Principal
		sees, filter, answer bool
	}{
		{name: "the token's holder", p: TokenHolder(), sees: true, answer: true},
		{name: "a bridge that proved the token", p: Bridge("fp"), sees: true, answer: true},
		{name: "no rights", p: Principal{}, filter: true},
		{name: "read only", p: Principal{Rights: Read}, sees: true},
		{name: "command only", p: Principal{Rights: Command}, filter: true, answer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Sees(ev); got != tc.sees {
				t.Errorf("Sees = %v; want %v", got, tc.sees)
			}
			if f := tc.p.Filter(); (f != nil) != tc.filter || (f != nil && f(ev) != tc.sees) {
				t.Errorf("Filter = %v; want a filter %v that agrees with Sees", f != nil, tc.filter)
			}
			why := tc.p.MayCommand(&aep.Event{Type: "control.attention.respond"})
			if (why == nil) != tc.answer || (why != nil && (why.Reason != ReasonNoRight || why.Code() != "unauthorized")) {
				t.Errorf("MayCommand = %v; want allowed %v", why, tc.answer)
			}
		})
	}
	if p := Bridge("fp"); !p.Proved || p.Key != "fp" || TokenHolder().Proved {
		t.Errorf("Bridge(fp) = %+v; want proved with its key, and the token's holder not proved", p)
	}
}

func TestRefusalCodes(t *testing.T) {
	for r, want := range map[Reason]string{ReasonNoRoute: "no-route", ReasonAmbiguous: "ambiguous", ReasonSourceLive: "unauthorized", ReasonKeySession: "unauthorized"} {
		if got := (&Refusal{Reason: r}).Code(); got != want {
			t.Errorf("%v: code %q; want %q", r, got, want)
		}
	}
	for r := ReasonNoRight; r <= ReasonAmbiguous; r++ {
		if r.String() == "" || r.String()[0] == 'R' {
			t.Errorf("reason %d has no name", int(r))
		}
	}
}
