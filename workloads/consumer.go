package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

// ConsumerMode is how a consumer gets its partitions.
type ConsumerMode string

const (
	// Subscribe joins a consumer group (Group) that assigns the topics' partitions; positions
	// start from the group's committed offsets, and every rebalance is noted in the history.
	Subscribe ConsumerMode = "subscribe"
	// Assign reads the given partitions directly, without a group.
	Assign ConsumerMode = "assign"
)

// ConsumerConfig is one consumer instance.
type ConsumerConfig struct {
	Topics []string `json:"topics"`
	// Mode is subscribe (default) or assign.
	Mode ConsumerMode `json:"mode,omitempty"`
	// Isolation is read_uncommitted (default, Kafka's default) or read_committed.
	Isolation kafkaconf.Isolation `json:"isolation,omitempty"`
	// Group for subscribe mode; default "verity-group-<process>". Consumers that share a
	// group split the partitions.
	Group string `json:"group,omitempty"`
	// Partitions for assign mode, per topic; default all of each topic's partitions.
	Partitions map[string][]int32 `json:"partitions,omitempty"`
	// FromNewest starts where the log ends instead of at its earliest offset (for a group:
	// when it has no committed offset).
	FromNewest bool `json:"from_newest,omitempty"`
	// PollWait (default 200ms) and PollRecords (default 500) bound one poll.
	PollWait    time.Duration `json:"poll_wait,omitempty"`
	PollRecords int           `json:"poll_records,omitempty"`
	// RestartEvery, when set, restarts the consumer about that often (0.5x to 1.5x, from the
	// seed): a crash op, then a new instance that resumes from the group's committed offsets
	// (subscribe) or from the positions it had reached (assign).
	RestartEvery time.Duration `json:"restart_every,omitempty"`
	// MaxPolls stops the consumer after this many polls (0: until its context ends).
	MaxPolls int `json:"max_polls,omitempty"`
}

func (c ConsumerConfig) resolved(p int) (ConsumerConfig, error) {
	if len(c.Topics) == 0 && c.Partitions == nil {
		return c, errors.New("consumer: no topics")
	}
	switch c.Mode {
	case "":
		c.Mode = Subscribe
	case Subscribe, Assign:
	default:
		return c, fmt.Errorf("consumer: mode %q: want subscribe or assign", c.Mode)
	}
	if c.Isolation == "" {
		c.Isolation = kafkaconf.DefaultConsumerIsolation
	}
	if _, err := kafkaconf.ParseIsolation(string(c.Isolation)); err != nil {
		return c, fmt.Errorf("consumer: %w", err)
	}
	if c.Mode == Subscribe && c.Group == "" {
		c.Group = fmt.Sprintf("verity-group-%d", p)
	}
	if c.Mode == Assign {
		c.Group = ""
		if len(c.Topics) == 0 {
			c.Topics = slices.Sorted(maps.Keys(c.Partitions))
		}
	}
	if c.PollWait <= 0 {
		c.PollWait = 200 * time.Millisecond
	}
	if c.PollRecords <= 0 {
		c.PollRecords = 500
	}
	return c, nil
}

// ConsumerStats counts a consumer's polls.
type ConsumerStats struct {
	Process             int
	Polls, Records      int64
	Rebalances, Crashes int64
}

type consumerRun struct {
	env   Env
	cfg   ConsumerConfig
	p     int
	proc  history.Process
	rng   *rand.Rand
	log   *slog.Logger
	stats ConsumerStats
	// next is, in assign mode, the position reached in each partition: where a restarted
	// instance resumes.
	next map[string]map[int32]int64
}

// RunConsumer runs a consumer as history process p until ctx ends: every poll is recorded with
// its records in the order sarama returned them.
func RunConsumer(ctx context.Context, env Env, p int, cfg ConsumerConfig) (ConsumerStats, error) {
	env, err := env.withDefaults()
	if err != nil {
		return ConsumerStats{}, err
	}
	if cfg, err = cfg.resolved(p); err != nil {
		return ConsumerStats{}, err
	}
	w := &consumerRun{env: env, cfg: cfg, p: p, proc: history.Client(p), rng: NewRand(env.Seed, p),
		log:  env.Log.With("workload", "consumer", "process", p, "mode", cfg.Mode, "isolation", cfg.Isolation),
		next: map[string]map[int32]int64{}}
	w.stats.Process = p
	for first := true; ctx.Err() == nil && !w.pollsDone(); first = false {
		if !first {
			if err := w.crash(); err != nil {
				return w.stats, err
			}
		}
		var until time.Time
		if cfg.RestartEvery > 0 {
			until = time.Now().Add(time.Duration((0.5 + w.rng.Float64()) * float64(cfg.RestartEvery)))
		}
		if err := w.instance(ctx, until); err != nil {
			return w.stats, err
		}
	}
	w.log.Info("consumer done", "polls", w.stats.Polls, "records", w.stats.Records, "rebalances", w.stats.Rebalances)
	return w.stats, nil
}

func (w *consumerRun) pollsDone() bool {
	return w.cfg.MaxPolls > 0 && w.stats.Polls >= int64(w.cfg.MaxPolls)
}

func (w *consumerRun) crash() error {
	w.stats.Crashes++
	return w.note(history.FCrash, map[string]any{"reason": "restart (restart_every)"})
}

// note records an op that marks a moment: subscribe, a rebalance's assignment, a crash.
func (w *consumerRun) note(f string, v map[string]any) error {
	inv, err := w.env.Recorder.Invoke(w.proc, f, raw(v))
	if err != nil {
		return fmt.Errorf("consumer %d: recording %s: %w", w.p, f, err)
	}
	if _, err := w.env.Recorder.Complete(inv, history.OK, inv.Value, ""); err != nil {
		return fmt.Errorf("consumer %d: recording %s: %w", w.p, f, err)
	}
	return nil
}

func (w *consumerRun) saramaConfig() *sarama.Config {
	cfg := w.env.Sarama(clientID(w.p, "consumer"))
	cfg.Consumer.IsolationLevel = isolationLevel(w.cfg.Isolation)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	if w.cfg.FromNewest {
		cfg.Consumer.Offsets.Initial = sarama.OffsetNewest
	}
	cfg.Consumer.Return.Errors = true
	return cfg
}

// instance runs one consumer instance until ctx ends or until (when not zero) passes.
func (w *consumerRun) instance(ctx context.Context, until time.Time) error {
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !until.IsZero() {
		var dcancel context.CancelFunc
		ictx, dcancel = context.WithDeadline(ictx, until)
		defer dcancel()
	}
	events := make(chan groupEvent)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Stopping: end the source's waits, close it, and read its events until its goroutines
	// are gone, so that none is left blocked on the channel.
	shutdown := func(closeSource func()) {
		cancel()
		close(stop)
		if closeSource != nil {
			closeSource()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		for {
			select {
			case <-events:
			case <-done:
				return
			}
		}
	}
	closeSource, err := w.start(ictx, events, stop, &wg)
	if err != nil {
		shutdown(nil)
		if ictx.Err() != nil {
			return nil // stopped (or due for a restart) while starting
		}
		return err
	}
	defer shutdown(closeSource)
	for ictx.Err() == nil && !w.pollsDone() {
		if err := w.poll(ictx, events); err != nil {
			return err
		}
	}
	return nil
}

// start starts the source of records (a group member, or partition consumers) feeding events.
func (w *consumerRun) start(ctx context.Context, events chan groupEvent, stop chan struct{}, wg *sync.WaitGroup) (func(), error) {
	cfg := w.saramaConfig()
	if w.cfg.Mode == Subscribe {
		if err := w.note(history.FSubscribe, map[string]any{"topics": w.cfg.Topics, "group": w.cfg.Group, "isolation": w.cfg.Isolation}); err != nil {
			return nil, err
		}
		group, err := w.openGroup(ctx, cfg)
		if err != nil {
			return nil, err
		}
		h := &groupHandler{events: events, stop: stop}
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := group.Consume(ctx, w.cfg.Topics, h); err != nil && ctx.Err() == nil {
					w.log.Warn("consumer group session ended with an error; joining again", "err", err)
					_ = sleepCtx(ctx, time.Second) // pace the rejoin
				}
			}
		})
		wg.Go(func() {
			for gerr := range group.Errors() {
				w.log.Debug("consumer group", "err", gerr)
			}
		})
		return func() {
			// Close commits the offsets marked after each recorded poll.
			if err := group.Close(); err != nil {
				w.log.Warn("closing the consumer group member", "err", err)
			}
		}, nil
	}
	return w.startAssign(ctx, cfg, events, stop, wg)
}

func (w *consumerRun) openGroup(ctx context.Context, cfg *sarama.Config) (sarama.ConsumerGroup, error) {
	for attempt := 0; ; attempt++ {
		group, err := sarama.NewConsumerGroup(w.env.Brokers, w.cfg.Group, cfg)
		if err == nil {
			return group, nil
		}
		w.log.Warn("creating the consumer group member failed; retrying", "err", err)
		if sleepCtx(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 5*time.Second)) != nil {
			return nil, fmt.Errorf("consumer %d: joining group %s: %w (last error: %v)", w.p, w.cfg.Group, ctx.Err(), err)
		}
	}
}

func (w *consumerRun) startAssign(ctx context.Context, cfg *sarama.Config, events chan groupEvent, stop chan struct{}, wg *sync.WaitGroup) (func(), error) {
	var cons sarama.Consumer
	var err error
	for attempt := 0; ; attempt++ {
		if cons, err = sarama.NewConsumer(w.env.Brokers, cfg); err == nil {
			break
		}
		if sleepCtx(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 5*time.Second)) != nil {
			return nil, fmt.Errorf("consumer %d: connecting: %w (last error: %v)", w.p, ctx.Err(), err)
		}
	}
	parts := map[string][]int32{}
	for _, t := range w.cfg.Topics {
		if ps, ok := w.cfg.Partitions[t]; ok {
			parts[t] = ps
			continue
		}
		ps, err := cons.Partitions(t)
		if err != nil {
			_ = cons.Close()
			return nil, fmt.Errorf("consumer %d: partitions of %s: %w", w.p, t, err)
		}
		parts[t] = ps
	}
	if err := w.note(history.FAssign, map[string]any{"partitions": parts, "topics": w.cfg.Topics, "isolation": w.cfg.Isolation}); err != nil {
		_ = cons.Close()
		return nil, err
	}
	var pcs []sarama.PartitionConsumer
	for _, t := range slices.Sorted(maps.Keys(parts)) {
		for _, p := range parts[t] {
			from := sarama.OffsetOldest
			if w.cfg.FromNewest {
				from = sarama.OffsetNewest
			}
			if off, ok := w.next[t][p]; ok {
				from = off
			}
			pc, err := cons.ConsumePartition(t, p, from)
			if err != nil {
				for _, pc := range pcs {
					pc.AsyncClose()
				}
				_ = cons.Close()
				return nil, fmt.Errorf("consumer %d: consuming %s-%d from %d: %w", w.p, t, p, from, err)
			}
			pcs = append(pcs, pc)
			wg.Go(func() {
				for {
					select {
					case m, ok := <-pc.Messages():
						if !ok {
							return
						}
						select {
						case events <- groupEvent{kind: evRecord, msg: m}:
						case <-stop:
							return
						}
					case perr, ok := <-pc.Errors():
						if ok {
							w.log.Debug("partition consumer", "err", perr)
						}
					case <-stop:
						return
					}
				}
			})
		}
	}
	return func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
		if err := cons.Close(); err != nil {
			w.log.Debug("closing the consumer", "err", err)
		}
	}, nil
}

// poll records one poll: the records that arrive within PollWait (at most PollRecords), in
// arrival order. A rebalance ends the poll early; its assignment is noted after it.
func (w *consumerRun) poll(ctx context.Context, events chan groupEvent) error {
	pl := &history.Poll{Isolation: string(w.cfg.Isolation), Group: w.cfg.Group, Records: []history.Record{}}
	inv, err := w.env.Recorder.Invoke(w.proc, history.FPoll, history.Payload{Poll: pl})
	if err != nil {
		return fmt.Errorf("consumer %d: recording a poll: %w", w.p, err)
	}
	timer := time.NewTimer(w.cfg.PollWait)
	defer timer.Stop()
	var marks []groupEvent
	var control *groupEvent
collect:
	for len(pl.Records) < w.cfg.PollRecords {
		select {
		case ev := <-events:
			if ev.kind != evRecord {
				control = &ev
				break collect
			}
			m := ev.msg
			r := history.Record{Topic: m.Topic, Partition: m.Partition, Value: string(m.Value)}.At(m.Offset)
			if len(m.Key) > 0 {
				r.Key = string(m.Key)
			}
			pl.Records = append(pl.Records, r)
			marks = append(marks, ev)
		case <-timer.C:
			break collect
		case <-ctx.Done():
			break collect
		}
	}
	if _, err := w.env.Recorder.Complete(inv, history.OK, history.Payload{Poll: pl}, ""); err != nil {
		return fmt.Errorf("consumer %d: recording a poll: %w", w.p, err)
	}
	w.stats.Polls++
	w.stats.Records += int64(len(pl.Records))
	for _, ev := range marks {
		if ev.sess != nil {
			// Committed (by auto-commit, and on close) only once recorded: a restart
			// resumes after what the history shows this consumer read.
			ev.sess.MarkMessage(ev.msg, "")
		} else {
			if w.next[ev.msg.Topic] == nil {
				w.next[ev.msg.Topic] = map[int32]int64{}
			}
			w.next[ev.msg.Topic][ev.msg.Partition] = ev.msg.Offset + 1
		}
	}
	if control != nil && control.kind == evSetup {
		w.stats.Rebalances++
		return w.note(history.FAssign, claimsPayload(control.sess, w.cfg.Group, string(w.cfg.Isolation)))
	}
	return nil
}
