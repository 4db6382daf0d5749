package harness_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/harness"
)

// producer sends records to one partition with the given acks and reports each outcome.
type producer struct {
	t     *testing.T
	sp    sarama.SyncProducer
	topic string
	part  int32
	n     int
}

func newProducer(t *testing.T, c *harness.Cluster, topic string, part int32, acks sarama.RequiredAcks) *producer {
	t.Helper()
	cfg := harness.SaramaConfig(fmt.Sprintf("lab-%s-acks%d", topic, acks))
	cfg.Producer.RequiredAcks = acks
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max = 2
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Timeout = 5 * time.Second
	if acks == sarama.WaitForAll {
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	}
	sp, err := sarama.NewSyncProducer(c.Bootstrap(), cfg)
	if err != nil {
		t.Fatalf("creating a producer: %v", err)
	}
	t.Cleanup(func() { _ = sp.Close() })
	return &producer{t: t, sp: sp, topic: topic, part: part}
}

// acked is a record the broker acknowledged.
type acked struct {
	value  string
	offset int64
}

// send sends count records and returns those acknowledged and the errors of the others.
func (p *producer) send(count int) ([]acked, []error) {
	var ok []acked
	var errs []error
	for range count {
		p.n++
		v := fmt.Sprintf("%s-%d-%d", p.topic, p.part, p.n)
		_, off, err := p.sp.SendMessage(&sarama.ProducerMessage{Topic: p.topic, Partition: p.part, Value: sarama.StringEncoder(v)})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ok = append(ok, acked{v, off})
	}
	return ok, errs
}

// mustSend fails the test unless every one of count records is acknowledged.
func (p *producer) mustSend(count int) []acked {
	p.t.Helper()
	ok, errs := p.send(count)
	if len(errs) > 0 {
		p.t.Fatalf("%d of %d sends failed, first: %v", len(errs), count, errs[0])
	}
	return ok
}

// readAll reads partition part of topic from the earliest offset to its high watermark.
func readAll(t *testing.T, ctx context.Context, c *harness.Cluster, topic string, part int32) map[int64]string {
	t.Helper()
	off, err := c.Offsets(ctx, topic, part)
	if err != nil {
		t.Fatalf("offsets: %v", err)
	}
	cfg := harness.SaramaConfig("lab-reader")
	cons, err := sarama.NewConsumer(c.Bootstrap(), cfg)
	if err != nil {
		t.Fatalf("creating a consumer: %v", err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, part, off.Earliest)
	if err != nil {
		t.Fatalf("consuming %s-%d: %v", topic, part, err)
	}
	defer pc.Close()
	got := map[int64]string{}
	next := off.Earliest
	for next < off.HighWatermark {
		select {
		case m := <-pc.Messages():
			got[m.Offset] = string(m.Value)
			next = m.Offset + 1
		case err := <-pc.Errors():
			t.Fatalf("reading %s-%d: %v", topic, part, err)
		case <-ctx.Done():
			t.Fatalf("reading %s-%d: stopped at %d of [%d, %d): %v", topic, part, next, off.Earliest, off.HighWatermark, ctx.Err())
		}
	}
	return got
}

// mustReadBack fails the test unless every acknowledged record is at its offset.
func mustReadBack(t *testing.T, ctx context.Context, c *harness.Cluster, topic string, part int32, acks []acked) {
	t.Helper()
	got := readAll(t, ctx, c, topic, part)
	for _, a := range acks {
		if got[a.offset] != a.value {
			t.Fatalf("acknowledged record %s at offset %d reads back as %q", a.value, a.offset, got[a.offset])
		}
	}
	t.Logf("all %d acknowledged records read back from %s-%d", len(acks), topic, part)
}

func isNotEnoughReplicas(err error) bool {
	return errors.Is(err, sarama.ErrNotEnoughReplicas) || errors.Is(err, sarama.ErrNotEnoughReplicasAfterAppend)
}

func has(s []int32, id int) bool { return slices.Contains(s, int32(id)) }

func followers(p harness.PartitionState) []int {
	var fs []int
	for _, r := range p.Replicas {
		if r != p.Leader {
			fs = append(fs, int(r))
		}
	}
	return fs
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
