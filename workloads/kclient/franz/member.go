package franz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// member is franz-go's kclient.Member: one kgo.GroupTransactSession, which is both the group
// member and the transactional producer. Its End commits the offsets of every record polled since
// the previous End (TxnOffsetCommit with the member's generation and member id, KIP-447) and then
// ends the transaction; when it does not commit, it rewinds the consumer to the offsets it knows
// committed, by itself. The role asks Poll for at most what its batch lacks, so every record
// polled is in the batch, and End commits exactly the offsets after the batch.
type member struct {
	spec kclient.MemberSpec
	log  *slog.Logger
	sess *kgo.GroupTransactSession
	cl   *kgo.Client

	// Assignments, noted by franz-go's callbacks on its own goroutine and handed out by Poll;
	// owned is the member's whole assignment (KIP-848 hands out what it adds and revokes).
	mu    sync.Mutex
	notes []kclient.Claims
	owned map[string][]int32
	// eager: the classic protocol with the range balancer, which revokes everything at every
	// rebalance; under KIP-848 the member keeps what it retains.
	eager bool
	// wake ends the poll under way, so that an assignment is reported when it happens rather
	// than when the next record arrives.
	wake context.CancelFunc

	// acked counts the outputs of the current transaction that the brokers acknowledged.
	acked int
	// commitSent: franz-go logged, during the current End, that it was sending EndTxn with
	// commit (see Commit).
	commitSent atomic.Bool
	// blind: an End committed although commitSent was not seen, so franz-go no longer logs
	// what Commit relies on; every commit that then fails is taken as unknown.
	blind bool
	// endErr is the last End's error: franz-go may have left the transaction open, or not
	// rewound; the instance is then replaced.
	endErr error
}

// OpenMember creates the group transact session (the group member joins in the background) and
// initialises its transactional.id.
func (c *Client) OpenMember(ctx context.Context, s kclient.MemberSpec) (kclient.Member, error) {
	if s.GroupProtocol == kafkaconf.GroupConsumer {
		// Under KIP-848 a member keeps the positions of the partitions it retains, and End
		// commits the offsets of every record polled: records the processor drops at a
		// rebalance would be committed unprocessed. franz-go's consumers speak it; its
		// processors do not, here.
		return nil, &kclient.PermanentError{Err: errors.New("franz-go's read-process-write member speaks the classic group protocol only")}
	}
	m := &member{spec: s, log: kit.OrDiscard(s.Txn.Log), owned: map[string][]int32{}, eager: s.GroupProtocol != kafkaconf.GroupConsumer}
	opts := append(c.txnOpts(s.Txn, NewLog(m.log, m.ending)),
		kgo.ConsumerGroup(s.Group),
		kgo.ConsumeTopics(s.Input),
		// The offsets are committed only in End (franz-go disables auto-commit for a
		// transactional client); the group's offsets are fetched with require_stable, which
		// franz-go always sets, waiting out a pending transactional offset commit (KIP-447).
		kgo.FetchIsolationLevel(isolation(s.ReadIsolation())),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Eager, like sarama's range strategy: every generation revokes and hands out the
		// whole assignment, so that OnPartitionsAssigned sees each generation's complete
		// claims for the assign op. (GroupTransactSession swallows a second revocation
		// before End, so a cooperative member could not keep its claims from the callbacks.)
		kgo.Balancers(kgo.RangeBalancer()),
		// sarama's session timeout, so that both clients' members rebalance alike.
		kgo.SessionTimeout(10*time.Second),
		kgo.OnPartitionsAssigned(m.assigned),
		kgo.OnPartitionsRevoked(m.dropped),
		kgo.OnPartitionsLost(m.dropped),
	)
	if s.GroupProtocol == kafkaconf.GroupConsumer {
		// KIP-848: the coordinator assigns, with the range balancer named as the server's.
		opts = append(opts, kgo.ServerSideBalancer())
	}
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return nil, &kclient.PermanentError{Err: fmt.Errorf("creating the group transact session: %w", err)}
	}
	m.sess, m.cl = sess, sess.Client()
	if err := initProducerID(ctx, m.cl, s.Txn.Timeout); err != nil {
		closeClient(m.sess, m.log, s.Txn.TxnID)
		return nil, err
	}
	return m, nil
}

// ending is Log's onEnd: franz-go is about to send EndTxn.
func (m *member) ending(commit bool) {
	if commit {
		m.commitSent.Store(true)
	}
}

// assigned runs on franz-go's goroutine when a generation's assignment is done, before any of
// its records is fetched: it notes the whole assignment for Poll, and wakes Poll's wait.
func (m *member) assigned(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
	id, generation := cl.GroupMetadata()
	m.mu.Lock()
	for t, ps := range parts {
		m.owned[t] = sortedUnion(m.owned[t], ps)
	}
	whole := make(map[string][]int32, len(m.owned))
	for t, ps := range m.owned {
		whole[t] = slices.Clone(ps)
	}
	m.notes = append(m.notes, kclient.Claims{Generation: generation, Member: id, Partitions: whole})
	wake := m.wake
	m.mu.Unlock()
	if wake != nil {
		wake()
	}
}

// Poll hands out the assignments noted, or polls for at most max records. The assignments
// noted while it polled come ahead of the records: the role drops what it gathered before a
// rebalance (it is read again from the committed offsets: the revocation that preceded the
// assignment makes the next End abort and rewind), but keeps what this poll returned, which may
// be the new generation's (before the first generation there is no revocation, and End would
// commit past dropped records).
func (m *member) Poll(ctx context.Context, max int, until time.Time) ([]kclient.Event, error) {
	m.mu.Lock()
	if len(m.notes) > 0 {
		out := m.assignedEvents(nil, m.notes)
		m.notes = nil
		m.mu.Unlock()
		return out, nil
	}
	if ctx.Err() != nil {
		m.mu.Unlock()
		return nil, nil
	}
	var pctx context.Context
	var cancel context.CancelFunc
	if !until.IsZero() {
		pctx, cancel = context.WithDeadline(ctx, until)
	} else {
		pctx, cancel = context.WithCancel(ctx)
	}
	m.wake = cancel
	m.mu.Unlock()

	fetches := m.sess.PollRecords(pctx, max)
	m.mu.Lock()
	m.wake = nil
	out := m.assignedEvents(nil, m.notes)
	m.notes = nil
	m.mu.Unlock()
	cancel()
	if fetches.IsClientClosed() {
		return out, &kclient.ReplaceError{Reason: "the franz-go client closed"}
	}
	failed := false
	fetches.EachError(func(topic string, partition int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		failed = true
		m.log.Warn("fetching the processor's input", "topic", topic, "partition", partition, "err", err)
	})
	fetches.EachRecord(func(r *kgo.Record) {
		rec := history.Record{Topic: r.Topic, Partition: r.Partition, Value: string(r.Value)}.At(r.Offset)
		if len(r.Key) > 0 {
			rec.Key = string(r.Key)
		}
		out = append(out, kclient.Event{Kind: kclient.EventRecord, Record: rec, Epoch: r.LeaderEpoch})
	})
	if failed && fetches.NumRecords() == 0 {
		// Pacing, not synchronisation: a partition whose fetch keeps failing must not spin
		// the role's loop.
		_ = kit.Sleep(ctx, 100*time.Millisecond)
	}
	return out, nil
}

// dropped runs on franz-go's goroutine when partitions are revoked or lost. The session makes
// the next End abort and rewind: the records of the current batch are read again.
func (m *member) dropped(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for t, ps := range parts {
		m.owned[t] = slices.DeleteFunc(m.owned[t], func(p int32) bool { return slices.Contains(ps, p) })
		if len(m.owned[t]) == 0 {
			delete(m.owned, t)
		}
	}
}

// assignedEvents are the assignments noted; under the eager classic protocol each came after a
// revocation of everything, which the role hears first.
func (m *member) assignedEvents(out []kclient.Event, notes []kclient.Claims) []kclient.Event {
	for _, c := range notes {
		if m.eager {
			out = append(out, kclient.Event{Kind: kclient.EventRevoked})
		}
		out = append(out, kclient.Event{Kind: kclient.EventAssigned, Claims: c})
	}
	return out
}

func (m *member) Begin() error {
	m.acked = 0
	return m.sess.Begin()
}

func (m *member) Send(out []history.Record, deadline time.Time) error {
	n, err := sendTxn(m.cl, out, deadline)
	m.acked += n
	return err
}

// AddOffsets does nothing: GroupTransactSession.End sends the offsets (TxnOffsetCommit, with
// AddOffsetsToTxn first under the protocol before KIP-890) when it commits, with the generation
// and member id of the member that polled them.
func (m *member) AddOffsets([]history.Record) error { return nil }

func (m *member) endCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), m.spec.Txn.Timeout)
}

// Commit ends the transaction with End(TryCommit). End decides for itself to abort instead —
// after a revocation, a lost assignment, a refused offset commit or a failed heartbeat — and,
// when EndTxn(commit) fails with UNKNOWN_SERVER_ERROR or TRANSACTION_ABORTABLE, retries as an
// abort, which after an attempted commit sends nothing and returns nil; so End's "not committed,
// no error" does not say whether the commit was sent. Log tells: franz-go logs "ending
// transaction" with commit=true right before it sends EndTxn(commit). Hence:
//
//   - committed: ok;
//   - the commit was not sent: fail — End aborted instead, or failed before ending;
//   - it was sent and End did not report a commit: info, as for Txn.Commit (an attempted
//     commit whose answer franz-go did not confirm, and no abort that could prove it did not
//     happen).
func (m *member) Commit() (history.Type, string) {
	if m.acked == 0 {
		aerr := m.Abort()
		return history.Fail, kclient.TxnNotSent + "no output of the transaction was acknowledged" + kclient.AbortNote(text(aerr))
	}
	ctx, cancel := m.endCtx()
	defer cancel()
	m.commitSent.Store(false)
	committed, err := m.sess.End(ctx, kgo.TryCommit)
	m.endErr = err
	sent := m.commitSent.Load()
	switch {
	case committed && err == nil:
		if !sent && !m.blind {
			m.blind = true
			m.log.Error("franz-go committed without logging that it sent EndTxn(commit): from now on, every commit that fails is recorded as unknown")
		}
		return history.OK, ""
	case sent || m.blind:
		if err != nil {
			return history.Info, "commit: " + text(err)
		}
		return history.Info, "commit: EndTxn(commit) was sent, then franz-go reported an abort without an answer that confirms it"
	case err != nil:
		return history.Fail, kclient.TxnNotSent + "the group transact session did not send the commit: " + text(err)
	}
	return history.Fail, kclient.TxnNotSent + "the group transact session aborted instead (a rebalance revoked the inputs, or their offsets could not be committed)"
}

// Abort ends the transaction with End(TryAbort): buffered outputs fail, EndTxn(abort), and the
// consumer rewinds to the committed offsets.
func (m *member) Abort() error {
	ctx, cancel := m.endCtx()
	defer cancel()
	_, err := m.sess.End(ctx, kgo.TryAbort)
	m.endErr = err
	return err
}

// Rewind: End rewound already, unless the outcome is unknown. franz-go then rewinds to the
// offsets it last saw committed, which the commit, had it happened, moved on: processing from
// there would write the same inputs' outputs a second time. A new instance fetches the group's
// offsets from the coordinator instead.
func (m *member) Rewind(t history.Type) error {
	if t == history.Info {
		return &kclient.ReplaceError{Reason: "the commit's outcome is unknown: franz-go would rewind to the offsets it last saw committed; a new instance fetches them from the coordinator"}
	}
	return nil
}

// Ready: the last End returned no error (after one, franz-go may keep the transaction open, or
// may not have rewound), and the producer ID is usable.
func (m *member) Ready() (bool, string) {
	if m.endErr != nil {
		return false, "ending the transaction failed: " + text(m.endErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.spec.Txn.Timeout)
	defer cancel()
	if _, _, err := m.cl.ProducerID(ctx); err != nil {
		return false, "producer ID: " + text(err)
	}
	return true, "ready"
}

// Close leaves the group and closes the client; a transaction still open stays open until the
// next instance initialises the transactional.id.
func (m *member) Close() { closeClient(m.sess, m.log, m.spec.Txn.TxnID) }
