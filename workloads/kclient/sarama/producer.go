package sarama

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// ProducerConfig applies s to base. retries counts sarama's retry backoffs: sarama calls
// Producer.Retry.BackoffFunc before every retry of a batch, so a send whose count did not move
// while it was in flight went to the brokers at most once (see SendTable).
func ProducerConfig(base *sarama.Config, s kclient.ProducerSpec, retries *atomic.Int64) (*sarama.Config, error) {
	cfg := base
	cfg.Producer.RequiredAcks = requiredAcks(s.Settings.Acks)
	cfg.Producer.Idempotent = s.Settings.Idempotent
	cfg.Net.MaxOpenRequests = s.Settings.MaxInFlight
	cfg.Producer.Retry.Max = s.Settings.Retries
	backoff := s.RetryBackoff
	cfg.Producer.Retry.Backoff = backoff
	cfg.Producer.Retry.BackoffFunc = func(int, int) time.Duration {
		retries.Add(1)
		return backoff
	}
	cfg.Producer.Timeout = s.RequestTimeout
	EnsureReadTimeout(cfg)
	cfg.Producer.Flush.Frequency = s.Linger
	cfg.Producer.Flush.Messages = s.BatchMessages
	cfg.Producer.Flush.Bytes = s.BatchBytes
	codec, err := compressionCodec(s.Compression)
	if err != nil {
		return nil, err
	}
	cfg.Producer.Compression = codec
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("producer: sarama refuses the configuration: %w", err)
	}
	return cfg, nil
}

func compressionCodec(c kafkaconf.Compression) (sarama.CompressionCodec, error) {
	switch c {
	case kafkaconf.CompressionNone, "":
		return sarama.CompressionNone, nil
	case kafkaconf.CompressionGzip:
		return sarama.CompressionGZIP, nil
	case kafkaconf.CompressionSnappy:
		return sarama.CompressionSnappy, nil
	case kafkaconf.CompressionLZ4:
		return sarama.CompressionLZ4, nil
	case kafkaconf.CompressionZstd:
		return sarama.CompressionZSTD, nil
	}
	_, err := kafkaconf.ParseCompression(string(c))
	return 0, fmt.Errorf("producer: %w", err)
}

// OpenProducer connects a sarama producer configured by s and asks for the partitions of
// s.Topics. sarama does what s asks, or refuses it: it gives no warnings.
func (c *Client) OpenProducer(_ context.Context, s kclient.ProducerSpec) (kclient.Producer, map[string][]int32, []string, error) {
	retries := new(atomic.Int64)
	cfg, err := ProducerConfig(c.base(s.ClientID), s, retries)
	if err != nil {
		return nil, nil, nil, &kclient.PermanentError{Err: err}
	}
	client, err := sarama.NewClient(c.brokers, cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("connecting to %v: %w", c.brokers, err)
	}
	parts, err := partitions(client, s.Topics)
	if err != nil {
		_ = client.Close()
		return nil, nil, nil, err
	}
	prod, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, nil, nil, fmt.Errorf("creating the sarama producer: %w", err)
	}
	return WrapProducer(prod, client, retries, s), parts, nil, nil
}

// producer is sarama's kclient.Producer. A goroutine moves sarama's answers (Successes and
// Errors) into an unbounded queue as they come: sarama stops taking records on Input once its
// answer channels are full, so they must be read while the role waits to hand a record over.
type producer struct {
	prod    sarama.AsyncProducer
	client  sarama.Client // closed after prod; nil when prod has none of its own
	count   *atomic.Int64 // sarama's retry backoffs (ProducerConfig)
	noRetry bool          // Producer.Retry.Max = 0: every record goes out at most once
	acksAll bool
	log     *slog.Logger
	q       *kit.Queue[answer]
	taken   []answer      // the queue's items, reused between takes
	stopped chan struct{} // closed once sarama has closed both answer channels
}

// record is one record handed to sarama: the message and what the producer noted at the
// hand-off. It rides in the message's Metadata.
type record struct {
	msg sarama.ProducerMessage
	tag any
	// count is the retry backoffs counted at the hand-off: a retry counted from then on may
	// be the record's.
	count int64
}

type answer struct {
	kclient.Answer
	count int64
}

// WrapProducer is prod, configured by ProducerConfig from s with retries counting its retry
// backoffs, as a kclient.Producer (a producer of the caller's making: sarama's mocks in tests).
// client, when not nil, is closed after prod.
func WrapProducer(prod sarama.AsyncProducer, client sarama.Client, retries *atomic.Int64, s kclient.ProducerSpec) kclient.Producer {
	p := &producer{prod: prod, client: client, count: retries, noRetry: s.Settings.Retries == 0,
		acksAll: s.Settings.Acks == kafkaconf.AcksAll, log: kit.OrDiscard(s.Log), q: kit.NewQueue[answer](), stopped: make(chan struct{})}
	go p.forward()
	return p
}

// burstMax bounds how many answers forward gathers before one push: a few of the role's
// batches of outcomes.
const burstMax = 256

// forward moves sarama's answers to the queue until sarama closes its channels: each answer
// with every other one already waiting, so that the burst one produce response acknowledges
// costs one push.
func (p *producer) forward() {
	defer close(p.stopped)
	succ, errs := p.prod.Successes(), p.prod.Errors()
	var burst []answer
	take := func(m *sarama.ProducerMessage, err error) {
		a := answer{Answer: kclient.Answer{Partition: m.Partition, Offset: m.Offset, Err: err}}
		if r, ok := m.Metadata.(*record); ok {
			a.Tag, a.count = r.tag, r.count
		}
		burst = append(burst, a)
	}
	for succ != nil || errs != nil {
		select {
		case m, ok := <-succ:
			if !ok {
				succ = nil
				continue
			}
			take(m, nil)
		case pe, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			take(pe.Msg, pe.Err)
		}
	more:
		for len(burst) < burstMax {
			select {
			case m, ok := <-succ:
				if !ok {
					succ = nil
					break more
				}
				take(m, nil)
			case pe, ok := <-errs:
				if !ok {
					errs = nil
					break more
				}
				take(pe.Msg, pe.Err)
			default:
				break more
			}
		}
		p.q.Push(burst...)
		clear(burst)
		burst = burst[:0]
	}
}

func (p *producer) Hand(ctx context.Context, s kclient.Send) bool {
	r := &record{tag: s.Tag}
	r.msg = sarama.ProducerMessage{Topic: s.Record.Topic, Partition: s.Record.Partition,
		Value: sarama.StringEncoder(s.Record.Value), Metadata: r}
	if s.Record.Key != "" {
		r.msg.Key = sarama.StringEncoder(s.Record.Key)
	}
	// Noted before sarama has the record: a retry counted from here on may be the record's.
	r.count = p.count.Load()
	select {
	case p.prod.Input() <- &r.msg:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *producer) Ready() <-chan struct{} { return p.q.Ready() }

// Take classifies each answer now: a retry counted since its hand-off may have been its own.
func (p *producer) Take(buf []kclient.Answer) []kclient.Answer {
	p.taken = p.q.Take(p.taken[:0])
	for i := range p.taken {
		a := p.taken[i].Answer
		once := p.noRetry || p.count.Load() == p.taken[i].count
		a.Outcome = ClassifySend(a.Err, SendContext{AcksAll: p.acksAll, Once: once})
		buf = append(buf, a)
	}
	clear(p.taken)
	return buf
}

func (p *producer) Retries() int64 { return p.count.Load() }

// Close shuts sarama down. Answers for sends the role already completed may still arrive: they
// are read and dropped until sarama closes its channels, in the background if that takes long
// (a cluster that no longer answers), so that the role returns.
func (p *producer) Close() {
	p.q.Drop()
	p.prod.AsyncClose()
	kit.CloseWithin(p.log, "sarama producer", 10*time.Second, func() {
		<-p.stopped
		if p.client != nil {
			_ = p.client.Close()
		}
	})
}
