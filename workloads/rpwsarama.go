package workloads

import (
	"context"
	"errors"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	ksarama "github.com/verity-kafka/verity/workloads/kclient/sarama"
)

// saramaMember is the sarama adapter of rpwMember: a transactional producer (ksarama.Txn) and a
// consumer group member. Each Consume call is one session (one group generation); group.go's
// handler turns a session's Setup, records and Cleanup into events on one channel, which next
// reads.
type saramaMember struct {
	*ksarama.Txn
	w      *processor
	group  sarama.ConsumerGroup
	h      *groupHandler
	events chan groupEvent
	stop   chan struct{}

	// The session under way: its Consume call's context and result, and its assignment.
	running bool
	cancel  context.CancelFunc
	errc    chan error
	sess    sarama.ConsumerGroupSession
	// The batch being gathered, and when it is due (BatchWait after its first record).
	batch []*sarama.ConsumerMessage
	timer *time.Timer
	due   <-chan time.Time
	// The batch last handed out by next, and the session it came from: addOffsets commits
	// its offsets with that session's group metadata.
	out     []*sarama.ConsumerMessage
	outSess sarama.ConsumerGroupSession
}

// openSaramaMember opens the transactional producer (retrying until ctx ends) and the consumer
// group member.
func openSaramaMember(ctx context.Context, w *processor) (*saramaMember, error) {
	spec := txnSpec(w.env, w.p, "rpw", w.cfg.TxnID, w.cfg.TxnClientConfig, w.log)
	tc, err := initWithRetry(ctx, w.log, w.cfg.TxnID, func() (*ksarama.Txn, error) {
		return ksarama.New(w.env.Brokers, w.env.Sarama).OpenTxnProducer(spec)
	})
	if err != nil {
		return nil, err
	}
	ccfg := w.env.Sarama(clientID(w.p, "rpw-consumer"))
	ccfg.Consumer.IsolationLevel = sarama.ReadCommitted
	ccfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	// Offsets move only inside transactions (AddOffsetsToTxn): never by auto-commit.
	ccfg.Consumer.Offsets.AutoCommit.Enable = false
	ccfg.Consumer.Return.Errors = true
	group, err := sarama.NewConsumerGroup(w.env.Brokers, w.cfg.Group, ccfg)
	if err != nil {
		tc.Close()
		return nil, errCrash{reason: "creating the consumer group member: " + err.Error()}
	}
	go func() {
		for gerr := range group.Errors() {
			w.log.Debug("consumer group", "err", gerr)
		}
	}()
	m := &saramaMember{Txn: tc, w: w, group: group, events: make(chan groupEvent), stop: make(chan struct{})}
	m.h = &groupHandler{events: m.events, stop: m.stop}
	return m, nil
}

// start begins a session: one Consume call.
func (m *saramaMember) start(ctx context.Context) {
	m.w.stats.Sessions++
	sctx, cancel := context.WithCancel(ctx)
	m.running, m.cancel, m.errc = true, cancel, make(chan error, 1)
	errc := m.errc
	go func() { errc <- m.group.Consume(sctx, []string{m.w.cfg.Input}, m.h) }()
}

// end ends the session under way and reads every event until Consume returns: its claims must
// not outlive it, and none of its records may reach the next session.
func (m *saramaMember) end() {
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
	m.sess, m.batch, m.due = nil, nil, nil
}

func (m *saramaMember) next(ctx context.Context) (rpwEvent, error) {
	for {
		if !m.running {
			m.start(ctx)
		}
		select {
		case <-ctx.Done():
			return rpwEvent{}, nil
		case err := <-m.errc:
			m.cancel()
			m.running = false
			m.sess, m.batch, m.due = nil, nil, nil
			if err != nil && !errors.Is(err, context.Canceled) {
				m.w.log.Warn("consumer group session ended with an error; joining again", "err", err)
				// Pace the rejoin: the coordinator may be unavailable for a while.
				_ = kit.Sleep(ctx, time.Second)
			}
		case <-m.due:
			return m.flush(), nil
		case ev := <-m.events:
			switch ev.kind {
			case evSetup:
				m.sess, m.batch, m.due = ev.sess, nil, nil
				return rpwEvent{assign: sessionClaims(ev.sess).payload(m.w.cfg.Group, history.ReadCommitted)}, nil
			case evCleanup:
				// The generation ended (a rebalance): a batch not yet processed is read
				// again by the next session from the committed offsets.
				m.sess, m.batch, m.due = nil, nil, nil
			case evRecord:
				if ev.sess != m.sess || m.sess == nil {
					continue
				}
				if len(m.batch) == 0 {
					if m.timer == nil {
						m.timer = time.NewTimer(m.w.cfg.BatchWait)
					} else {
						m.timer.Reset(m.w.cfg.BatchWait)
					}
					m.due = m.timer.C
				}
				m.batch = append(m.batch, ev.msg)
				if len(m.batch) >= m.w.cfg.BatchRecords {
					return m.flush(), nil
				}
			}
		}
	}
}

// flush hands the batch out.
func (m *saramaMember) flush() rpwEvent {
	m.out, m.outSess = m.batch, m.sess
	m.batch, m.due = nil, nil
	in := make([]history.Record, len(m.out))
	for i, msg := range m.out {
		in[i] = history.Record{Topic: msg.Topic, Partition: msg.Partition, Value: string(msg.Value)}.At(msg.Offset)
		if len(msg.Key) > 0 {
			in[i].Key = string(msg.Key)
		}
	}
	return rpwEvent{input: in}
}

// addOffsets sends the offsets after the batch with the session's generation (KIP-447), so that
// a member fenced by a rebalance cannot commit them (the plain AddOffsetsToTxn sends generation
// -1, which fences nothing).
func (m *saramaMember) addOffsets() error {
	offsets := map[int32]int64{}
	for _, msg := range m.out {
		offsets[msg.Partition] = max(offsets[msg.Partition], msg.Offset+1)
	}
	po := map[string][]*sarama.PartitionOffsetMetadata{}
	for part, off := range offsets {
		po[m.w.cfg.Input] = append(po[m.w.cfg.Input], &sarama.PartitionOffsetMetadata{Partition: part, Offset: off})
	}
	return m.AddOffsets(po, sarama.NewConsumerGroupMetadataFromSession(m.outSess, m.w.cfg.Group, nil))
}

// rewind ends the session, so that the next one starts from the committed offsets: after a
// transaction that did not commit, the consumer's position is past inputs whose processing was
// rolled back, and sarama (like the Java consumer, KAFKA-17582) does not rewind by itself. A
// new session's offsets come from the group coordinator, so an unknown outcome is no different.
func (m *saramaMember) rewind(history.Type) error {
	m.end()
	return nil
}

// Close leaves the group, then closes the producer without ending its transaction.
func (m *saramaMember) Close() {
	m.end()
	if m.timer != nil {
		m.timer.Stop()
	}
	close(m.stop)
	if err := m.group.Close(); err != nil {
		m.w.log.Warn("closing the consumer group member", "err", err)
	}
	m.Txn.Close()
}
