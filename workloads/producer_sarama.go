package workloads

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	ksarama "github.com/verity-kafka/verity/workloads/kclient/sarama"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/kafkaconf"
)

// requiredAcks maps Kafka's acks onto sarama's.
func requiredAcks(a kafkaconf.Acks) sarama.RequiredAcks {
	switch a {
	case kafkaconf.AcksNone:
		return sarama.NoResponse
	case kafkaconf.AcksLeader:
		return sarama.WaitForLocal
	}
	return sarama.WaitForAll
}

// saramaConfig applies a resolved c to base. retries counts sarama's retry backoffs: sarama
// calls Producer.Retry.BackoffFunc before every retry of a batch, so a send whose count did not
// move while it was in flight went to the brokers at most once (see ksarama.SendTable).
func (c ProducerConfig) saramaConfig(base *sarama.Config, retries *atomic.Int64) (*sarama.Config, error) {
	cfg := base
	cfg.Producer.RequiredAcks = requiredAcks(*c.Acks)
	cfg.Producer.Idempotent = *c.Idempotence
	cfg.Net.MaxOpenRequests = *c.MaxInFlight
	cfg.Producer.Retry.Max = *c.Retries
	backoff := c.RetryBackoff
	cfg.Producer.Retry.Backoff = backoff
	cfg.Producer.Retry.BackoffFunc = func(int, int) time.Duration {
		retries.Add(1)
		return backoff
	}
	cfg.Producer.Timeout = c.RequestTimeout
	ensureReadTimeout(cfg)
	cfg.Producer.Flush.Frequency = c.Linger
	cfg.Producer.Flush.Messages = c.BatchMessages
	cfg.Producer.Flush.Bytes = c.BatchBytes
	codec, err := compressionCodec(c.Compression)
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

// ensureReadTimeout sets the client's socket read timeout 5 s above the leader's ack timeout
// (Producer.Timeout): below it, when the ISR is slow, sarama would give up on the connection at
// the moment the leader would have answered REQUEST_TIMED_OUT, failing every request in flight
// on it; far above it, a request whose answer is lost would hang longer than the request
// timeout the scenario asked for (Kafka's request.timeout.ms bounds the client's wait).
func ensureReadTimeout(cfg *sarama.Config) {
	cfg.Net.ReadTimeout = cfg.Producer.Timeout + 5*time.Second
}

// partitionCounts asks the cluster how many partitions each topic has.
func partitionCounts(client sarama.Client, topics []string) (map[string]int32, error) {
	parts := map[string]int32{}
	for _, t := range topics {
		ps, err := client.Partitions(t)
		if err != nil {
			return nil, fmt.Errorf("partitions of topic %s: %w", t, err)
		}
		parts[t] = int32(len(ps))
	}
	return parts, nil
}

// openSaramaProducer connects a sarama producer configured by cfg and asks for the partition
// counts of cfg's topics.
func openSaramaProducer(env Env, p int, cfg ProducerConfig, log *slog.Logger) (producerClient, map[string]int32, error) {
	retries := new(atomic.Int64)
	scfg, err := cfg.saramaConfig(env.Sarama(clientID(p, "producer")), retries)
	if err != nil {
		return nil, nil, err
	}
	client, err := sarama.NewClient(env.Brokers, scfg)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %v: %w", env.Brokers, err)
	}
	parts, err := partitionCounts(client, cfg.Topics)
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	prod, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("creating the sarama producer: %w", err)
	}
	return newSaramaProducer(prod, client, retries, cfg, log), parts, nil
}

// saramaProducer is the producer workload's sarama adapter. A goroutine moves sarama's answers
// (Successes and Errors) into the adapter's unbounded queue as they come: sarama stops taking
// records on Input once its answer channels are full, so they must be read while the workload
// waits to hand a record over.
type saramaProducer struct {
	prod    sarama.AsyncProducer
	client  sarama.Client // closed after prod; nil when prod has none of its own
	count   *atomic.Int64 // sarama's retry backoffs (saramaConfig)
	noRetry bool          // Producer.Retry.Max = 0: every record goes out at most once
	acksAll bool
	log     *slog.Logger
	q       *answerQueue
	stopped chan struct{} // closed once sarama has closed both answer channels
}

// newSaramaProducer adapts prod, configured by the resolved cfg with retries counting its retry
// backoffs, and starts moving its answers.
func newSaramaProducer(prod sarama.AsyncProducer, client sarama.Client, retries *atomic.Int64, cfg ProducerConfig, log *slog.Logger) *saramaProducer {
	s := &saramaProducer{prod: prod, client: client, count: retries, noRetry: *cfg.Retries == 0,
		acksAll: *cfg.Acks == kafkaconf.AcksAll, log: log, q: newAnswerQueue(), stopped: make(chan struct{})}
	go s.forward()
	return s
}

// forward moves sarama's answers to the queue until sarama closes its channels: each answer
// with every other one already waiting, so that the burst one produce response acknowledges
// costs one push.
func (s *saramaProducer) forward() {
	defer close(s.stopped)
	succ, errs := s.prod.Successes(), s.prod.Errors()
	var burst []sendAnswer
	take := func(m *sarama.ProducerMessage, err error) {
		op, _ := m.Metadata.(*sendOp)
		burst = append(burst, sendAnswer{op: op, partition: m.Partition, offset: m.Offset, err: err})
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
		for len(burst) < 4*maxBatch {
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
		s.q.push(burst...)
		clear(burst)
		burst = burst[:0]
	}
}

func (s *saramaProducer) hand(ctx context.Context, op *sendOp) bool {
	msg := &sarama.ProducerMessage{Topic: op.rec.Topic, Partition: op.rec.Partition,
		Value: sarama.StringEncoder(op.rec.Value), Metadata: op}
	if op.rec.Key != "" {
		msg.Key = sarama.StringEncoder(op.rec.Key)
	}
	// Noted before sarama has the record: a retry counted from here on may be the record's.
	op.mark = handMark{count: s.count.Load()}
	select {
	case s.prod.Input() <- msg:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *saramaProducer) ready() <-chan struct{}             { return s.q.signal }
func (s *saramaProducer) take(buf []sendAnswer) []sendAnswer { return s.q.take(buf) }
func (s *saramaProducer) retries() int64                     { return s.count.Load() }
func (s *saramaProducer) outcome(a sendAnswer) Outcome {
	return ksarama.ClassifySend(a.err, s.sendContext(a))
}
func (s *saramaProducer) sendContext(a sendAnswer) ksarama.SendContext {
	return ksarama.SendContext{AcksAll: s.acksAll, Once: s.once(a)}
}
func (s *saramaProducer) once(a sendAnswer) bool {
	return s.noRetry || s.count.Load() == a.op.mark.count
}

// close shuts sarama down. Answers for sends already completed by timeout may still arrive:
// they are read and dropped until sarama closes its channels, in the background if that takes
// long (a cluster that no longer answers), so that the workload returns.
func (s *saramaProducer) close() {
	s.q.drop()
	s.prod.AsyncClose()
	closeProducerWithin(s.log, "sarama producer", 10*time.Second, func() {
		<-s.stopped
		if s.client != nil {
			_ = s.client.Close()
		}
	})
}
