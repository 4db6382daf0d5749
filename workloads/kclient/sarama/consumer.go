package sarama

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
	"github.com/verity-kafka/verity/workloads/kclient"
)

// consumer is sarama's kclient.Consumer. sarama delivers on goroutines of its own (a
// consumer-group session's Setup, one ConsumeClaim per partition, Cleanup; or one partition
// consumer each): they all send to one channel, in order, that Poll reads.
type consumer struct {
	events chan groupEvent
	// stop ends the senders' waits once nobody reads events any more.
	stop   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
	log    *slog.Logger
	// closeSource closes what was opened: the group member (which commits the marked offsets)
	// or the partition consumers and their consumer.
	closeSource func()
	// storePositions (ConsumerSpec): nothing is marked, and place is the last session's
	// setup, waiting for Seek.
	storePositions bool
	place          chan map[string]map[int32]int64
}

func (c *Client) OpenConsumer(ctx context.Context, s kclient.ConsumerSpec) (kclient.Consumer, error) {
	if err := classicOnly(s.GroupProtocol); err != nil {
		return nil, err
	}
	cfg := c.consumerConfig(s)
	sctx, cancel := context.WithCancel(ctx)
	cons := &consumer{events: make(chan groupEvent), stop: make(chan struct{}), cancel: cancel, log: kit.OrDiscard(s.Log),
		storePositions: s.StorePositions}
	var err error
	if s.Group != "" {
		err = cons.startGroup(sctx, c.brokers, s, cfg)
	} else {
		err = cons.startAssign(sctx, c.brokers, s, cfg)
	}
	if err != nil {
		cons.Close()
		return nil, err
	}
	return cons, nil
}

func (c *Client) consumerConfig(s kclient.ConsumerSpec) *sarama.Config {
	cfg := c.base(s.ClientID)
	cfg.Consumer.IsolationLevel = Isolation(s.Isolation)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	if s.FromNewest {
		cfg.Consumer.Offsets.Initial = sarama.OffsetNewest
	}
	cfg.Consumer.Return.Errors = true
	// With the positions kept by the role, nothing is ever committed to the group.
	cfg.Consumer.Offsets.AutoCommit.Enable = !s.StorePositions
	return cfg
}

func (c *consumer) startGroup(ctx context.Context, brokers []string, s kclient.ConsumerSpec, cfg *sarama.Config) error {
	group, err := JoinGroup(ctx, brokers, s.Group, cfg, c.log)
	if err != nil {
		return err
	}
	h := &groupHandler{events: c.events, stop: c.stop, storePositions: s.StorePositions}
	c.wg.Go(func() {
		for ctx.Err() == nil {
			if err := group.Consume(ctx, s.Topics, h); err != nil && ctx.Err() == nil {
				c.log.Warn("consumer group session ended with an error; joining again", "err", err)
				_ = kit.Sleep(ctx, time.Second) // pace the rejoin
			}
		}
	})
	c.wg.Go(func() {
		for gerr := range group.Errors() {
			c.log.Debug("consumer group", "err", gerr)
		}
	})
	c.closeSource = func() {
		// Close commits the offsets marked after each recorded poll.
		if err := group.Close(); err != nil {
			c.log.Warn("closing the consumer group member", "err", err)
		}
	}
	return nil
}

// JoinGroup creates a member of group name, retrying until ctx ends: the coordinator may be
// unavailable for a while.
func JoinGroup(ctx context.Context, brokers []string, name string, cfg *sarama.Config, log *slog.Logger) (sarama.ConsumerGroup, error) {
	for attempt := 0; ; attempt++ {
		group, err := sarama.NewConsumerGroup(brokers, name, cfg)
		if err == nil {
			return group, nil
		}
		log.Warn("creating the consumer group member failed; retrying", "err", err)
		if kit.Sleep(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 5*time.Second)) != nil {
			return nil, fmt.Errorf("consumer: joining group %s: %w (last error: %v)", name, ctx.Err(), err)
		}
	}
}

func (c *consumer) startAssign(ctx context.Context, brokers []string, s kclient.ConsumerSpec, cfg *sarama.Config) error {
	var cons sarama.Consumer
	var err error
	for attempt := 0; ; attempt++ {
		if cons, err = sarama.NewConsumer(brokers, cfg); err == nil {
			break
		}
		if kit.Sleep(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 5*time.Second)) != nil {
			return fmt.Errorf("consumer: connecting: %w (last error: %v)", ctx.Err(), err)
		}
	}
	var pcs []sarama.PartitionConsumer
	c.closeSource = func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
		if err := cons.Close(); err != nil {
			c.log.Debug("closing the consumer", "err", err)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(s.Assign)) {
		for _, p := range slices.Sorted(maps.Keys(s.Assign[t])) {
			from := sarama.OffsetOldest
			if s.FromNewest {
				from = sarama.OffsetNewest
			}
			if pos := s.Assign[t][p]; pos.Offset >= 0 {
				from = pos.Offset
			}
			pc, err := cons.ConsumePartition(t, p, from)
			if err != nil {
				return fmt.Errorf("consumer: consuming %s-%d from %d: %w", t, p, from, err)
			}
			pcs = append(pcs, pc)
			c.wg.Go(func() { c.forward(pc) })
		}
	}
	return nil
}

// forward hands a partition consumer's records to Poll until it closes or nobody reads.
func (c *consumer) forward(pc sarama.PartitionConsumer) {
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
				// sarama stops the partition's consumer here rather than reset (it
				// validates no position, KIP-320): say why its polls end.
				c.log.Warn("sarama stopped consuming a partition whose log no longer holds the position (truncated?)",
					"topic", perr.Topic, "partition", perr.Partition, "err", perr.Err)
			case ok:
				c.log.Debug("partition consumer", "err", perr)
			}
		case <-c.stop:
			return
		}
	}
}

// Poll reads the records that arrive within wait (at most max), in arrival order. A session's
// end ends the poll early; a new session's assignment ends it too, as its last event.
func (c *consumer) Poll(ctx context.Context, wait time.Duration, max int) []kclient.Event {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var out []kclient.Event
	for n := 0; n < max; {
		select {
		case ev := <-c.events:
			switch ev.kind {
			case evRecord:
				out = append(out, kclient.Event{Kind: kclient.EventRecord, Record: historyRecord(ev.msg), Epoch: -1, Handle: ev})
				n++
			case evSetup:
				c.place = ev.place
				return append(out, kclient.Event{Kind: kclient.EventAssigned, Claims: sessionClaims(ev.sess)})
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

// historyRecord is m as the history's record.
func historyRecord(m *sarama.ConsumerMessage) history.Record {
	r := history.Record{Topic: m.Topic, Partition: m.Partition, Value: string(m.Value)}.At(m.Offset)
	if len(m.Key) > 0 {
		r.Key = string(m.Key)
	}
	return r
}

// Recorded marks the records of a group session: sarama commits marked offsets every second
// (Consumer.Offsets.AutoCommit) and when the member closes.
func (c *consumer) Recorded(recs []kclient.Event) {
	if c.storePositions {
		return
	}
	for _, ev := range recs {
		if ge, ok := ev.Handle.(groupEvent); ok && ge.sess != nil {
			ge.sess.MarkMessage(ge.msg, "")
		}
	}
}

// Seek hands the offsets to the setup of the session whose assignment Poll returned last: every
// claim of a sarama session is new (its rebalances are eager).
func (c *consumer) Seek(_ context.Context, at map[string]map[int32]int64) error {
	if !c.storePositions {
		return errors.New("consumer: seek without store_positions: the group's committed offsets place its partitions")
	}
	if c.place != nil {
		c.place <- at // buffered for one, and each setup's channel is handed over once
		c.place = nil
	}
	return nil
}

// Close ends the senders' waits, closes the source, and reads its events until its goroutines
// are gone, so that none is left blocked on the channel.
func (c *consumer) Close() {
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
