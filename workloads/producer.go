package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// Partitioning says how a producer picks each record's partition. The workload always picks it
// itself, before the invoke is recorded, and hands the client the record with that partition (a
// manual partitioner), so the invoke already names the partition the record goes to.
type Partitioning string

const (
	// PartitionRandom: a seeded uniform choice among the topic's partitions (the default).
	PartitionRandom Partitioning = "random"
	// PartitionKey: a key drawn from Keys keys, partition = murmur2(key) mod partitions, as the
	// Java client's default partitioner maps keys (kclient.KeyPartition).
	PartitionKey Partitioning = "key"
	// PartitionFixed: every record to Partition.
	PartitionFixed Partitioning = "fixed"
	// PartitionRoundRobin: partitions in turn.
	PartitionRoundRobin Partitioning = "round-robin"
)

// ProducerConfig is one plain (non-transactional) producer instance. The zero value plus Topics
// is Kafka's default producer as far as the run's client can be one: acks=all, idempotent (with
// one request in flight for sarama, which allows no more; five for franz-go).
type ProducerConfig struct {
	// Topics the producer writes; each record goes to one of them, chosen from the seed.
	Topics []string `json:"topics"`
	// Delivery is acks, enable.idempotence, max.in.flight.requests.per.connection (sarama:
	// Net.MaxOpenRequests; franz-go: MaxProduceRequestsInflightPerBroker) and retries (sarama:
	// Producer.Retry.Max; franz-go: RecordRetries); unset ones take Kafka's defaults as
	// kafkaconf.ResolveProducer decides them for the run's client. Resolved states all four.
	kafkaconf.Delivery
	// RetryBackoff between retries; default 100ms.
	RetryBackoff time.Duration `json:"retry_backoff,omitempty"`
	// RequestTimeout is how long the leader waits for the ISR before answering an acks=all
	// produce (sarama Producer.Timeout, franz-go ProduceRequestTimeout, Kafka's
	// request.timeout.ms role); default 10s.
	RequestTimeout time.Duration `json:"request_timeout,omitempty"`
	// DeliveryTimeout bounds a send from invoke to outcome (Kafka's delivery.timeout.ms; sarama
	// has none, franz-go's RecordDeliveryTimeout cannot fail an idempotent record in flight, so
	// the workload enforces it): a send still unanswered then completes info, and the client's
	// late answer is ignored. Default 30s.
	DeliveryTimeout time.Duration `json:"delivery_timeout,omitempty"`
	// Linger (sarama Flush.Frequency, franz-go ProducerLinger), BatchMessages (sarama
	// Flush.Messages; franz-go has none) and BatchBytes (sarama Flush.Bytes, franz-go
	// ProducerBatchMaxBytes) shape batches; zero sends as soon as possible.
	Linger        time.Duration `json:"linger,omitempty"`
	BatchMessages int           `json:"batch_messages,omitempty"`
	BatchBytes    int           `json:"batch_bytes,omitempty"`
	// Compression is none (default), gzip, snappy, lz4 or zstd.
	Compression kafkaconf.Compression `json:"compression,omitempty"`
	// Partitioning, with Partition for PartitionFixed and Keys (default 16) for PartitionKey.
	Partitioning Partitioning `json:"partitioning,omitempty"`
	Partition    int32        `json:"partition,omitempty"`
	Keys         int          `json:"keys,omitempty"`
	// Async hands records to the client without waiting for earlier ones, up to Window
	// (default 100) in flight; invokes are recorded in the order records are handed to the
	// client, and completions carry "of". Otherwise one send at a time.
	Async  bool `json:"async,omitempty"`
	Window int  `json:"window,omitempty"`
	// Rate caps sends per second (0: as fast as the producer goes).
	Rate float64 `json:"rate,omitempty"`
	// AppResend is the application-resend mode: after a send that ends fail or info, the
	// application sends the same value again as a new record, up to AppResend more times.
	// Idempotence cannot deduplicate these (a new send gets a new sequence number), so
	// duplicates are permitted in every configuration.
	AppResend int `json:"app_resend,omitempty"`
	// MaxSends stops the producer after this many new records (0: until its context ends).
	MaxSends int `json:"max_sends,omitempty"`
	// Drain bounds the wait for outstanding sends once the context ends; default
	// DeliveryTimeout.
	Drain time.Duration `json:"drain,omitempty"`
}

// Sarama is what sarama's producer does with Kafka's settings where it departs from Kafka's Java
// client (kafkaconf.Clients): its idempotent producer keeps one request in flight
// (Net.MaxOpenRequests must be 1), and an unset retries is its own default, 3, each send still
// bounded by the workload's delivery timeout.
func Sarama() kafkaconf.Client {
	c, _ := kafkaconf.LookupClient(kafkaconf.Sarama)
	return c
}

// settings are the effective delivery settings of a producer that asks for c, run by client.
func settings(c kafkaconf.ProducerConfig, client kafkaconf.Client) (kafkaconf.Producer, []string, error) {
	r := kafkaconf.ResolveProducer(c, client)
	if r.Conflict != "" {
		return r.Producer, nil, fmt.Errorf("producer: %s: Kafka refuses to start such a producer", r.Conflict)
	}
	return r.Producer, r.Departures, nil
}

// spec is what a client opens the resolved c with.
func (c ProducerConfig) spec(clientID string, log *slog.Logger) kclient.ProducerSpec {
	return kclient.ProducerSpec{ClientID: clientID,
		Settings:     kafkaconf.Producer{Acks: *c.Acks, Idempotent: *c.Idempotence, MaxInFlight: *c.MaxInFlight, Retries: *c.Retries},
		RetryBackoff: c.RetryBackoff, RequestTimeout: c.RequestTimeout, DeliveryTimeout: c.DeliveryTimeout,
		Linger: c.Linger, BatchMessages: c.BatchMessages, BatchBytes: c.BatchBytes, Compression: c.Compression,
		Topics: c.Topics, Log: log}
}

// Settings are the effective settings of a producer resolved for client (see Resolved).
func (c ProducerConfig) Settings(client kafkaconf.Client) kafkaconf.Producer {
	p, _, _ := settings(c.kafka(), client)
	return p
}

func (c ProducerConfig) kafka() kafkaconf.ProducerConfig {
	return kafkaconf.ProducerConfig{Delivery: c.Delivery, AppResend: new(c.AppResend > 0)}
}

// Resolved fills in the defaults and checks the configuration: Delivery comes back with all
// four settings stated as client will run them. warnings say where the client made it depart
// from Kafka (never silently); err says what cannot be run at all.
func (c ProducerConfig) Resolved(client kafkaconf.Client) (_ ProducerConfig, warnings []string, err error) {
	if len(c.Topics) == 0 {
		return c, nil, errors.New("producer: no topics")
	}
	p, warnings, err := settings(c.kafka(), client)
	if err != nil {
		return c, nil, err
	}
	c.Delivery = p.Config().Delivery
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 100 * time.Millisecond
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.DeliveryTimeout <= 0 {
		c.DeliveryTimeout = 30 * time.Second
	}
	if c.Drain <= 0 {
		c.Drain = c.DeliveryTimeout
	}
	if c.Compression == "" {
		c.Compression = kafkaconf.DefaultCompression
	}
	if _, err := kafkaconf.ParseCompression(string(c.Compression)); err != nil {
		return c, nil, fmt.Errorf("producer: %w", err)
	}
	switch c.Partitioning {
	case "":
		c.Partitioning = PartitionRandom
	case PartitionRandom, PartitionRoundRobin:
	case PartitionKey:
		if c.Keys <= 0 {
			c.Keys = 16
		}
	case PartitionFixed:
		if c.Partition < 0 {
			return c, nil, fmt.Errorf("producer: partition %d < 0", c.Partition)
		}
	default:
		return c, nil, fmt.Errorf("producer: partitioning %q: want random, key, fixed or round-robin", c.Partitioning)
	}
	if c.Window <= 0 {
		c.Window = 100
	}
	if !c.Async {
		c.Window = 1
	}
	if c.Rate < 0 || c.AppResend < 0 || c.MaxSends < 0 {
		return c, nil, errors.New("producer: rate, app_resend and max_sends must not be negative")
	}
	return c, warnings, nil
}

// ProducerStats counts a producer's outcomes.
type ProducerStats struct {
	Process        int
	OK, Fail, Info int64
	Resends        int64 // application resends (AppResend)
	TimedOut       int64 // completed info by DeliveryTimeout
	Unsent         int64 // completed fail: the run stopped before the record was handed to the client
	Elapsed        time.Duration
	SendsPerSecond float64
	Warnings       []string
	// Retries is the client's retrying while the producer ran, as its adapter can see it:
	// sarama's retry backoffs; franz-go's produce requests whose write failed (franz-go has no
	// hook for a batch it sends again after an error answer).
	Retries int64
}

// target is where one record goes.
type target struct {
	topic     string
	partition int32
	key       string
}

// chooser draws targets from a process's random source. It is separate from the producer so
// that a test can check that one seed gives one sequence of choices.
type chooser struct {
	rng    *rand.Rand
	cfg    ProducerConfig
	topics []string
	parts  map[string]int32
	rr     int
}

func newChooser(rng *rand.Rand, cfg ProducerConfig, parts map[string]int32) *chooser {
	return &chooser{rng: rng, cfg: cfg, topics: cfg.Topics, parts: parts}
}

func (ch *chooser) next() (target, error) {
	t := target{topic: ch.topics[0]}
	if len(ch.topics) > 1 {
		t.topic = ch.topics[ch.rng.IntN(len(ch.topics))]
	}
	n := ch.parts[t.topic]
	if n <= 0 {
		return t, fmt.Errorf("topic %s: no partitions known", t.topic)
	}
	switch ch.cfg.Partitioning {
	case PartitionFixed:
		if ch.cfg.Partition >= n {
			return t, fmt.Errorf("topic %s has %d partitions: no partition %d", t.topic, n, ch.cfg.Partition)
		}
		t.partition = ch.cfg.Partition
	case PartitionRoundRobin:
		t.partition = int32(ch.rr % int(n))
		ch.rr++
	case PartitionKey:
		t.key = "k" + strconv.Itoa(ch.rng.IntN(ch.cfg.Keys))
		t.partition = kclient.KeyPartition([]byte(t.key), n)
	default:
		t.partition = int32(ch.rng.IntN(int(n)))
	}
	return t, nil
}

// sendOp is one send in flight: its invoke, and what decides its outcome.
type sendOp struct {
	inv      history.Op
	rec      history.Record
	attempt  int // 0 for the first send of a value, n for its nth application resend
	deadline time.Time
	done     bool
}

type producerRun struct {
	env    Env
	cfg    ProducerConfig
	p      history.Process
	log    *slog.Logger
	values *Values
	choose *chooser
	cl     kclient.Producer

	inflight   []*sendOp // in invoke order: the head has the earliest deadline
	live       int       // inflight entries not yet done
	resend     []*sendOp // values waiting to be sent again
	answers    []kclient.Answer
	stats      ProducerStats
	timer      *time.Timer  // pacing (Rate, drain deadline)
	flushTimer *time.Timer  // writing outcomes waiting in done
	tick       *time.Ticker // delivery timeouts
	// batch, when the recorder can append several events with one write, records an async
	// producer's invokes and outcomes in bursts; done holds outcomes not yet written.
	batch batchRecorder
	done  []history.Op
}

// batchRecorder is a Recorder that can append several events with one write, as
// *history.Writer can (AppendBatch).
type batchRecorder interface {
	AppendBatch(ops []history.Op) ([]history.Op, error)
}

// flush writes the outcomes waiting in w.done.
func (w *producerRun) flush() error {
	if len(w.done) == 0 {
		return nil
	}
	_, err := w.batch.AppendBatch(w.done)
	clear(w.done)
	w.done = w.done[:0]
	if err != nil {
		return fmt.Errorf("producer %d: recording outcomes: %w", w.p.ID, err)
	}
	return nil
}

// RunProducer runs one producer instance of the run's client (env.Client) as history process p
// until ctx ends (or MaxSends records were sent), then waits up to cfg.Drain for the outstanding
// sends and returns. Each record's value is "p-N". An error means the workload could not go on
// (no cluster, the history could not be written); outcomes of sends are in the history, not in
// the error.
func RunProducer(ctx context.Context, env Env, p int, cfg ProducerConfig) (ProducerStats, error) {
	env, err := env.withDefaults()
	if err != nil {
		return ProducerStats{}, err
	}
	cfg, warnings, err := cfg.Resolved(env.kafka())
	if err != nil {
		return ProducerStats{}, err
	}
	w := &producerRun{env: env, cfg: cfg, p: history.Client(p), values: NewValues(p),
		log: env.Log.With("process", p, "workload", "producer", "client", env.Client)}
	var parts map[string][]int32
	var more []string
	cl, err := env.client()
	if err == nil {
		w.cl, parts, more, err = cl.OpenProducer(ctx, cfg.spec(clientID(p, "producer"), w.log))
	}
	w.stats.Process, w.stats.Warnings = p, append(warnings, more...)
	for _, warn := range w.stats.Warnings {
		w.log.Warn(warn)
	}
	if err != nil {
		return w.stats, fmt.Errorf("producer %d: %w", p, err)
	}
	w.choose = newChooser(NewRand(env.Seed, p), cfg, kclient.Counts(parts))
	return w.runAll(ctx)
}

// runAll runs the workload on w's client, drains it, closes it, and returns the stats.
func (w *producerRun) runAll(ctx context.Context) (ProducerStats, error) {
	w.batch, _ = w.env.Recorder.(batchRecorder)
	w.tick = time.NewTicker(max(w.cfg.DeliveryTimeout/20, 10*time.Millisecond))
	defer w.tick.Stop()
	began := time.Now()
	runErr := w.run(ctx)
	drainErr := w.drain(context.WithoutCancel(ctx))
	w.cl.Close()
	w.stats.Elapsed = time.Since(began)
	w.stats.Retries = w.cl.Retries()
	if s := w.stats.Elapsed.Seconds(); s > 0 {
		w.stats.SendsPerSecond = float64(w.stats.OK+w.stats.Fail+w.stats.Info) / s
	}
	w.log.Info("producer done", "ok", w.stats.OK, "fail", w.stats.Fail, "info", w.stats.Info,
		"resends", w.stats.Resends, "per_second", int(w.stats.SendsPerSecond))
	return w.stats, errors.Join(runErr, drainErr)
}

func (w *producerRun) run(ctx context.Context) error {
	began := time.Now()
	sent := 0
	for ctx.Err() == nil {
		if w.cfg.MaxSends > 0 && sent >= w.cfg.MaxSends && len(w.resend) == 0 {
			break
		}
		// Room in the window first: in one-at-a-time mode this waits for the previous
		// send's outcome. An async producer waits for a quarter of its window (at most
		// maxBatch) to be free, so that it hands records over, and records their invokes,
		// in batches rather than one by one as single outcomes free single slots.
		refill := 1
		if w.cfg.Async {
			refill = min(max(w.cfg.Window/4, 1), maxBatch)
		}
		for w.cfg.Window-w.live < refill {
			if err := w.await(ctx, time.Time{}); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		room := min(w.cfg.Window-w.live, maxBatch)
		if w.cfg.Rate > 0 {
			due := began.Add(time.Duration(float64(sent) / w.cfg.Rate * float64(time.Second)))
			for time.Now().Before(due) && ctx.Err() == nil {
				if err := w.await(ctx, due); err != nil {
					return err
				}
			}
			if ctx.Err() != nil {
				return nil
			}
			// As many as are due by now, at least the one waited for.
			room = min(room, max(1, int(time.Since(began).Seconds()*w.cfg.Rate)-sent))
		}
		var ops []*sendOp
		for len(ops) < room {
			if len(w.resend) > 0 {
				op := w.resend[0]
				w.resend = w.resend[1:]
				ops = append(ops, &sendOp{rec: op.rec, attempt: op.attempt + 1})
				w.stats.Resends++
				continue
			}
			if w.cfg.MaxSends > 0 && sent >= w.cfg.MaxSends {
				break
			}
			t, err := w.choose.next()
			if err != nil {
				return fmt.Errorf("producer %d: choosing a partition: %w", w.p.ID, err)
			}
			ops = append(ops, &sendOp{rec: history.Record{Topic: t.topic, Partition: t.partition, Key: t.key, Value: w.values.Next()}})
			sent++
		}
		if err := w.send(ctx, ops); err != nil {
			return err
		}
	}
	return nil
}

// maxBatch bounds how many records an async producer hands over (and how many outcomes it
// records) per history write.
const maxBatch = 64

// send records the invokes of ops, then hands their records to the client in that order: the
// invoke order is the hand-off order, as history.md asks of an async producer. With a recorder
// that can (a *history.Writer), an async producer records all the invokes with one write, before
// the first hand-over; one-at-a-time mode sends one record per call.
func (w *producerRun) send(ctx context.Context, ops []*sendOp) error {
	if err := w.flush(); err != nil {
		return err
	}
	if w.batch != nil && len(ops) > 1 {
		invs := make([]history.Op, len(ops))
		for i, op := range ops {
			rec := op.rec
			invs[i] = history.Op{Process: w.p, Type: history.Invoke, F: history.FSend, Value: history.Payload{Send: &rec}}
		}
		if _, err := w.batch.AppendBatch(invs); err != nil {
			return fmt.Errorf("producer %d: recording sends: %w", w.p.ID, err)
		}
		for i, op := range ops {
			op.inv = invs[i]
		}
	} else {
		for _, op := range ops {
			rec := op.rec
			inv, err := w.env.Recorder.Invoke(w.p, history.FSend, history.Payload{Send: &rec})
			if err != nil {
				return fmt.Errorf("producer %d: recording a send: %w", w.p.ID, err)
			}
			op.inv = inv
		}
	}
	deadline := time.Now().Add(w.cfg.DeliveryTimeout)
	for _, op := range ops {
		op.deadline = deadline
		w.inflight = append(w.inflight, op)
		w.live++
	}
	for i, op := range ops {
		if w.cl.Hand(ctx, kclient.Send{Record: op.rec, Tag: op}) {
			continue
		}
		// Never handed to the client: certainly not written.
		for _, op := range ops[i:] {
			w.stats.Unsent++
			if err := w.complete(op, history.Fail, nil, -1, 0, "not sent: the workload stopped before handing the record to the client"); err != nil {
				return err
			}
		}
		break
	}
	return w.flush()
}

// await handles the outcomes that are ready, or the delivery timeouts due, or returns at until
// (zero: no bound) or when ctx ends. Delivery timeouts are checked on a ticker of the run (a
// twentieth of DeliveryTimeout), not a timer per wait: in async mode a wait happens per burst
// of outcomes. Outcomes waiting in w.done are written at the latest flushDelay after the wait
// begins (or earlier, with the next invokes or once maxBatch have gathered): recording an
// outcome a little after it arrived only widens its op's interval, and one write then records
// many.
func (w *producerRun) await(ctx context.Context, until time.Time) error {
	var pace, flushNow <-chan time.Time
	if !until.IsZero() {
		w.timer = resetTimer(w.timer, time.Until(until))
		pace = w.timer.C
		defer w.timer.Stop()
	}
	if len(w.done) > 0 {
		w.flushTimer = resetTimer(w.flushTimer, flushDelay)
		flushNow = w.flushTimer.C
		defer w.flushTimer.Stop()
	}
	select {
	case <-w.cl.Ready():
		return w.outcomes()
	case <-w.tick.C:
		return w.expire()
	case <-flushNow:
		return w.flush()
	case <-pace:
		return w.flush()
	case <-ctx.Done():
		return w.flush()
	}
}

// flushDelay bounds how long an async producer's outcome waits to be written.
const flushDelay = 2 * time.Millisecond

// resetTimer starts t (or a new timer) to fire after d.
func resetTimer(t *time.Timer, d time.Duration) *time.Timer {
	if t == nil {
		return time.NewTimer(d)
	}
	t.Reset(d)
	return t
}

// outcomes records every answer waiting, so that a burst of acknowledgements (one produce
// response acknowledges a whole batch) is recorded with one write. Recording them a few
// microseconds after their arrival only widens each op's interval.
func (w *producerRun) outcomes() error {
	w.answers = w.cl.Take(w.answers[:0])
	for i := range w.answers {
		if err := w.outcome(w.answers[i]); err != nil {
			return err
		}
	}
	clear(w.answers)
	return nil
}

// head is the oldest send still in flight.
func (w *producerRun) head() *sendOp {
	for len(w.inflight) > 0 && w.inflight[0].done {
		w.inflight[0] = nil
		w.inflight = w.inflight[1:]
	}
	if len(w.inflight) == 0 {
		return nil
	}
	return w.inflight[0]
}

// expire completes, as info, every send older than DeliveryTimeout.
func (w *producerRun) expire() error {
	now := time.Now()
	for op := w.head(); op != nil && !now.Before(op.deadline); op = w.head() {
		w.stats.TimedOut++
		if err := w.complete(op, history.Info, nil, -1, 0,
			fmt.Sprintf("delivery timeout: no answer within %s", w.cfg.DeliveryTimeout)); err != nil {
			return err
		}
	}
	return nil
}

// outcome records the client's answer for one record.
func (w *producerRun) outcome(a kclient.Answer) error {
	op, _ := a.Tag.(*sendOp)
	if op == nil || op.done {
		return nil // completed already, by its delivery timeout
	}
	off := a.Offset
	if *w.cfg.Acks == kafkaconf.AcksNone {
		off = -1 // acks=0: the broker assigns an offset it never reports
	}
	return w.complete(op, a.Outcome.Type, a.Err, off, a.Partition, "")
}

// complete records op's completion (ok with the broker's partition and offset) and queues an
// application resend after fail or info when that mode is on.
func (w *producerRun) complete(op *sendOp, t history.Type, sendErr error, offset int64, partition int32, text string) error {
	op.done = true
	w.live--
	rec := op.rec
	if t == history.OK {
		rec.Partition = partition
		rec = rec.At(offset)
	}
	if text == "" {
		text = ErrorText(sendErr)
	}
	var err error
	switch {
	case w.cfg.Async && w.batch != nil:
		// Written by flush, with the other outcomes of the same burst.
		of := op.inv.Index
		w.done = append(w.done, history.Op{Process: w.p, Type: t, F: history.FSend, Of: &of, Value: history.Payload{Send: &rec}, Error: text})
		if len(w.done) >= maxBatch {
			err = w.flush()
		}
	case w.cfg.Async:
		_, err = w.env.Recorder.CompleteAsync(op.inv, t, history.Payload{Send: &rec}, text)
	default:
		_, err = w.env.Recorder.Complete(op.inv, t, history.Payload{Send: &rec}, text)
	}
	if err != nil {
		return fmt.Errorf("producer %d: recording an outcome: %w", w.p.ID, err)
	}
	switch t {
	case history.OK:
		w.stats.OK++
	case history.Fail:
		w.stats.Fail++
	default:
		w.stats.Info++
	}
	if t != history.OK && op.attempt < w.cfg.AppResend {
		w.resend = append(w.resend, op)
	}
	return nil
}

// drain waits up to cfg.Drain for the sends in flight; what is still unanswered then completes
// info. Resends still queued are dropped: the run is over.
func (w *producerRun) drain(ctx context.Context) error {
	deadline := time.Now().Add(w.cfg.Drain)
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for w.live > 0 && dctx.Err() == nil {
		if err := w.await(dctx, deadline); err != nil {
			return err
		}
	}
	for op := w.head(); op != nil; op = w.head() {
		if err := w.complete(op, history.Info, nil, -1, 0, "the workload stopped before the outcome was known"); err != nil {
			return err
		}
	}
	return w.flush()
}
