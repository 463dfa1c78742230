package bus

import (
	"syscall"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// The tool.* payloads as the MCP side builds them (AEP-0002 §5.3).
type (
	benchToolRef struct {
		Name   string `json:"name"`
		CallID string `json:"call_id,omitempty"`
	}
	benchToolRequested struct {
		Tool         benchToolRef   `json:"tool"`
		ArgsDigest   string         `json:"args_digest,omitempty"`
		ArgsRedacted map[string]any `json:"args_redacted,omitempty"`
		Args         map[string]any `json:"args,omitempty"`
	}
	benchToolCompleted struct {
		Tool       benchToolRef `json:"tool"`
		Status     string       `json:"status"`
		DurationMS int64        `json:"duration_ms"`
	}
)

// BenchmarkEmitToolEvents emits an allowed tools/call's pair of events,
// tool.requested then tool.completed caused by it, to a session log on
// disk and a hub: at the default ceiling (metadata) and at full, from
// structs encoded by reflection (generic), and at metadata from the
// payloads aep encodes by hand (built), as the proxy emits them below
// full.
func BenchmarkEmitToolEvents(b *testing.B) {
	for _, c := range []struct {
		name    string
		capture aep.Capture
		built   bool
	}{{"metadata/generic", 0, false}, {"metadata/built", 0, true}, {"full/generic", aep.CaptureFull, false}} {
		b.Run(c.name, func(b *testing.B) {
			l, err := OpenLog(b.TempDir(), "bench", "s1")
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			hub := NewHub()
			defer hub.Close()
			em, err := NewEmitter(EmitterOptions{Agent: "bench", Session: "s1", Host: "bench", Capture: c.capture,
				Sinks: []Sink{l, hub}, Extensions: map[string]any{aep.ExtClient: "claude-code"}})
			if err != nil {
				b.Fatal(err)
			}
			ref := benchToolRef{Name: "echo", CallID: "17"}
			args := map[string]any{"message": "hello", "count": 3}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			const digest = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
			var requested, completed any = benchToolRequested{Tool: ref, ArgsDigest: digest, Args: args, ArgsRedacted: args},
				benchToolCompleted{Tool: ref, Status: "success", DurationMS: 3}
			if c.built {
				builtRef := aep.ToolRef{Name: ref.Name, CallID: ref.CallID}
				requested = aep.ToolRequested{Tool: builtRef, ArgsDigest: digest}
				completed = aep.ToolCompleted{Tool: builtRef, Status: "success", DurationMS: 3}
			}
			for range b.N {
				req, _, err := em.Emit(aep.Draft{Type: "tool.requested", Subject: "echo", Capture: aep.CaptureFull, Data: requested})
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := em.Emit(aep.Draft{Type: "tool.completed", Subject: "echo", Cause: req.ID, Capture: aep.CaptureFull,
					Data: completed}); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU time says what the pair costs better than
			// the wall time does on a machine that other work shares.
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU returns the process's user and system CPU time, in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
