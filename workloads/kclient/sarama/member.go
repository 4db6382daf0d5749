package sarama

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// member is sarama's kclient.Member: a transactional producer (Txn) and a consumer group member.
// Each Consume call is one session (one group generation); group.go's handler turns a session's
// Setup, records and Cleanup into events on one channel, which Poll reads.
type member struct {
	*Txn
	spec   kclient.MemberSpec
	log    *slog.Logger
	group  sarama.ConsumerGroup
	h      *groupHandler
	events chan groupEvent
	stop   chan struct{}

	// The session under way: its Consume call's context and result, and the session whose
	// records Poll hands out (nil between a session's end and the next one's Setup).
	running bool
	cancel  context.CancelFunc
	errc    chan error
	sess    sarama.ConsumerGroupSession
}

// OpenMember opens the transactional producer (initialising its id) and the consumer group
// member, which joins when Poll first runs.
func (c *Client) OpenMember(_ context.Context, s kclient.MemberSpec) (kclient.Member, error) {
	if err := classicOnly(s.GroupProtocol); err != nil {
		return nil, err
	}
	tc, err := c.openTxn(s.Txn)
	if err != nil {
		return nil, err
	}
	log := kit.OrDiscard(s.Txn.Log)
	ccfg := c.base(s.ConsumerClientID)
	ccfg.Consumer.IsolationLevel = sarama.ReadCommitted
	if s.ReadIsolation() == kafkaconf.ReadUncommitted {
		ccfg.Consumer.IsolationLevel = sarama.ReadUncommitted
	}
	ccfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	// Offsets move only inside transactions (AddOffsetsToTxn): never by auto-commit.
	ccfg.Consumer.Offsets.AutoCommit.Enable = false
	ccfg.Consumer.Return.Errors = true
	group, err := sarama.NewConsumerGroup(c.brokers, s.Group, ccfg)
	if err != nil {
		tc.Close()
		return nil, fmt.Errorf("creating the consumer group member: %w", err)
	}
	go func() {
		for gerr := range group.Errors() {
			log.Debug("consumer group", "err", gerr)
		}
	}()
	m := &member{Txn: tc, spec: s, log: log, group: group, events: make(chan groupEvent), stop: make(chan struct{})}
	m.h = &groupHandler{events: m.events, stop: m.stop}
	return m, nil
}

// start begins a session: one Consume call.
func (m *member) start(ctx context.Context) {
	sctx, cancel := context.WithCancel(ctx)
	m.running, m.cancel, m.errc = true, cancel, make(chan error, 1)
	errc := m.errc
	go func() { errc <- m.group.Consume(sctx, []string{m.spec.Input}, m.h) }()
}

// end ends the session under way and reads every event until Consume returns: its claims must
// not outlive it, and none of its records may reach the next session.
func (m *member) end() {
	if !m.running {
		return
	}
	m.cancel()
	for m.running {
		select {
		case <-m.events:
		case <-m.errc:
			m.running = false
		}
	}
	m.sess = nil
}

// Poll returns as soon as it has something and nothing more is waiting: the records of the
// current session, a new session's assignment, or the end of a session (EventRevoked: the
// records handed out since its Setup are read again by the next one, from the committed
// offsets).
func (m *member) Poll(ctx context.Context, max int, until time.Time) ([]kclient.Event, error) {
	var due <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		due = t.C
	}
	var out []kclient.Event
	for {
		if !m.running {
			m.start(ctx)
		}
		var ev groupEvent
		if len(out) > 0 {
			select {
			case ev = <-m.events:
			default:
				return out, nil
			}
		} else {
			select {
			case <-ctx.Done():
				return out, nil
			case <-due:
				return out, nil
			case err := <-m.errc:
				m.cancel()
				m.running, m.sess = false, nil
				if err != nil && !errors.Is(err, context.Canceled) {
					m.log.Warn("consumer group session ended with an error; joining again", "err", err)
					// Pace the rejoin: the coordinator may be unavailable for a while.
					_ = kit.Sleep(ctx, time.Second)
				}
				return append(out, kclient.Event{Kind: kclient.EventRevoked}), nil
			case ev = <-m.events:
			}
		}
		switch ev.kind {
		case evSetup:
			m.sess = ev.sess
			return append(out, kclient.Event{Kind: kclient.EventAssigned, Claims: sessionClaims(ev.sess)}), nil
		case evCleanup:
			// The generation ended (a rebalance).
			m.sess = nil
			return append(out, kclient.Event{Kind: kclient.EventRevoked}), nil
		case evRecord:
			if ev.sess != m.sess || m.sess == nil {
				continue
			}
			out = append(out, kclient.Event{Kind: kclient.EventRecord, Record: historyRecord(ev.msg), Epoch: -1})
			if len(out) >= max {
				return out, nil
			}
		}
	}
}

// AddOffsets sends the offsets after in with the session's generation (KIP-447), so that a
// member fenced by a rebalance cannot commit them (the plain AddOffsetsToTxn sends generation
// -1, which fences nothing). in came from the current session: a session's end is reported
// before the records of the next.
func (m *member) AddOffsets(in []history.Record) error {
	if m.sess == nil {
		return errors.New("adding offsets: the session that delivered the records has ended")
	}
	offsets := map[int32]int64{}
	for _, r := range in {
		offsets[r.Partition] = max(offsets[r.Partition], *r.Offset+1)
	}
	po := map[string][]*sarama.PartitionOffsetMetadata{}
	for part, off := range offsets {
		po[m.spec.Input] = append(po[m.spec.Input], &sarama.PartitionOffsetMetadata{Partition: part, Offset: off})
	}
	return m.prod.AddOffsetsToTxnWithGroupMetadata(po, sarama.NewConsumerGroupMetadataFromSession(m.sess, m.spec.Group, nil))
}

// Rewind ends the session, so that the next one starts from the committed offsets: after a
// transaction that did not commit, the consumer's position is past inputs whose processing was
// rolled back, and sarama (like the Java consumer, KAFKA-17582) does not rewind by itself. A
// new session's offsets come from the group coordinator, so an unknown outcome is no different.
func (m *member) Rewind(history.Type) error {
	m.end()
	return nil
}

// Close leaves the group, then closes the producer without ending its transaction.
func (m *member) Close() {
	m.end()
	close(m.stop)
	if err := m.group.Close(); err != nil {
		m.log.Warn("closing the consumer group member", "err", err)
	}
	m.Txn.Close()
}
