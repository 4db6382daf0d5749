package kclient

import (
	"context"
	"log/slog"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

// ProducerSpec is what a plain producer is opened with: settings resolved by the role, so that
// every client applies the same ones.
type ProducerSpec struct {
	ClientID string
	// Settings are the resolved delivery settings: acks, idempotence, requests in flight,
	// retries.
	Settings kafkaconf.Producer
	// RetryBackoff is the pause before a retry; RequestTimeout the leader's wait for the ISR;
	// DeliveryTimeout Kafka's delivery.timeout.ms, for clients that have it (the role bounds
	// every send by it anyway).
	RetryBackoff, RequestTimeout, DeliveryTimeout time.Duration
	// Linger, BatchMessages and BatchBytes shape batches; zero sends as soon as possible. A
	// client that cannot honour one says so in OpenProducer's warnings.
	Linger        time.Duration
	BatchMessages int
	BatchBytes    int
	Compression   kafkaconf.Compression
	// Topics are the topics the producer writes: OpenProducer returns their partitions.
	Topics []string
	Log    *slog.Logger
}

// Send is one record for a producer, in the partition the role chose, with the role's tag: the
// producer gives the tag back in the record's Answer.
type Send struct {
	Record history.Record
	Tag    any
}

// Answer is a producer's answer for one record: where the broker put it, or the error, and the
// outcome by the client's send-error table.
type Answer struct {
	Tag       any
	Partition int32
	Offset    int64
	Err       error
	Outcome   Outcome
}

// Producer is one plain producer instance. Only the goroutine that owns it calls Hand and Take.
type Producer interface {
	// Hand gives s's record to the client. Records handed over one after another keep that
	// order in their partition. Hand blocks while the client applies backpressure, but never
	// stops answers from being queued meanwhile (the client may be waiting for its answers to
	// be taken before it takes another record). It returns false, having handed nothing
	// over, when ctx ends first.
	Hand(ctx context.Context, s Send) bool
	// Ready is signalled when answers are waiting; Take appends them all to buf, each
	// classified as it is taken (what the client knows then of how often the record may have
	// gone to the brokers). Every record handed over gets exactly one answer, in any order.
	Ready() <-chan struct{}
	Take(buf []Answer) []Answer
	// Retries is the client's retrying so far: sarama's retry backoffs, franz-go's failed
	// produce writes.
	Retries() int64
	// Close shuts the client down, dropping answers that arrive later, and returns within a
	// bound even when the cluster no longer answers.
	Close()
}
