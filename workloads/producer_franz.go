package workloads

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	kfranz "github.com/verity-kafka/verity/workloads/kclient/franz"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/verity-kafka/verity/kafkaconf"
)

// franzMaxBuffered is the most records a franz-go producer buffers before Produce blocks
// (kgo.MaxBufferedRecords). The workload's window keeps far fewer in flight; records it gave up
// on by its delivery timeout may still be in the client, and under a long fault they pile up
// until this limit makes the client push back.
const franzMaxBuffered = 50000

// franzProducerOpts are the producer options for a resolved cfg, on top of the client's base
// options (env.Franz), and what cfg asks that franz-go cannot do.
func (c ProducerConfig) franzProducerOpts() ([]kgo.Opt, []string, error) {
	acks := kgo.AllISRAcks()
	switch *c.Acks {
	case kafkaconf.AcksNone:
		acks = kgo.NoAck()
	case kafkaconf.AcksLeader:
		acks = kgo.LeaderAck()
	}
	codec, err := franzCodec(c.Compression)
	if err != nil {
		return nil, nil, err
	}
	backoff := c.RetryBackoff
	opts := []kgo.Opt{
		kgo.RequiredAcks(acks),
		kgo.RecordRetries(*c.Retries),
		kgo.RetryBackoffFn(func(int) time.Duration { return backoff }),
		kgo.ProduceRequestTimeout(c.RequestTimeout),
		kgo.RecordDeliveryTimeout(c.DeliveryTimeout),
		// franz-go lingers 10ms by default; Linger zero sends as soon as possible, as sarama.
		kgo.ProducerLinger(c.Linger),
		// franz-go compresses with snappy by default.
		kgo.ProducerBatchCompression(codec),
		// The workload chooses every record's partition before recording its invoke.
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(franzMaxBuffered),
	}
	if *c.Idempotence {
		// franz-go keeps five requests in flight (the resolved MaxInFlight says so) and
		// refuses MaxProduceRequestsInflightPerBroker with idempotence.
		if *c.MaxInFlight != kafkaconf.MaxIdempotentInFlight {
			return nil, nil, fmt.Errorf("producer: franz-go's idempotent producer keeps %d requests in flight, not %d",
				kafkaconf.MaxIdempotentInFlight, *c.MaxInFlight)
		}
	} else {
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(*c.MaxInFlight))
	}
	if c.BatchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(c.BatchBytes)))
	}
	var warnings []string
	if c.BatchMessages > 0 {
		warnings = append(warnings, fmt.Sprintf("batch_messages=%d ignored: franz-go bounds batches by bytes (batch_bytes) and linger only", c.BatchMessages))
	}
	return opts, warnings, nil
}

func franzCodec(c kafkaconf.Compression) (kgo.CompressionCodec, error) {
	switch c {
	case kafkaconf.CompressionNone:
		return kgo.NoCompression(), nil
	case kafkaconf.CompressionGzip:
		return kgo.GzipCompression(), nil
	case kafkaconf.CompressionSnappy:
		return kgo.SnappyCompression(), nil
	case kafkaconf.CompressionLZ4:
		return kgo.Lz4Compression(), nil
	case kafkaconf.CompressionZstd:
		return kgo.ZstdCompression(), nil
	}
	_, err := kafkaconf.ParseCompression(string(c))
	return kgo.CompressionCodec{}, fmt.Errorf("producer: %w", err)
}

// openFranzProducer creates a franz-go producer configured by cfg and asks it for the partition
// counts of cfg's topics. warnings say what of cfg franz-go cannot do.
func openFranzProducer(ctx context.Context, env Env, p int, cfg ProducerConfig, log *slog.Logger) (_ producerClient, _ map[string]int32, warnings []string, _ error) {
	popts, warnings, err := cfg.franzProducerOpts()
	if err != nil {
		return nil, nil, warnings, err
	}
	f := newFranzProducer(*cfg.Acks == kafkaconf.AcksAll, franzMaxBuffered, log)
	opts := append(env.Franz(clientID(p, "producer")), popts...)
	opts = append(opts, kgo.WithHooks(&f.hooks), kgo.WithLogger(newFranzLog(log, nil)))
	if f.cl, err = kgo.NewClient(opts...); err != nil {
		return nil, nil, warnings, fmt.Errorf("creating the franz-go producer: %w", err)
	}
	mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	parts, err := franzPartitionCounts(mctx, f.cl, cfg.Topics)
	if err != nil {
		f.cl.Close()
		return nil, nil, warnings, err
	}
	return f, parts, warnings, nil
}

// franzProducer is the producer workload's franz-go adapter. Records are produced
// asynchronously with one promise, which queues each answer in the adapter's unbounded queue:
// franz-go calls promises one at a time and a promise must not block, or the client stalls,
// and Produce itself blocks while the client is full.
//
// franz-go retries a batch internally and says only how it ended, and it fails every batch
// of a partition with the error of the first (failAllRecords), batches in flight included.
// What the adapter notes to tell how often a record may have gone out (kfranz.SendContext):
// whether franz-go buffered it at all (HookProduceRecordPartitioned), whether it was the first
// unanswered record of its partition when handed over (then its batch is the partition's first,
// and an error is about that batch), and how many produce requests the client wrote between
// the hand-off and the answer (HookBrokerWrite).
type franzProducer struct {
	cl          *kgo.Client
	hooks       franzHooks
	q           *answerQueue
	acksAll     bool
	maxBuffered int64 // the client's kgo.MaxBufferedRecords
	log         *slog.Logger
	// pending counts, per partition, the records handed over and not yet answered. The map is
	// the workload goroutine's; promises reach their counter through the record.
	pending map[franzPartition]*atomic.Int64
}

// newFranzProducer is an adapter without its client: the caller creates the client with the
// adapter's hooks (kgo.WithHooks(&f.hooks)) and at most maxBuffered records buffered.
func newFranzProducer(acksAll bool, maxBuffered int64, log *slog.Logger) *franzProducer {
	return &franzProducer{q: newAnswerQueue(), acksAll: acksAll, maxBuffered: maxBuffered, log: log,
		pending: map[franzPartition]*atomic.Int64{}}
}

type franzPartition struct {
	topic     string
	partition int32
}

// franzRec is one record handed to franz-go, with the adapter's notes on it. It is the kgo
// record's Context (franz-go's field for carrying enrichment through hooks and promises), so
// that hooks and the promise find it without a lookup; it never ends, so franz-go never cancels
// the record on the workload's behalf.
type franzRec struct {
	context.Context
	rec      kgo.Record
	op       *sendOp
	pending  *atomic.Int64
	buffered atomic.Bool
}

// franzHooks count the client's produce request writes and note which records it buffered.
type franzHooks struct {
	writes       atomic.Int64 // produce requests written, completely or not
	failedWrites atomic.Int64 // of which the write failed (franz-go retries their batches)
}

func (h *franzHooks) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.Produce) {
		return
	}
	// Counted whatever was written: a failed write may have sent part of the request, and a
	// count too high only makes an outcome unknown.
	h.writes.Add(1)
	if err != nil {
		h.failedWrites.Add(1)
	}
}

// OnProduceRecordPartitioned runs when franz-go has put the record into its partition's batch,
// under the partition's lock, before any request can carry it or any failure can answer it.
func (h *franzHooks) OnProduceRecordPartitioned(r *kgo.Record, _ int32) {
	if fr, ok := r.Context.(*franzRec); ok {
		fr.buffered.Store(true)
	}
}

func (f *franzProducer) hand(ctx context.Context, op *sendOp) bool {
	fr := &franzRec{Context: context.Background(), op: op}
	fr.rec = kgo.Record{Topic: op.rec.Topic, Partition: op.rec.Partition, Value: []byte(op.rec.Value), Context: fr}
	if op.rec.Key != "" {
		fr.rec.Key = []byte(op.rec.Key)
	}
	tp := franzPartition{op.rec.Topic, op.rec.Partition}
	if fr.pending = f.pending[tp]; fr.pending == nil {
		fr.pending = new(atomic.Int64)
		f.pending[tp] = fr.pending
	}
	// Noted before franz-go has the record: a request written from here on may carry it.
	op.mark = handMark{count: f.hooks.writes.Load(), head: fr.pending.Add(1) == 1}
	// Only this goroutine adds records, so room seen here is still there in Produce.
	if f.cl.BufferedProduceRecords() < f.maxBuffered {
		f.cl.Produce(context.Background(), &fr.rec, f.promise)
		return true
	}
	// The client is full: Produce waits for answers to free room. The run's end may interrupt
	// that wait (franz-go then fails the record, unbuffered, with the context's error), but
	// must not cancel the record once buffered, so the context ends only while Produce waits.
	pctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	f.cl.Produce(pctx, &fr.rec, f.promise)
	stop()
	return true
}

// promise queues franz-go's answer for one record.
func (f *franzProducer) promise(r *kgo.Record, err error) {
	fr, _ := r.Context.(*franzRec)
	if fr == nil {
		return
	}
	fr.pending.Add(-1)
	f.q.push(sendAnswer{op: fr.op, partition: r.Partition, offset: r.Offset, err: err, unbuffered: !fr.buffered.Load()})
}

func (f *franzProducer) ready() <-chan struct{}             { return f.q.signal }
func (f *franzProducer) take(buf []sendAnswer) []sendAnswer { return f.q.take(buf) }
func (f *franzProducer) retries() int64                     { return f.hooks.failedWrites.Load() }
func (f *franzProducer) outcome(a sendAnswer) Outcome {
	return kfranz.ClassifySend(a.err, f.sendContext(a))
}

// sendContext is what the adapter knows of how a's record went out. The writes are counted when
// the workload classifies the answer, not when franz-go gave it: later only counts more.
func (f *franzProducer) sendContext(a sendAnswer) kfranz.SendContext {
	return kfranz.SendContext{AcksAll: f.acksAll, Buffered: !a.unbuffered, Head: a.op.mark.head,
		Writes: f.hooks.writes.Load() - a.op.mark.count}
}

// close closes the client: records still buffered fail with kgo.ErrClientClosed, answers that
// nobody reads any more.
func (f *franzProducer) close() {
	f.q.drop()
	closeProducerWithin(f.log, "franz-go producer", 10*time.Second, f.cl.Close)
}
