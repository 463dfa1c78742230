package natsnode

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestClusterSurvivesAKilledNode starts three nodes, writes a replicated
// stream, kills the node that leads it and reads everything back from the
// two left; then the killed node comes back with its store and catches up.
func TestClusterSurvivesAKilledNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := StartCluster(ctx, ClusterOptions{Dir: t.TempDir(), User: "plane", Password: "cluster-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if _, err := nats.Connect(c.URLs()); err == nil {
		t.Fatal("a client without the cluster's credentials connected; want it refused")
	}
	nc, err := nats.Connect(c.URLs(), nats.UserInfo("plane", "cluster-secret"), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := js.Publish(ctx, "t.a", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	leader, err := c.WaitLeader(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(leader)
	for i := 10; i < 20; i++ {
		if _, err := js.Publish(ctx, "t.a", []byte{byte(i)}, jetstream.WithRetryAttempts(1000), jetstream.WithRetryWait(20*time.Millisecond)); err != nil {
			t.Fatalf("publishing with a node down: %v", err)
		}
	}
	s, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 20 {
		t.Fatalf("got %d messages with a node down; want 20", info.State.Msgs)
	}
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if !c.Node(leader).Running() {
		t.Fatal("the restarted node does not run")
	}
}
