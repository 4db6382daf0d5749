package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// The relay of an outbox sink (sink.Outbox): it reads the outbox table's unsent rows in the
// order they were written, publishes each to the sink's outbox topic with an idempotent
// producer (one "publish" op each, docs/history.md), and marks the row sent once Kafka has
// acknowledged it. A crash between the acknowledgement and the mark leaves the row unsent, and
// the next relay publishes it again under a new producer id — a duplicate the broker cannot
// recognise, which the outbox topic's consumers must absorb by event id. The value published
// for an event is sink.OutboxValue, keyed by the event, so that one event always lands in one
// partition.

// PublishValue is the value of a publish op's invoke and of its info completion; its ok
// completion adds the partition and offset the record was acknowledged at.
type PublishValue struct {
	Sink      string `json:"sink"`
	Event     string `json:"event"`
	Value     string `json:"value"`
	Topic     string `json:"topic"`
	Partition *int32 `json:"partition,omitempty"`
	Offset    *int64 `json:"offset,omitempty"`
}

// RelayStats counts what a sink's relay did, over the run and its drain.
type RelayStats struct {
	Process                  int
	Published, Failed, Marks int64
	Crashes                  int64
	// Drained: the outbox held no unsent row when the relay's drain ended.
	Drained bool
}

// relayBatch bounds the rows a relay reads at once.
const relayBatch = 100

type relay struct {
	env   Env
	cfg   SinkConfig
	p     int
	proc  history.Process
	rng   *rand.Rand
	log   *slog.Logger
	stats *RelayStats
	db    *pgStore
	spec  kclient.ProducerSpec // every instance's producer
}

// RunRelay runs the relay of outbox sink cfg as process p until ctx ends, crashing as
// cfg.CrashEvery says.
func RunRelay(ctx context.Context, env Env, p int, cfg SinkConfig) (RelayStats, error) {
	st := RelayStats{Process: p}
	r, err := newRelay(ctx, env, p, cfg, &st)
	if err != nil {
		return st, err
	}
	defer r.db.close()
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			st.Crashes++
			if err := r.note(); err != nil {
				return st, err
			}
		}
		var crashIn time.Duration
		if cfg.CrashEvery > 0 {
			crashIn = time.Duration((0.5 + r.rng.Float64()) * float64(cfg.CrashEvery))
		}
		if _, err := r.instance(ctx, crashIn, false); err != nil {
			return st, err
		}
	}
	return st, nil
}

// drainRelay runs the relay, without crashes, until the outbox has no unsent row or ctx ends;
// st goes on from the run's counts.
func drainRelay(ctx context.Context, env Env, p int, cfg SinkConfig, st *RelayStats) error {
	r, err := newRelay(ctx, env, p, cfg, st)
	if err != nil {
		return err
	}
	defer r.db.close()
	for ctx.Err() == nil {
		done, err := r.instance(ctx, 0, true)
		if err != nil {
			return err
		}
		if done {
			st.Drained = true
			r.log.Info("relay drained", "published", st.Published, "failed", st.Failed, "marks", st.Marks, "crashes", st.Crashes)
			return nil
		}
	}
	return fmt.Errorf("relay of sink %s: the outbox still had unsent rows when the drain ended: %w", cfg.Name, context.Cause(ctx))
}

func newRelay(ctx context.Context, env Env, p int, cfg SinkConfig, st *RelayStats) (*relay, error) {
	env, err := env.withDefaults()
	if err != nil {
		return nil, err
	}
	if env.Postgres == "" {
		return nil, fmt.Errorf("sink %s: mode %s writes to PostgreSQL, and the cluster has none", cfg.Name, cfg.Mode)
	}
	db, err := openPGStore(ctx, env.Postgres, cfg)
	if err != nil {
		return nil, err
	}
	r := &relay{env: env, cfg: cfg, p: p, proc: history.Client(p), rng: NewRand(env.Seed, p), stats: st, db: db,
		log: env.Log.With("workload", "relay", "process", p, "sink", cfg.Name)}
	r.spec = r.producerSpec()
	return r, nil
}

func (r *relay) note() error {
	v := raw(history.Crash{Reason: "after a publish, before marking its row sent (crash_every)", Sink: r.cfg.Name, Relay: true})
	inv, err := r.env.Recorder.Invoke(r.proc, history.FCrash, v)
	if err == nil {
		_, err = r.env.Recorder.Complete(inv, history.OK, inv.Value, "")
	}
	if err != nil {
		return fmt.Errorf("relay %d: recording a crash: %w", r.p, err)
	}
	return nil
}

// producerSpec is the relay's producer: idempotent, acks=all, one request in flight (as many as
// the client's idempotent producer keeps, when it cannot keep one), a few retries within a
// bounded time.
func (r *relay) producerSpec() kclient.ProducerSpec {
	res := kafkaconf.ResolveProducer(kafkaconf.ProducerConfig{Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksAll),
		Idempotence: new(true), MaxInFlight: new(1), Retries: new(10)}}, r.env.kafka())
	for _, d := range res.Departures {
		r.log.Info("the relay's producer departs from its settings", "departure", d)
	}
	return kclient.ProducerSpec{ClientID: clientID(r.p, "relay"), Settings: res.Producer,
		RetryBackoff: 250 * time.Millisecond, RequestTimeout: 5 * time.Second, DeliveryTimeout: relayDeliveryTimeout,
		Topics: []string{r.cfg.Outbox}, Log: r.log}
}

// relayDeliveryTimeout bounds a publish: the relay waits for its answer that long (a client may
// keep retrying an idempotent record in flight past it), then takes the outcome as unknown.
const relayDeliveryTimeout = 30 * time.Second

// instance is one relay's life: a producer of its own, publishing until ctx ends, until the
// crash due crashIn after its first publish (0: none), or, when drain, until the outbox has no
// unsent row (done). Failures of the database or of a publish are waited out and retried.
func (r *relay) instance(ctx context.Context, crashIn time.Duration, drain bool) (done bool, err error) {
	cl, err := r.env.client()
	if err != nil {
		return false, err
	}
	var prod kclient.Producer
	var parts map[string][]int32
	var warnings []string
	for prod == nil {
		if prod, parts, warnings, err = cl.OpenProducer(ctx, r.spec); err != nil {
			if kclient.IsPermanent(err) {
				return false, fmt.Errorf("relay of sink %s: %w", r.cfg.Name, err)
			}
			r.log.Debug("opening the relay's producer", "err", err)
			if kit.Sleep(ctx, time.Second) != nil {
				return false, nil
			}
		}
	}
	defer prod.Close()
	for _, w := range warnings {
		r.log.Debug("the relay's producer", "warning", w)
	}
	pub := &publisher{prod: prod, partitions: int32(len(parts[r.cfg.Outbox]))}
	if pub.partitions == 0 {
		return false, fmt.Errorf("relay of sink %s: the cluster knows no partition of outbox topic %s", r.cfg.Name, r.cfg.Outbox)
	}
	var crashAt time.Time
	for ctx.Err() == nil {
		rows, err := r.unsent(ctx)
		if err != nil {
			r.log.Debug("reading the outbox", "err", err)
			if kit.Sleep(ctx, 500*time.Millisecond) != nil {
				return false, nil
			}
			continue
		}
		if len(rows) == 0 {
			if drain {
				return true, nil
			}
			if kit.Sleep(ctx, 200*time.Millisecond) != nil {
				return false, nil
			}
			continue
		}
		for _, row := range rows {
			ok, err := r.publish(ctx, pub, row.event)
			if err != nil {
				return false, err
			}
			if !ok {
				// The row stays unsent and is published again: whatever the failed attempt
				// wrote is a duplicate the outbox topic permits.
				if kit.Sleep(ctx, 500*time.Millisecond) != nil {
					return false, nil
				}
				break
			}
			if crashIn > 0 && crashAt.IsZero() {
				crashAt = time.Now().Add(crashIn)
			}
			if !crashAt.IsZero() && time.Now().After(crashAt) {
				return false, nil // the crash point: published, not marked
			}
			if err := r.mark(ctx, row.id); err != nil {
				r.log.Debug("marking an outbox row sent", "id", row.id, "err", err)
				break
			}
		}
	}
	return false, nil
}

type outboxRow struct {
	id    int64
	event string
}

func (r *relay) unsent(ctx context.Context) ([]outboxRow, error) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := r.db.connect(qctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(qctx, "SELECT id, event FROM "+tablesOf(r.cfg.Name).outbox+" WHERE NOT sent ORDER BY id LIMIT $1", relayBatch)
	if err != nil {
		r.db.close()
		return nil, err
	}
	var out []outboxRow
	var row outboxRow
	if _, err := pgx.ForEachRow(rows, []any{&row.id, &row.event}, func() error { out = append(out, row); return nil }); err != nil {
		r.db.close()
		return nil, err
	}
	return out, nil
}

func (r *relay) mark(ctx context.Context, id int64) error {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := r.db.connect(qctx)
	if err == nil {
		_, err = c.Exec(qctx, "UPDATE "+tablesOf(r.cfg.Name).outbox+" SET sent = true WHERE id = $1", id)
	}
	if err != nil {
		r.db.close()
		return err
	}
	r.stats.Marks++
	return nil
}

// publisher is a relay's producer, and the partition count of its outbox topic, which the
// event's key is hashed over.
type publisher struct {
	prod       kclient.Producer
	partitions int32
	sent       uint64 // tags the sends, so that a late answer is not taken for a later send's
}

// publish sends one event's outbox record and records the attempt; ok says Kafka acknowledged
// it. A failed send is info (the producer may have written it before giving up), with the
// invoke's value; so is a send still unanswered when ctx ends.
func (r *relay) publish(ctx context.Context, pub *publisher, event string) (ok bool, err error) {
	pv := PublishValue{Sink: r.cfg.Name, Event: event, Value: sink.OutboxValue(r.cfg.Name, event), Topic: r.cfg.Outbox}
	inv, err := r.env.Recorder.Invoke(r.proc, history.FPublish, raw(pv))
	if err != nil {
		return false, fmt.Errorf("relay %d: recording a publish: %w", r.p, err)
	}
	ans, serr := pub.sendOne(ctx, history.Record{Topic: r.cfg.Outbox, Key: event, Value: pv.Value,
		Partition: kclient.KeyPartition([]byte(event), pub.partitions)})
	if serr == nil {
		serr = ans.Err
	}
	if serr != nil {
		r.stats.Failed++
		_, err = r.env.Recorder.Complete(inv, history.Info, raw(pv), serr.Error())
	} else {
		r.stats.Published++
		pv.Partition, pv.Offset = &ans.Partition, &ans.Offset
		_, err = r.env.Recorder.Complete(inv, history.OK, raw(pv), "")
	}
	if err != nil {
		return false, fmt.Errorf("relay %d: recording a publish: %w", r.p, err)
	}
	return serr == nil, nil
}

// sendOne hands rec to the producer and waits, at most relayDeliveryTimeout, for its answer;
// answers to earlier sends that gave up waiting are dropped.
func (pub *publisher) sendOne(ctx context.Context, rec history.Record) (kclient.Answer, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, relayDeliveryTimeout, errors.New("no answer within the relay's delivery timeout"))
	defer cancel()
	pub.sent++
	tag := pub.sent
	if !pub.prod.Hand(ctx, kclient.Send{Record: rec, Tag: tag}) {
		return kclient.Answer{}, fmt.Errorf("not handed over: %w", context.Cause(ctx))
	}
	var buf []kclient.Answer
	for {
		select {
		case <-pub.prod.Ready():
			buf = pub.prod.Take(buf[:0])
			for _, a := range buf {
				if a.Tag == tag {
					return a, nil
				}
			}
		case <-ctx.Done():
			return kclient.Answer{}, fmt.Errorf("unanswered: %w", context.Cause(ctx))
		}
	}
}

// drainRelays runs every relay of the run until its outbox is empty, each bounded by a minute:
// the run's faults are healed and the sinks stopped, so nothing adds rows any more.
func drainRelays(ctx context.Context, env Env, pl runPlan, stats []RelayStats) error {
	var errs []error
	for i, n := range pl.relays {
		dctx, cancel := context.WithTimeoutCause(ctx, time.Minute, errors.New("a minute passed"))
		errs = append(errs, drainRelay(dctx, env, n.p, n.cfg, &stats[i]))
		cancel()
	}
	return errors.Join(errs...)
}
