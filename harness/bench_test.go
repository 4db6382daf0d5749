package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
)

// BenchmarkStartReady measures Start -> ready (every broker registered, probe topic with full
// ISR) and Close for a 3-node combined cluster:
//
//	go test -run '^$' -bench StartReady -benchtime 3x ./harness/
func BenchmarkStartReady(b *testing.B) {
	harnesstest.RequireDocker(b)
	var ready, closed time.Duration
	for b.Loop() {
		c, err := harness.Start(context.Background(), harness.Spec{Nodes: 3, ArtifactDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		ready += c.ReadyIn
		start := time.Now()
		if err := c.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		closed += time.Since(start)
	}
	b.ReportMetric(ready.Seconds()/float64(b.N), "ready_s")
	b.ReportMetric(closed.Seconds()/float64(b.N), "close_s")
}

// BenchmarkNodeOnLazyFS compares one broker on the lazy filesystem (Spec.PowerLoss) with one on
// a plain directory, in the same run: acks=all appends of 1 KiB records to a partition with
// one replica, with Kafka's default flush and with flush.messages=1; then the time from a kill
// (plain) or a power cut (lazy) to the partition being led again.
//
//	go test -run '^$' -bench NodeOnLazyFS -benchtime 1x ./harness/
func BenchmarkNodeOnLazyFS(b *testing.B) {
	harnesstest.RequireDocker(b)
	for _, lazy := range []bool{false, true} {
		name := "plain"
		if lazy {
			name = "lazyfs"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			c, err := harness.Start(ctx, harness.Spec{Nodes: 1, PowerLoss: lazy, ArtifactDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
			const records = 100000
			for _, flush := range []string{"default", "1"} {
				tp := harness.TopicSpec{Name: "bench-" + flush, Partitions: 1, RF: 1}
				if flush != "default" {
					tp.Config = map[string]string{"flush.messages": flush}
				}
				if err := c.CreateTopic(ctx, tp); err != nil {
					b.Fatal(err)
				}
				b.Run("flush-"+flush, func(b *testing.B) {
					var took time.Duration
					for b.Loop() {
						took += produce(b, c, tp.Name, records)
					}
					b.ReportMetric(float64(records*b.N)/took.Seconds(), "records/s")
				})
			}
			down, what := c.Kill, "kill"
			if lazy {
				down, what = c.PowerCut, "power-cut"
			}
			b.Run("back-after-"+what, func(b *testing.B) {
				var took time.Duration
				for b.Loop() {
					began := time.Now()
					if err := down(ctx, 1); err != nil {
						b.Fatal(err)
					}
					if err := c.Start(ctx, 1); err != nil {
						b.Fatal(err)
					}
					if _, err := c.WaitPartition(ctx, "bench-default", 0, func(p harness.PartitionState) bool { return p.Leader == 1 }); err != nil {
						b.Fatal(err)
					}
					took += time.Since(began)
				}
				b.ReportMetric(took.Seconds()/float64(b.N), "back_s")
			})
		})
	}
}

// produce sends n 1 KiB records with acks=all through one async producer and returns how long
// it took until the last was acknowledged.
func produce(b *testing.B, c *harness.Cluster, topic string, n int) time.Duration {
	cfg := harness.SaramaConfig("bench")
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	p, err := sarama.NewAsyncProducer(c.Bootstrap(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	value := sarama.ByteEncoder(make([]byte, 1024))
	began := time.Now()
	go func() {
		for range n {
			p.Input() <- &sarama.ProducerMessage{Topic: topic, Value: value}
		}
	}()
	for range n {
		select {
		case <-p.Successes():
		case err := <-p.Errors():
			b.Fatal(err)
		}
	}
	return time.Since(began)
}
