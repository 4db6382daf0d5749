// Package librarytest is a user's test suite that depends on Verity as a library: it starts a
// real 3-node Kafka cluster, writes to it with acks=all, kills the partition's leader, cuts the
// replication of the survivors (leaving their quorum up), checks what Kafka promises, and removes
// the cluster. Copy the directory, fix the replace directive in go.mod, and run
//
//	go test ./...
//
// with a Docker engine up and Verity's images built (`make images` in the Verity checkout).
// Under -short the cluster tests are skipped; with CI=true and no engine they fail.
package librarytest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
)

// TestMain fails the package if the tests leave a container, network or volume of theirs behind.
func TestMain(m *testing.M) { os.Exit(harnesstest.Main(m)) }

func TestAcksAllSurvivesLeaderLoss(t *testing.T) {
	// Starts the cluster (skipped under -short, a failure under CI without Docker) and removes
	// it when the test ends, pass, fail or panic; node logs go to the test's artifact directory.
	c := harnesstest.Start(t, harness.Spec{Nodes: 3})
	// Generous: a loaded 2-core CI machine takes tens of seconds for an election.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	const topic = "orders"
	must(t, c.CreateTopic(ctx, harness.TopicSpec{Name: topic, Partitions: 1, RF: 3, MinISR: 2}))
	acked := map[int64]string{}
	send(t, c, topic, "before", 20, acked)

	p, err := c.DescribePartition(ctx, topic, 0)
	must(t, err)
	old := int(p.Leader)
	must(t, c.Kill(ctx, old)) // SIGKILL: a crash, nothing flushed
	p, err = c.WaitPartition(ctx, topic, 0, func(p harness.PartitionState) bool {
		return p.Leader >= 0 && int(p.Leader) != old
	})
	must(t, err)
	t.Logf("leader %d killed; new leader %d, ISR %v", old, p.Leader, p.ISR)
	send(t, c, topic, "after-kill", 20, acked)

	// Cut the replication from the last follower to the new leader, and only that: on combined
	// nodes a whole-link Cut would also cut the controllers' quorum traffic, and with one of
	// three nodes dead the quorum would be lost.
	var follower int
	for _, r := range p.ISR {
		if r != p.Leader {
			follower = int(r)
		}
	}
	link := harness.Link{From: follower, To: int(p.Leader)}
	must(t, c.CutTraffic(ctx, link, harness.TrafficReplication, harness.CutBlackhole))
	// A follower that has every record stays in the ISR however long it does not fetch: a
	// write the leader alone acknowledges (acks=1) puts it behind, and the leader drops it from
	// the ISR after replica.lag.time.max.ms (10 s in the harness).
	if err := sendOne(c, topic, sarama.WaitForLocal, "leader-only"); err != nil {
		t.Fatalf("an acks=1 write with replication cut: %v", err)
	}
	p, err = c.WaitPartition(ctx, topic, 0, func(p harness.PartitionState) bool { return len(p.ISR) == 1 })
	must(t, err)
	t.Logf("replication %s cut: ISR %v, ELR %v", link, p.ISR, p.ELR)
	// Below min.insync.replicas an acks=all write must be refused, never acknowledged.
	if err := sendOne(c, topic, sarama.WaitForAll, "under-min-isr"); !errors.Is(err, sarama.ErrNotEnoughReplicas) && !errors.Is(err, sarama.ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("a write with ISR %v below min ISR 2: got %v, want NOT_ENOUGH_REPLICAS", p.ISR, err)
	}

	must(t, c.HealTraffic(ctx, link, harness.TrafficReplication))
	must(t, c.Start(ctx, old))
	must(t, c.WaitHealthy(ctx))

	// Every acknowledged write is there, at its offset.
	got := readAll(t, ctx, c, topic)
	for off, v := range acked {
		if got[off] != v {
			t.Errorf("acknowledged %q at offset %d reads back as %q", v, off, got[off])
		}
	}
	t.Logf("%d acknowledged writes read back", len(acked))
}

// producerConfig is an idempotent acks=all producer with the harness's fault-test timeouts.
func producerConfig(c *harness.Cluster) *sarama.Config {
	cfg := c.SaramaConfig("librarytest")
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max, cfg.Producer.Retry.Backoff = 10, 500*time.Millisecond
	return cfg
}

// send writes n records to partition 0 and records where each acknowledged one went.
func send(t *testing.T, c *harness.Cluster, topic, prefix string, n int, acked map[int64]string) {
	t.Helper()
	prod, err := sarama.NewSyncProducer(c.Bootstrap(), producerConfig(c))
	must(t, err)
	defer prod.Close()
	for i := range n {
		v := fmt.Sprintf("%s-%d", prefix, i)
		_, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)})
		must(t, err)
		acked[off] = v
	}
}

// sendOne writes one record with acks and a producer that does not retry (so not idempotent,
// which sarama allows only with retries), and returns its error.
func sendOne(c *harness.Cluster, topic string, acks sarama.RequiredAcks, v string) error {
	cfg := producerConfig(c)
	cfg.Producer.RequiredAcks = acks
	cfg.Producer.Idempotent, cfg.Producer.Retry.Max = false, 0
	prod, err := sarama.NewSyncProducer(c.Bootstrap(), cfg)
	if err != nil {
		return err
	}
	defer prod.Close()
	_, _, err = prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)})
	return err
}

// readAll reads partition 0 from its earliest offset to its high watermark.
func readAll(t *testing.T, ctx context.Context, c *harness.Cluster, topic string) map[int64]string {
	t.Helper()
	o, err := c.Offsets(ctx, topic, 0)
	must(t, err)
	cons, err := sarama.NewConsumer(c.Bootstrap(), c.SaramaConfig("librarytest-reader"))
	must(t, err)
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, o.Earliest)
	must(t, err)
	defer pc.Close()
	got := map[int64]string{}
	for next := o.Earliest; next < o.HighWatermark; {
		select {
		case m := <-pc.Messages():
			got[m.Offset], next = string(m.Value), m.Offset+1
		case err := <-pc.Errors():
			t.Fatalf("reading %s-0: %v", topic, err)
		case <-ctx.Done():
			t.Fatalf("reading %s-0: at %d of [%d, %d): %v (offsets read: %v)", topic, next, o.Earliest, o.HighWatermark, ctx.Err(), slices.Sorted(maps.Keys(got)))
		}
	}
	return got
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
