package sarama

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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

	// handed are the session's records handed out since its offsets were last committed, and
	// added how many of them the transaction under way put in (AddOffsets); replay holds those
	// to hand out again, before any new record, after a transaction that did not commit.
	handed []kclient.Event
	added  int
	replay []kclient.Event
	// dropped: the last commit failed because the coordinator had dropped the member.
	dropped bool
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
	m.forget()
}

// forget drops what the session handed out: a new session starts from the committed offsets.
func (m *member) forget() { m.handed, m.added, m.replay = nil, 0, nil }

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
	if n := min(max, len(m.replay)); n > 0 && m.sess != nil {
		out := slices.Clone(m.replay[:n])
		m.replay = m.replay[n:]
		m.handed = append(m.handed, out...)
		return out, nil
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
			m.forget()
			return append(out, kclient.Event{Kind: kclient.EventAssigned, Claims: sessionClaims(ev.sess)}), nil
		case evCleanup:
			// The generation ended (a rebalance).
			m.sess = nil
			m.forget()
			return append(out, kclient.Event{Kind: kclient.EventRevoked}), nil
		case evRecord:
			if ev.sess != m.sess || m.sess == nil {
				continue
			}
			rec := kclient.Event{Kind: kclient.EventRecord, Record: historyRecord(ev.msg), Epoch: -1}
			out = append(out, rec)
			m.handed = append(m.handed, rec)
			if len(out) >= max {
				return out, nil
			}
		}
	}
}

// droppedBy reports whether err, a commit's, says the coordinator no longer knows the member or
// its generation: the group has gone on without it.
func droppedBy(err error) bool {
	var k sarama.KError
	return errors.As(err, &k) && (k == sarama.ErrUnknownMemberId || k == sarama.ErrIllegalGeneration)
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
	m.added = len(m.handed)
	return m.prod.AddOffsetsToTxnWithGroupMetadata(po, sarama.NewConsumerGroupMetadataFromSession(m.sess, m.spec.Group, nil))
}

// Commit commits the transaction; once it has, the records whose offsets it carried are behind
// the committed offsets, and no rewind hands them out again.
func (m *member) Commit() (history.Type, string) {
	t, text, err := m.Txn.commit()
	m.dropped = droppedBy(err)
	if t == history.OK {
		m.handed = slices.Delete(m.handed, 0, m.added)
	}
	m.added = 0
	return t, text
}

// Rewind makes the next records start from the committed offsets: after a transaction that did
// not commit, the consumer's position is past inputs whose processing was rolled back, and
// sarama (like the Java consumer, KAFKA-17582) does not rewind by itself, nor can a group
// session seek. After an abort (fail) the member hands out again, first, the records it handed
// out since the last commit: what a fetch from the committed offsets returns, for the session
// delivered them in order from there. Ending the session instead would make the member join
// again, which rebalances the whole group and aborts every other member's transaction, whose
// rewinds would do the same. After an unknown outcome (info) the committed offsets are not
// known here: the session ends, and the next one's offsets come from the group coordinator. So
// it does after a commit refused because the coordinator dropped the member: its session's
// generation can commit nothing more, whatever sarama's heartbeat has seen, and it must join
// again. An abort between sessions rewinds nothing: the next session starts from the committed
// offsets, which an abort leaves as they were. Ending the join under way instead makes the member
// join again, and the group rebalance, at each abort; since a join waits for every other member,
// a member that aborts more often than a join takes never gets a session again.
func (m *member) Rewind(t history.Type) error {
	dropped := m.dropped
	m.dropped = false
	if t == history.Fail && !dropped {
		if m.sess != nil {
			m.replay = append(m.handed, m.replay...)
			m.handed, m.added = nil, 0
		}
		return nil
	}
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
