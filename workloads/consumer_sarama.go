package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/internal/kit"
)

// saramaConsumer is the consumer workload's sarama adapter. sarama delivers on goroutines of its
// own (a consumer-group session's Setup, one ConsumeClaim per partition, Cleanup; or one
// partition consumer each): they all send to one channel, in order, that Poll reads.
type saramaConsumer struct {
	events chan groupEvent
	// stop ends the senders' waits once nobody reads events any more.
	stop   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// closeSource closes what was opened: the group member (which commits the marked offsets)
	// or the partition consumers and their consumer.
	closeSource func()
}

func openSaramaConsumer(ctx context.Context, env Env, st consumerStart, log *slog.Logger) (consumerClient, map[string][]int32, error) {
	cfg := saramaConsumerConfig(env, st)
	sctx, cancel := context.WithCancel(ctx)
	c := &saramaConsumer{events: make(chan groupEvent), stop: make(chan struct{}), cancel: cancel}
	var parts map[string][]int32
	var err error
	if st.cfg.Mode == Subscribe {
		err = c.startGroup(sctx, env, st, cfg, log)
	} else {
		parts, err = c.startAssign(sctx, env, st, cfg, log)
	}
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, parts, nil
}

func saramaConsumerConfig(env Env, st consumerStart) *sarama.Config {
	cfg := env.Sarama(st.clientID)
	cfg.Consumer.IsolationLevel = isolationLevel(st.cfg.Isolation)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	if st.cfg.FromNewest {
		cfg.Consumer.Offsets.Initial = sarama.OffsetNewest
	}
	cfg.Consumer.Return.Errors = true
	return cfg
}

func (c *saramaConsumer) startGroup(ctx context.Context, env Env, st consumerStart, cfg *sarama.Config, log *slog.Logger) error {
	group, err := openSaramaGroup(ctx, env, st.cfg.Group, cfg, log)
	if err != nil {
		return err
	}
	h := &groupHandler{events: c.events, stop: c.stop}
	c.wg.Go(func() {
		for ctx.Err() == nil {
			if err := group.Consume(ctx, st.cfg.Topics, h); err != nil && ctx.Err() == nil {
				log.Warn("consumer group session ended with an error; joining again", "err", err)
				_ = kit.Sleep(ctx, time.Second) // pace the rejoin
			}
		}
	})
	c.wg.Go(func() {
		for gerr := range group.Errors() {
			log.Debug("consumer group", "err", gerr)
		}
	})
	c.closeSource = func() {
		// Close commits the offsets marked after each recorded poll.
		if err := group.Close(); err != nil {
			log.Warn("closing the consumer group member", "err", err)
		}
	}
	return nil
}

func openSaramaGroup(ctx context.Context, env Env, name string, cfg *sarama.Config, log *slog.Logger) (sarama.ConsumerGroup, error) {
	for attempt := 0; ; attempt++ {
		group, err := sarama.NewConsumerGroup(env.Brokers, name, cfg)
		if err == nil {
			return group, nil
		}
		log.Warn("creating the consumer group member failed; retrying", "err", err)
		if kit.Sleep(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 5*time.Second)) != nil {
			return nil, fmt.Errorf("consumer: joining group %s: %w (last error: %v)", name, ctx.Err(), err)
		}
	}
}

func (c *saramaConsumer) startAssign(ctx context.Context, env Env, st consumerStart, cfg *sarama.Config, log *slog.Logger) (map[string][]int32, error) {
	var cons sarama.Consumer
	var err error
	for attempt := 0; ; attempt++ {
		if cons, err = sarama.NewConsumer(env.Brokers, cfg); err == nil {
			break
		}
		if kit.Sleep(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 5*time.Second)) != nil {
			return nil, fmt.Errorf("consumer: connecting: %w (last error: %v)", ctx.Err(), err)
		}
	}
	parts := map[string][]int32{}
	for _, t := range st.cfg.Topics {
		if ps, ok := st.cfg.Partitions[t]; ok {
			parts[t] = ps
			continue
		}
		ps, err := cons.Partitions(t)
		if err != nil {
			_ = cons.Close()
			return nil, fmt.Errorf("consumer: partitions of %s: %w", t, err)
		}
		parts[t] = ps
	}
	var pcs []sarama.PartitionConsumer
	c.closeSource = func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
		if err := cons.Close(); err != nil {
			log.Debug("closing the consumer", "err", err)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(parts)) {
		for _, p := range parts[t] {
			from := sarama.OffsetOldest
			if st.cfg.FromNewest {
				from = sarama.OffsetNewest
			}
			if pos, ok := st.from[t][p]; ok {
				from = pos.offset
			}
			pc, err := cons.ConsumePartition(t, p, from)
			if err != nil {
				return nil, fmt.Errorf("consumer: consuming %s-%d from %d: %w", t, p, from, err)
			}
			pcs = append(pcs, pc)
			c.wg.Go(func() {
				for {
					select {
					case m, ok := <-pc.Messages():
						if !ok {
							return
						}
						select {
						case c.events <- groupEvent{kind: evRecord, msg: m}:
						case <-c.stop:
							return
						}
					case perr, ok := <-pc.Errors():
						switch {
						case ok && errors.Is(perr.Err, sarama.ErrOffsetOutOfRange):
							// sarama stops the partition's consumer here rather than reset
							// (it validates no position, KIP-320): say why its polls end.
							log.Warn("sarama stopped consuming a partition whose log no longer holds the position (truncated?)",
								"topic", perr.Topic, "partition", perr.Partition, "err", perr.Err)
						case ok:
							log.Debug("partition consumer", "err", perr)
						}
					case <-c.stop:
						return
					}
				}
			})
		}
	}
	return parts, nil
}

// Poll reads the records that arrive within wait (at most max), in arrival order. A session's
// end ends the poll early; a new session's assignment ends it too, as its last event.
func (c *saramaConsumer) Poll(ctx context.Context, wait time.Duration, max int) []consumerEvent {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var out []consumerEvent
	for n := 0; n < max; {
		select {
		case ev := <-c.events:
			switch ev.kind {
			case evRecord:
				m := ev.msg
				r := history.Record{Topic: m.Topic, Partition: m.Partition, Value: string(m.Value)}.At(m.Offset)
				if len(m.Key) > 0 {
					r.Key = string(m.Key)
				}
				out = append(out, consumerEvent{kind: ceRecord, rec: r, epoch: -1, handle: ev})
				n++
			case evSetup:
				return append(out, consumerEvent{kind: ceRebalance, claims: sessionClaims(ev.sess)})
			case evCleanup:
				return out
			}
		case <-timer.C:
			return out
		case <-ctx.Done():
			return out
		}
	}
	return out
}

// Recorded marks the records of a group session: sarama commits marked offsets every second
// (Consumer.Offsets.AutoCommit) and when the member closes.
func (c *saramaConsumer) Recorded(recs []consumerEvent) {
	for _, ev := range recs {
		if ge, ok := ev.handle.(groupEvent); ok && ge.sess != nil {
			ge.sess.MarkMessage(ge.msg, "")
		}
	}
}

// Close ends the senders' waits, closes the source, and reads its events until its goroutines
// are gone, so that none is left blocked on the channel.
func (c *saramaConsumer) Close() {
	c.cancel()
	close(c.stop)
	if c.closeSource != nil {
		c.closeSource()
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	for {
		select {
		case <-c.events:
		case <-done:
			return
		}
	}
}
