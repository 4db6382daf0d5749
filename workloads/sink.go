package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// A sink consumes a topic in a consumer group (the run's client) and applies each record to a system
// outside Kafka — a PostgreSQL table or the HTTP ledger — in one of the sink.Modes; each
// application is an "effect" op, and at the end the store's state is read back into one
// "sink-read" op (docs/history.md), which the checker compares with the topic's final read.
//
// The event id of a record is its value (the producers' "P-N", unique per send). A crash, when
// CrashEvery asks for them, comes right after a side effect and before the offset commit that
// would record it: the point where an at-least-once sink applies an input twice.

// SinkConfig is one sink: its instances share a consumer group and a store.
type SinkConfig struct {
	// Name names the sink in the header and its tables ("effects_<name>"); default "sink".
	Name string    `json:"name"`
	Mode sink.Mode `json:"mode"`
	// Topic is the topic consumed: every record is an event to apply.
	Topic string `json:"topic"`
	// Group is the consumer group; default "verity-sink-<name>".
	Group string `json:"group,omitempty"`
	// Instances of the sink, each its own history process; default 1.
	Instances int `json:"instances,omitempty"`
	// CrashEvery, when set, crashes each instance about that often (0.5x to 1.5x, from the
	// seed), right after a side effect and before its offset commit: a crash op, then a new
	// instance that rejoins the group. An outbox relay crashes as often, between a publish and
	// marking its row sent.
	CrashEvery time.Duration `json:"crash_every,omitempty"`
	// Outbox is the topic the relay of an outbox sink publishes to, one of the run's topics;
	// only for the modes that relay.
	Outbox string `json:"outbox,omitempty"`
}

// An effect op (history.FEffect) is one application of a record: its invoke's value is an
// EffectValue; ok carries the same value with "applied" (false: the store absorbed a repeat);
// fail when it was certainly not applied, info when it may have been. A sink-read op
// (history.FSinkRead) is a sink's final state: invoke {"sink"}, ok a SinkRead.

// SinkRead is the ok value of a sink-read op.
type SinkRead struct {
	Sink      string           `json:"sink"`
	Mode      sink.Mode        `json:"mode"`
	Store     sink.Store       `json:"store"`
	Effects   map[string]int   `json:"effects"`
	Committed map[string]int64 `json:"committed"`
	// Unsent counts the outbox rows the relay had not marked sent (modes that relay).
	Unsent *int `json:"unsent,omitempty"`
}

// EffectValue is the value of an effect op's invoke; its ok completion adds Applied.
type EffectValue struct {
	Sink      string `json:"sink"`
	Event     string `json:"event"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Applied   *bool  `json:"applied,omitempty"`
}

// SinkStats counts what one instance did.
type SinkStats struct {
	Process                  int
	Applied, Absorbed, Fails int64
	Unknown, Crashes         int64
}

func (c SinkConfig) resolved() (SinkConfig, error) {
	if c.Name == "" {
		c.Name = "sink"
	}
	if err := sink.CheckName(c.Name); err != nil {
		return c, err
	}
	if _, err := sink.Parse(string(c.Mode)); err != nil {
		return c, fmt.Errorf("sink %s: %w", c.Name, err)
	}
	if c.Topic == "" {
		return c, fmt.Errorf("sink %s: no topic", c.Name)
	}
	if c.Group == "" {
		c.Group = "verity-sink-" + c.Name
	}
	c.Instances = max(c.Instances, 1)
	if c.CrashEvery < 0 {
		return c, fmt.Errorf("sink %s: crash_every %s is negative", c.Name, c.CrashEvery)
	}
	info, _ := c.Mode.Info()
	switch {
	case info.Relays && c.Outbox == "":
		return c, fmt.Errorf("sink %s: mode %s publishes to an outbox topic, and none is given (outbox)", c.Name, c.Mode)
	case !info.Relays && c.Outbox != "":
		return c, fmt.Errorf("sink %s: mode %s has no relay to publish to outbox topic %s", c.Name, c.Mode, c.Outbox)
	case c.Outbox != "" && c.Outbox == c.Topic:
		return c, fmt.Errorf("sink %s: its outbox topic is the topic it consumes (%s): it would consume its own output", c.Name, c.Topic)
	}
	return c, nil
}

// sinkStore is where one sink instance applies its effects.
type sinkStore interface {
	// apply applies one event; applied is false when the store absorbed a repeat. When it
	// fails, sure says that the effect was certainly not applied.
	apply(ctx context.Context, ev EffectValue) (applied bool, sure bool, err error)
	// positions are the next offsets the store holds for topic's partitions (offsets-in-db);
	// nil when the sink commits its offsets to Kafka.
	positions(ctx context.Context, topic string) (map[int32]int64, error)
	close()
}

// RunSink runs one instance of sink cfg as process p until ctx ends.
func RunSink(ctx context.Context, env Env, p int, cfg SinkConfig) (SinkStats, error) {
	env, err := env.withDefaults()
	if err != nil {
		return SinkStats{}, err
	}
	cl, err := env.client()
	if err != nil {
		return SinkStats{}, err
	}
	return runSink(ctx, env, p, cfg, cl, func(ctx context.Context) (sinkStore, error) { return openSinkStore(ctx, env, cfg) })
}

// runSink is RunSink with the client and the store given.
func runSink(ctx context.Context, env Env, p int, cfg SinkConfig, cl consumerOpener,
	openStore func(context.Context) (sinkStore, error)) (SinkStats, error) {
	w := &sinkRun{env: env, cl: cl, openStore: openStore, cfg: cfg, p: p, proc: history.Client(p), rng: NewRand(env.Seed, p),
		log: env.Log.With("workload", "sink", "process", p, "sink", cfg.Name, "mode", cfg.Mode)}
	w.stats.Process = p
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			w.stats.Crashes++
			if err := w.note(history.FCrash, history.Crash{Reason: "after a side effect, before the offset commit (crash_every)", Sink: cfg.Name}); err != nil {
				return w.stats, err
			}
		}
		var crashIn time.Duration
		if cfg.CrashEvery > 0 {
			crashIn = time.Duration((0.5 + w.rng.Float64()) * float64(cfg.CrashEvery))
		}
		if err := w.instance(ctx, crashIn); err != nil {
			return w.stats, err
		}
	}
	w.log.Info("sink done", "applied", w.stats.Applied, "absorbed", w.stats.Absorbed, "fails", w.stats.Fails,
		"unknown", w.stats.Unknown, "crashes", w.stats.Crashes)
	return w.stats, nil
}

type sinkRun struct {
	env       Env
	cl        consumerOpener
	openStore func(context.Context) (sinkStore, error)
	cfg       SinkConfig
	p         int
	proc      history.Process
	rng       *rand.Rand
	log       *slog.Logger
	stats     SinkStats
}

func (w *sinkRun) note(f string, v any) error {
	inv, err := w.env.Recorder.Invoke(w.proc, f, raw(v))
	if err != nil {
		return fmt.Errorf("sink %d: recording %s: %w", w.p, f, err)
	}
	if _, err := w.env.Recorder.Complete(inv, history.OK, inv.Value, ""); err != nil {
		return fmt.Errorf("sink %d: recording %s: %w", w.p, f, err)
	}
	return nil
}

// instance runs one consumer group member until ctx ends or, when crashIn is set, until the
// first side effect crashIn after its first one (joining a group takes seconds, which would
// otherwise eat the member's life), which it leaves uncommitted.
//
// Like a Java consumer's loop: the records of a poll are applied one at a time, in order, and
// then told to the client as recorded, which commits them (its commit runs about every second
// and when the member leaves): an offset is committed only after the side effect it covers.
// A sink that keeps its positions in its store places every partition it is assigned at the
// store's offset instead, and commits nothing to Kafka.
func (w *sinkRun) instance(ctx context.Context, crashIn time.Duration) error {
	store, err := w.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.close()
	info, _ := w.cfg.Mode.Info()
	cons, err := w.cl.OpenConsumer(ctx, kclient.ConsumerSpec{ClientID: clientID(w.p, "sink"), Isolation: kafkaconf.ReadUncommitted,
		Group: w.cfg.Group, Topics: []string{w.cfg.Topic}, GroupProtocol: w.env.GroupProtocol, StorePositions: info.OffsetsInStore,
		Log: w.log})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("sink %s: %w", w.cfg.Name, err)
	}
	defer cons.Close()
	var until time.Time // the crash is due after it; set at the first side effect
	for ctx.Err() == nil {
		var applied []kclient.Event
		for _, ev := range cons.Poll(ctx, 500*time.Millisecond, commitEvery) {
			switch ev.Kind {
			case kclient.EventAssigned:
				if info.OffsetsInStore {
					if err := w.place(ctx, store, cons); err != nil {
						if ctx.Err() != nil {
							return nil
						}
						return err
					}
				}
			case kclient.EventRecord:
				rec := ev.Record
				ef := EffectValue{Sink: w.cfg.Name, Event: rec.Value, Topic: rec.Topic, Partition: rec.Partition, Offset: *rec.Offset}
				if err := w.applyUntilDone(ctx, store, ef); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				if crashIn > 0 && until.IsZero() {
					until = time.Now().Add(crashIn)
				}
				if !until.IsZero() && time.Now().After(until) {
					// The crash point: the side effect is done, its offset not committed.
					cons.Recorded(applied)
					return nil
				}
				applied = append(applied, ev)
			case kclient.EventDataLoss:
				w.log.Warn("the client found the log truncated under the sink's position", "topic", ev.Loss.Topic,
					"partition", ev.Loss.Partition, "offset", ev.Loss.Offset, "reset_to", ev.Loss.ResetTo)
			}
		}
		cons.Recorded(applied)
	}
	return nil
}

// commitEvery bounds the records a poll hands the sink, and so those applied between two
// chances to commit.
const commitEvery = 50

// place starts the partitions an assignment added at the offsets the store holds (offsets in
// the store), reading them again until the store answers: under a fault the store may not.
func (w *sinkRun) place(ctx context.Context, store sinkStore, cons kclient.Consumer) error {
	for attempt := 0; ; attempt++ {
		// Bounded: under a black-holed link the store's connection answers nothing.
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		pos, err := store.positions(pctx, w.cfg.Topic)
		cancel()
		if err == nil {
			return cons.Seek(ctx, map[string]map[int32]int64{w.cfg.Topic: pos})
		}
		w.log.Debug("reading the positions the store holds; retrying", "err", err)
		if kit.Sleep(ctx, min(time.Duration(attempt+1)*200*time.Millisecond, 2*time.Second)) != nil {
			return nil
		}
	}
}

// applyUntilDone applies ev, again after every failure or unknown outcome, until the store says
// it is applied or ctx ends: a sink never skips an input. Each attempt is an op.
func (w *sinkRun) applyUntilDone(ctx context.Context, store sinkStore, ev EffectValue) error {
	for attempt := 0; ; attempt++ {
		inv, err := w.env.Recorder.Invoke(w.proc, history.FEffect, raw(ev))
		if err != nil {
			return fmt.Errorf("sink %d: recording an effect: %w", w.p, err)
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		applied, sure, aerr := store.apply(actx, ev)
		cancel()
		switch {
		case aerr == nil:
			if applied {
				w.stats.Applied++
			} else {
				w.stats.Absorbed++
			}
			done := ev
			done.Applied = &applied
			_, err = w.env.Recorder.Complete(inv, history.OK, raw(done), "")
		case sure:
			w.stats.Fails++
			_, err = w.env.Recorder.Complete(inv, history.Fail, history.Payload{}, aerr.Error())
		default:
			w.stats.Unknown++
			_, err = w.env.Recorder.Complete(inv, history.Info, history.Payload{}, aerr.Error())
		}
		if err != nil {
			return fmt.Errorf("sink %d: recording an effect: %w", w.p, err)
		}
		if aerr == nil {
			return nil
		}
		w.log.Debug("effect failed; retrying", "event", ev.Event, "sure", sure, "err", aerr)
		if err := kit.Sleep(ctx, min(time.Duration(attempt+1)*100*time.Millisecond, time.Second)); err != nil {
			return err
		}
	}
}

// openSinkStore connects an instance to its sink's store.
func openSinkStore(ctx context.Context, env Env, cfg SinkConfig) (sinkStore, error) {
	info, _ := cfg.Mode.Info()
	switch info.Store {
	case sink.Postgres:
		if env.Postgres == "" {
			return nil, fmt.Errorf("sink %s: mode %s writes to PostgreSQL, and the cluster has none", cfg.Name, cfg.Mode)
		}
		return openPGStore(ctx, env.Postgres, cfg)
	case sink.Ledger:
		if env.Ledger == "" {
			return nil, fmt.Errorf("sink %s: mode %s calls the ledger, and the cluster has none", cfg.Name, cfg.Mode)
		}
		return newLedgerStore(env.Ledger, cfg, env.RunTag), nil
	}
	return nil, fmt.Errorf("sink %s: mode %s has no store", cfg.Name, cfg.Mode)
}

// partitionKey names a partition in a sink-read's committed offsets.
func partitionKey(topic string, part int32) string { return fmt.Sprintf("%s-%d", topic, part) }

// sinkConfigs lists each sink once (pl.sinks has one entry per instance).
func (pl runPlan) sinkConfigs() []SinkConfig {
	var out []SinkConfig
	for _, n := range pl.sinks {
		if !slices.ContainsFunc(out, func(c SinkConfig) bool { return c.Name == n.cfg.Name }) {
			out = append(out, n.cfg)
		}
	}
	return out
}

// prepareSinks gives every sink that writes to PostgreSQL its tables, empty.
func prepareSinks(ctx context.Context, env Env, sinks []SinkConfig) error {
	for _, s := range sinks {
		info, _ := s.Mode.Info()
		switch {
		case info.Store == sink.Postgres && env.Postgres == "":
			return fmt.Errorf("sink %s: mode %s writes to PostgreSQL, and the cluster has none", s.Name, s.Mode)
		case info.Store == sink.Ledger && env.Ledger == "":
			return fmt.Errorf("sink %s: mode %s calls the ledger, and the cluster has none", s.Name, s.Mode)
		case info.Store == sink.Postgres:
			if err := preparePG(ctx, env.Postgres, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// readSinks records, for every sink, a sink-read op of what its store holds once the run has
// healed: how many times each event was applied and the positions the sink committed (to its
// store for offsets-in-db, else to its Kafka group). Each read is retried for a minute: the
// store's link was healed with the rest, but a restarted database may still be recovering.
func readSinks(ctx context.Context, env Env, sinks []SinkConfig) error {
	var errs []error
	for _, s := range sinks {
		p := env.Processes.Next()
		proc := history.Client(p)
		inv, err := env.Recorder.Invoke(proc, history.FSinkRead, raw(map[string]any{"sink": s.Name}))
		if err != nil {
			return fmt.Errorf("recording a sink read: %w", err)
		}
		var read SinkRead
		rerr := kit.WaitUntil(ctx, time.Now().Add(time.Minute), time.Second, func() (bool, error) {
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			r, err := readSink(rctx, env, s)
			read = r
			return err == nil, err
		})
		if rerr != nil {
			errs = append(errs, fmt.Errorf("sink %s: %w", s.Name, rerr))
			_, err = env.Recorder.Complete(inv, history.Fail, history.Payload{}, rerr.Error())
		} else {
			_, err = env.Recorder.Complete(inv, history.OK, raw(read), "")
		}
		if err != nil {
			return fmt.Errorf("recording a sink read: %w", err)
		}
	}
	return errors.Join(errs...)
}

func readSink(ctx context.Context, env Env, s SinkConfig) (SinkRead, error) {
	info, _ := s.Mode.Info()
	r := SinkRead{Sink: s.Name, Mode: s.Mode, Store: info.Store}
	var err error
	switch info.Store {
	case sink.Postgres:
		r.Effects, r.Committed, r.Unsent, err = readPG(ctx, env.Postgres, s)
	case sink.Ledger:
		r.Effects, err = readLedger(ctx, env.Ledger, ledgerSource(s.Name, env.RunTag))
	}
	if err != nil {
		return r, err
	}
	if !info.OffsetsInStore {
		if r.Committed, err = groupOffsets(env, s.Group, s.Topic); err != nil {
			return r, err
		}
	}
	return r, nil
}

// groupOffsets reads the offsets a consumer group committed in topic.
func groupOffsets(env Env, group, topic string) (map[string]int64, error) {
	admin, err := sarama.NewClusterAdmin(env.Brokers, env.Sarama(clientID(0, "sink-read")))
	if err != nil {
		return nil, fmt.Errorf("reading group %s's offsets: %w", group, err)
	}
	defer admin.Close()
	resp, err := admin.ListConsumerGroupOffsets(group, nil)
	if err != nil {
		return nil, fmt.Errorf("reading group %s's offsets: %w", group, err)
	}
	out := map[string]int64{}
	for part, b := range resp.Blocks[topic] {
		if b.Err != sarama.ErrNoError {
			return nil, fmt.Errorf("reading group %s's offset of %s: %w", group, partitionKey(topic, part), b.Err)
		}
		if b.Offset >= 0 {
			out[partitionKey(topic, part)] = b.Offset
		}
	}
	return out, nil
}
