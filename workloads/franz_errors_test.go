package workloads

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

func TestErrorTextNamesFranzErrors(t *testing.T) {
	got := ErrorText(kerr.NotEnoughReplicas)
	require.True(t, strings.HasPrefix(got, "kafka server: NOT_ENOUGH_REPLICAS: "), got)
	require.Contains(t, ErrorText(fmt.Errorf("%w (uncompressed_bytes=1, compressed_bytes=1)", kerr.MessageTooLarge)), "MESSAGE_TOO_LARGE")
	require.Equal(t, kgo.ErrRecordTimeout.Error(), ErrorText(kgo.ErrRecordTimeout))
}

// The franz-go producer's options, as the client reads them back: Kafka's settings, not
// franz-go's defaults (snappy, a 10ms linger, a key-hashing partitioner).
func TestFranzProducerOptions(t *testing.T) {
	franz, _ := kafkaconf.LookupClient(kafkaconf.FranzGo)
	opts := func(t *testing.T, c ProducerConfig) (*kgo.Client, []string) {
		t.Helper()
		c, _, err := c.Resolved(franz)
		require.NoError(t, err)
		popts, warns, err := c.franzProducerOpts()
		require.NoError(t, err)
		cl, err := kgo.NewClient(append(franzBase([]string{"127.0.0.1:1"}, "t"), popts...)...)
		require.NoError(t, err, "franz-go accepts the options")
		t.Cleanup(cl.Close)
		return cl, warns
	}
	cl, warns := opts(t, ProducerConfig{Topics: []string{"t"}})
	require.Empty(t, warns)
	require.Equal(t, []kgo.CompressionCodec{kgo.NoCompression()}, cl.OptValue(kgo.ProducerBatchCompression))
	require.Equal(t, time.Duration(0), cl.OptValue(kgo.ProducerLinger))
	require.Equal(t, kgo.AllISRAcks(), cl.OptValue(kgo.RequiredAcks))
	require.Equal(t, false, cl.OptValue(kgo.DisableIdempotentWrite))
	require.Equal(t, int64(kafkaconf.DefaultRetries), cl.OptValue(kgo.RecordRetries))
	require.Equal(t, 30*time.Second, cl.OptValue(kgo.RecordDeliveryTimeout))
	require.Equal(t, 10*time.Second, cl.OptValue(kgo.ProduceRequestTimeout))
	require.Equal(t, int64(franzMaxBuffered), cl.OptValue(kgo.MaxBufferedRecords))

	cl, warns = opts(t, ProducerConfig{Topics: []string{"t"}, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksLeader), Retries: new(0)},
		Compression: "zstd", Linger: 5 * time.Millisecond, BatchBytes: 65536, BatchMessages: 10})
	require.Len(t, warns, 1, "franz-go has no batch message count, and says so")
	require.Contains(t, warns[0], "batch_messages=10")
	require.Equal(t, kgo.LeaderAck(), cl.OptValue(kgo.RequiredAcks))
	require.Equal(t, true, cl.OptValue(kgo.DisableIdempotentWrite))
	require.Equal(t, 5, cl.OptValue(kgo.MaxProduceRequestsInflightPerBroker))
	require.Equal(t, int64(0), cl.OptValue(kgo.RecordRetries))
	require.Equal(t, []kgo.CompressionCodec{kgo.ZstdCompression()}, cl.OptValue(kgo.ProducerBatchCompression))
	require.Equal(t, 5*time.Millisecond, cl.OptValue(kgo.ProducerLinger))
	require.Equal(t, int32(65536), cl.OptValue(kgo.ProducerBatchMaxBytes))

	cl, _ = opts(t, ProducerConfig{Topics: []string{"t"}, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksNone)}})
	require.Equal(t, kgo.NoAck(), cl.OptValue(kgo.RequiredAcks))
}

// Idempotent franz-go keeps five requests in flight: the resolved configuration says so, and
// says it departs from what was asked.
func TestFranzIdempotenceKeepsFiveInFlight(t *testing.T) {
	franz, _ := kafkaconf.LookupClient(kafkaconf.FranzGo)
	c, warns, err := ProducerConfig{Topics: []string{"t"}, Delivery: kafkaconf.Delivery{MaxInFlight: new(1)}}.Resolved(franz)
	require.NoError(t, err)
	require.True(t, *c.Idempotence)
	require.Equal(t, 5, *c.MaxInFlight)
	require.Len(t, warns, 1)
	require.Contains(t, warns[0], "franz-go's idempotent producer always keeps 5")
	_, _, err = c.franzProducerOpts()
	require.NoError(t, err)
}

// The answer queue never blocks its pusher, and a take returns everything pushed, in order.
func TestAnswerQueue(t *testing.T) {
	q := newAnswerQueue()
	ops := make([]*sendOp, 1000)
	for i := range ops {
		ops[i] = &sendOp{}
		q.push(sendAnswer{op: ops[i], offset: int64(i)})
	}
	select {
	case <-q.signal:
	default:
		t.Fatal("pushes signal the queue")
	}
	got := q.take(nil)
	require.Len(t, got, 1000)
	for i, a := range got {
		require.Same(t, ops[i], a.op)
	}
	q.push(sendAnswer{offset: 7})
	again := q.take(got[:0])
	require.Len(t, again, 1)
	require.Equal(t, int64(7), again[0].offset)
	q.drop()
	q.push(sendAnswer{offset: 8})
	require.Empty(t, q.take(nil), "answers after drop are discarded")
}

// A franz-go client that is full makes Produce wait for answers that, with no broker reachable,
// never come. The run's end interrupts the hand-over; franz-go then fails the record before
// buffering it, and that answer comes like any other: fail, the record was never sent.
func TestFranzHandOverIsInterruptedWhenTheClientIsFull(t *testing.T) {
	f := newFranzProducer(true, 2, slog.New(slog.NewTextHandler(io.Discard, nil)))
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.MaxBufferedRecords(2), kgo.UnknownTopicRetries(-1),
		kgo.RecordDeliveryTimeout(time.Hour), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithHooks(&f.hooks))
	require.NoError(t, err)
	f.cl = cl
	defer f.close()
	ops := []*sendOp{{rec: history.Record{Topic: "t", Value: "1-1"}}, {rec: history.Record{Topic: "t", Value: "1-2"}},
		{rec: history.Record{Topic: "t", Value: "1-3"}}}
	require.True(t, f.hand(t.Context(), ops[0]))
	require.True(t, f.hand(t.Context(), ops[1]))
	require.True(t, ops[0].mark.head)
	require.False(t, ops[1].mark.head, "the first record of the partition is still unanswered")
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	require.True(t, f.hand(ctx, ops[2]), "franz-go took the record, and answers it")
	require.GreaterOrEqual(t, time.Since(began), 250*time.Millisecond, "the hand-over waited while the client was full")
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	select {
	case <-f.ready():
	case <-deadline.C:
		t.Fatal("no answer for the interrupted record")
	}
	as := f.take(nil)
	require.Len(t, as, 1, "only the interrupted record is answered; the others wait for a broker")
	require.Same(t, ops[2], as[0].op)
	require.ErrorIs(t, as[0].err, context.Canceled)
	require.True(t, as[0].unbuffered)
	o := f.outcome(as[0])
	require.Equal(t, history.Fail, o.Type, "%s: %s", o.Rule, o.Why)
}
