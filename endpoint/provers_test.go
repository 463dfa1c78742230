package endpoint

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestEvictee pins which proving peer gives its slot to a newcomer.
func TestEvictee(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	conn := &websocket.Conn{}
	silentOld := &prover{conn: conn, waiting: t0}
	silentNew := &prover{conn: conn, waiting: t0.Add(time.Second)}
	stallerOld := &prover{conn: conn, waiting: t0.Add(-time.Hour), challenged: true}
	stallerNew := &prover{conn: conn, waiting: t0.Add(time.Second), challenged: true}
	upgrading := &prover{waiting: t0.Add(-time.Minute)}
	evicted := &prover{conn: conn, waiting: t0.Add(-time.Hour), evicted: true}
	now := t0.Add(time.Second + proveGrace)
	for _, tc := range []struct {
		name    string
		provers []*prover
		now     time.Time
		want    *prover
	}{
		{name: "the silent peer that waited longest", provers: []*prover{silentNew, stallerOld, silentOld, stallerNew}, now: now, want: silentOld},
		{name: "a silent one still upgrading", provers: []*prover{stallerOld, upgrading}, now: now, want: upgrading},
		{name: "then the staller that waited longest", provers: []*prover{stallerNew, stallerOld}, now: now, want: stallerOld},
		{name: "one at exactly its grace", provers: []*prover{silentNew}, now: now, want: silentNew},
		{name: "none within its grace", provers: []*prover{silentNew, stallerNew}, now: now.Add(-time.Nanosecond)},
		{name: "never one already evicted", provers: []*prover{evicted}, now: now},
		{name: "none", now: now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := map[*prover]struct{}{}
			for _, p := range tc.provers {
				set[p] = struct{}{}
			}
			if got := evictee(set, tc.now, proveGrace); got != tc.want {
				t.Fatalf("got %+v; want %+v", got, tc.want)
			}
		})
	}
}
