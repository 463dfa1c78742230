package bridge

import (
	"errors"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
	"github.com/agenteventprotocol/aep-mcp-bridge/control"
	"github.com/agenteventprotocol/aep-mcp-bridge/endpoint"
)

// Claim returns the session's claim for an AEP endpoint: commands the
// endpoint routes to this session go to its control intake.
func (b *Bridge) Claim(instance string) endpoint.Claim {
	return endpoint.Claim{Session: b.session, Source: b.em.Source(), Agent: b.opts.Agent, Instance: instance,
		Accepts: control.Accepts, Target: intakeTarget{b.intake}}
}

// intakeTarget hands a routed command to a session's control intake; a
// command the intake cannot address is refused on the connection.
type intakeTarget struct{ in *control.Intake }

func (t intakeTarget) Submit(cmd aep.Event, from control.Sender) (string, string) {
	_, err := t.in.Submit(cmd, from)
	var re *control.RefusalError
	if errors.As(err, &re) {
		return re.Code, re.Detail
	}
	return "", ""
}
