package franz

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// MaxBuffered is the most records a producer buffers before Produce blocks
// (kgo.MaxBufferedRecords). The role's window keeps far fewer in flight; records it gave up on
// by its delivery timeout may still be in the client, and under a long fault they pile up until
// this limit makes the client push back.
const MaxBuffered = 50000

// ProducerOpts are the producer options for s, on top of the client's base options, and what s
// asks that franz-go cannot do.
func ProducerOpts(s kclient.ProducerSpec) ([]kgo.Opt, []string, error) {
	acks := kgo.AllISRAcks()
	switch s.Settings.Acks {
	case kafkaconf.AcksNone:
		acks = kgo.NoAck()
	case kafkaconf.AcksLeader:
		acks = kgo.LeaderAck()
	}
	codec, err := compressionCodec(s.Compression)
	if err != nil {
		return nil, nil, err
	}
	backoff := s.RetryBackoff
	opts := []kgo.Opt{
		kgo.RequiredAcks(acks),
		kgo.RecordRetries(s.Settings.Retries),
		kgo.RetryBackoffFn(func(int) time.Duration { return backoff }),
		kgo.ProduceRequestTimeout(s.RequestTimeout),
		kgo.RecordDeliveryTimeout(s.DeliveryTimeout),
		// franz-go lingers 10ms by default; Linger zero sends as soon as possible, as sarama.
		kgo.ProducerLinger(s.Linger),
		// franz-go compresses with snappy by default.
		kgo.ProducerBatchCompression(codec),
		// The role chooses every record's partition before recording its invoke.
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(MaxBuffered),
	}
	if s.Settings.Idempotent {
		// franz-go keeps five requests in flight (the resolved MaxInFlight says so) and
		// refuses MaxProduceRequestsInflightPerBroker with idempotence.
		if s.Settings.MaxInFlight != kafkaconf.MaxIdempotentInFlight {
			return nil, nil, fmt.Errorf("producer: franz-go's idempotent producer keeps %d requests in flight, not %d",
				kafkaconf.MaxIdempotentInFlight, s.Settings.MaxInFlight)
		}
	} else {
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(s.Settings.MaxInFlight))
	}
	if s.BatchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(s.BatchBytes)))
	}
	var warnings []string
	if s.BatchMessages > 0 {
		warnings = append(warnings, fmt.Sprintf("batch_messages=%d ignored: franz-go bounds batches by bytes (batch_bytes) and linger only", s.BatchMessages))
	}
	return opts, warnings, nil
}

func compressionCodec(c kafkaconf.Compression) (kgo.CompressionCodec, error) {
	switch c {
	case kafkaconf.CompressionNone, "":
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

// OpenProducer creates a franz-go producer configured by s and asks it for the partitions of
// s.Topics.
func (c *Client) OpenProducer(ctx context.Context, s kclient.ProducerSpec) (_ kclient.Producer, _ map[string][]int32, warnings []string, _ error) {
	popts, warnings, err := ProducerOpts(s)
	if err != nil {
		return nil, nil, warnings, &kclient.PermanentError{Err: err}
	}
	p := newProducer(s.Settings.Acks == kafkaconf.AcksAll, MaxBuffered, s.Log)
	opts := append(c.base(s.ClientID), popts...)
	opts = append(opts, kgo.WithHooks(&p.hooks), kgo.WithLogger(NewLog(p.log, nil)))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, warnings, &kclient.PermanentError{Err: fmt.Errorf("creating the franz-go producer: %w", err)}
	}
	p.cl = cl
	mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	parts, err := partitions(mctx, cl, s.Topics)
	if err != nil {
		cl.Close()
		return nil, nil, warnings, err
	}
	return p, parts, warnings, nil
}

// producer is franz-go's kclient.Producer. Records are produced asynchronously with one promise,
// which queues each answer in an unbounded queue: franz-go calls promises one at a time and a
// promise must not block, or the client stalls, and Produce itself blocks while the client is
// full.
//
// franz-go retries a batch internally and says only how it ended, and it fails every batch of a
// partition with the error of the first (failAllRecords), batches in flight included. What the
// producer notes to tell how often a record may have gone out (SendContext): whether franz-go
// buffered it at all (HookProduceRecordPartitioned), whether it was the first unanswered record
// of its partition when handed over (then its batch is the partition's first, and an error is
// about that batch), and how many produce requests the client wrote between the hand-off and the
// answer (HookBrokerWrite).
type producer struct {
	cl          *kgo.Client
	hooks       hooks
	q           *kit.Queue[answer]
	taken       []answer
	acksAll     bool
	maxBuffered int64 // the client's kgo.MaxBufferedRecords
	log         *slog.Logger
	// pending counts, per partition, the records handed over and not yet answered. The map is
	// the owner's goroutine's; promises reach their counter through the record.
	pending map[partition]*atomic.Int64
}

var _ kclient.Producer = (*producer)(nil)

// newProducer is a producer without its client: the caller creates the client with the
// producer's hooks and at most maxBuffered records buffered.
func newProducer(acksAll bool, maxBuffered int64, log *slog.Logger) *producer {
	return &producer{q: kit.NewQueue[answer](), acksAll: acksAll, maxBuffered: maxBuffered, log: kit.OrDiscard(log),
		pending: map[partition]*atomic.Int64{}}
}

type partition struct {
	topic     string
	partition int32
}

// record is one record handed to franz-go, with the producer's notes on it. It is the kgo
// record's Context (franz-go's field for carrying enrichment through hooks and promises), so
// that hooks and the promise find it without a lookup; it never ends, so franz-go never cancels
// the record on the role's behalf.
type record struct {
	context.Context
	rec      kgo.Record
	tag      any
	mark     mark
	pending  *atomic.Int64
	buffered atomic.Bool
}

// mark is what the producer notes about a record when it is handed over.
type mark struct {
	// writes are the produce requests written before the hand-off.
	writes int64
	// head: no earlier record of the same partition was still unanswered by the client, so
	// the record's batch is the first its partition has to send.
	head bool
}

type answer struct {
	kclient.Answer
	mark mark
	// unbuffered: franz-go failed the record before it joined any batch, so it was never sent.
	unbuffered bool
}

// hooks count the client's produce request writes and note which records it buffered.
type hooks struct {
	writes       atomic.Int64 // produce requests written, completely or not
	failedWrites atomic.Int64 // of which the write failed (franz-go retries their batches)
}

func (h *hooks) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
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
func (h *hooks) OnProduceRecordPartitioned(r *kgo.Record, _ int32) {
	if fr, ok := r.Context.(*record); ok {
		fr.buffered.Store(true)
	}
}

func (p *producer) Hand(ctx context.Context, s kclient.Send) bool {
	fr := &record{Context: context.Background(), tag: s.Tag}
	fr.rec = kgo.Record{Topic: s.Record.Topic, Partition: s.Record.Partition, Value: []byte(s.Record.Value), Context: fr}
	if s.Record.Key != "" {
		fr.rec.Key = []byte(s.Record.Key)
	}
	tp := partition{s.Record.Topic, s.Record.Partition}
	if fr.pending = p.pending[tp]; fr.pending == nil {
		fr.pending = new(atomic.Int64)
		p.pending[tp] = fr.pending
	}
	// Noted before franz-go has the record: a request written from here on may carry it.
	fr.mark = mark{writes: p.hooks.writes.Load(), head: fr.pending.Add(1) == 1}
	// Only this goroutine adds records, so room seen here is still there in Produce.
	if p.cl.BufferedProduceRecords() < p.maxBuffered {
		p.cl.Produce(context.Background(), &fr.rec, p.promise)
		return true
	}
	// The client is full: Produce waits for answers to free room. The run's end may interrupt
	// that wait (franz-go then fails the record, unbuffered, with the context's error), but
	// must not cancel the record once buffered, so the context ends only while Produce waits.
	pctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	p.cl.Produce(pctx, &fr.rec, p.promise)
	stop()
	return true
}

// promise queues franz-go's answer for one record.
func (p *producer) promise(r *kgo.Record, err error) {
	fr, _ := r.Context.(*record)
	if fr == nil {
		return
	}
	fr.pending.Add(-1)
	p.q.Push(answer{Answer: kclient.Answer{Tag: fr.tag, Partition: r.Partition, Offset: r.Offset, Err: err},
		mark: fr.mark, unbuffered: !fr.buffered.Load()})
}

func (p *producer) Ready() <-chan struct{} { return p.q.Ready() }

// Take classifies each answer now. The writes are counted when the answer is taken, not when
// franz-go gave it: later only counts more.
func (p *producer) Take(buf []kclient.Answer) []kclient.Answer {
	p.taken = p.q.Take(p.taken[:0])
	for i := range p.taken {
		a := p.taken[i].Answer
		a.Outcome = ClassifySend(a.Err, p.sendContext(p.taken[i]))
		buf = append(buf, a)
	}
	clear(p.taken)
	return buf
}

func (p *producer) sendContext(a answer) SendContext {
	return SendContext{AcksAll: p.acksAll, Buffered: !a.unbuffered, Head: a.mark.head,
		Writes: p.hooks.writes.Load() - a.mark.writes}
}

func (p *producer) Retries() int64 { return p.hooks.failedWrites.Load() }

// Close closes the client: records still buffered fail with kgo.ErrClientClosed, answers that
// nobody reads any more.
func (p *producer) Close() {
	p.q.Drop()
	kit.CloseWithin(p.log, "franz-go producer", 10*time.Second, p.cl.Close)
}
