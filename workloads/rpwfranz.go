package workloads

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
	kfranz "github.com/verity-kafka/verity/workloads/kclient/franz"
)

// franzMember is the franz-go adapter of rpwMember: one kgo.GroupTransactSession, which is both
// the group member and the transactional producer. Its End commits the offsets of every record
// polled since the previous End (TxnOffsetCommit with the member's generation and member id,
// KIP-447) and then ends the transaction; when it does not commit, it rewinds the consumer to the
// offsets it knows committed, by itself.
type franzMember struct {
	w    *processor
	sess *kgo.GroupTransactSession
	cl   *kgo.Client

	// Rebalances, noted by franz-go's callback on its own goroutine and recorded by the
	// goroutine that runs the processor (one op in flight per process).
	mu    sync.Mutex
	notes []map[string]any
	// wake ends the poll under way, so that a rebalance is recorded when it happens rather
	// than when the next record arrives.
	wake context.CancelFunc

	// The batch being gathered, and when it is due (BatchWait after its first record).
	batch []history.Record
	due   time.Time

	// acked counts the outputs of the current transaction that the brokers acknowledged.
	acked int
	// commitSent: franz-go logged, during the current End, that it was sending EndTxn with
	// commit (see commit).
	commitSent atomic.Bool
	// blind: an End committed although commitSent was not seen, so franz-go no longer logs
	// what commit relies on; every commit that then fails is taken as unknown.
	blind bool
	// endErr is the last End's error: franz-go may have left the transaction open, or not
	// rewound; the instance is then replaced.
	endErr error
}

// openFranzMember opens the group transact session and initialises its transactional.id,
// retrying the initialisation until ctx ends (as openTxnProducer).
func openFranzMember(ctx context.Context, w *processor) (*franzMember, error) {
	m, err := initWithRetry(ctx, w.log, w.cfg.TxnID, func() (*franzMember, error) {
		m, err := newFranzMember(w)
		if err != nil {
			// A configuration franz-go refuses: no retry changes it.
			return nil, &kclient.PermanentError{Err: fmt.Errorf("creating the group transact session: %w", err)}
		}
		if err = kfranz.InitProducerID(ctx, m.cl, w.cfg.Timeout); err != nil {
			kfranz.CloseClient(m.sess, w.log, w.cfg.TxnID)
			return nil, err
		}
		return m, nil
	})
	if err != nil {
		return nil, fmt.Errorf("processor %d: %w", w.p, err)
	}
	return m, nil
}

// newFranzMember creates the group transact session: the group member joins in the background.
func newFranzMember(w *processor) (*franzMember, error) {
	m := &franzMember{w: w}
	c := w.cfg
	spec := txnSpec(w.env, w.p, "rpw", c.TxnID, c.TxnClientConfig, w.log)
	opts := append(kfranz.New(w.env.Franz, w.env.TxnProtocol).TxnOpts(spec, kfranz.NewLog(w.log, m.ending)),
		kgo.ConsumerGroup(c.Group),
		kgo.ConsumeTopics(c.Input),
		// The offsets are committed only in End (franz-go disables auto-commit for a
		// transactional client); the group's offsets are fetched with require_stable, which
		// franz-go always sets, waiting out a pending transactional offset commit (KIP-447).
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Eager, like sarama's range strategy: every generation revokes and hands out the
		// whole assignment, so that OnPartitionsAssigned sees each generation's complete
		// claims for the assign op. (GroupTransactSession swallows a second revocation
		// before End, so a cooperative member could not keep its claims from the callbacks.)
		kgo.Balancers(kgo.RangeBalancer()),
		// sarama's session timeout, so that both clients' processors rebalance alike.
		kgo.SessionTimeout(10*time.Second),
		kgo.OnPartitionsAssigned(m.assigned),
	)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return nil, err
	}
	m.sess, m.cl = sess, sess.Client()
	return m, nil
}

// ending is kfranz.Log's onEnd: franz-go is about to send EndTxn.
func (m *franzMember) ending(commit bool) {
	if commit {
		m.commitSent.Store(true)
	}
}

// assigned runs on franz-go's goroutine when a generation's assignment is done, before any of
// its records is fetched: it notes the rebalance for next, and wakes next's poll.
func (m *franzMember) assigned(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
	member, generation := cl.GroupMetadata()
	note := claims{generation: generation, member: member, partitions: parts}.payload(m.w.cfg.Group, history.ReadCommitted)
	m.mu.Lock()
	m.notes = append(m.notes, note)
	wake := m.wake
	m.mu.Unlock()
	if wake != nil {
		wake()
	}
}

func (m *franzMember) next(ctx context.Context) (rpwEvent, error) {
	for {
		m.mu.Lock()
		if len(m.notes) > 0 {
			note := m.notes[0]
			m.notes = m.notes[1:]
			m.mu.Unlock()
			m.w.stats.Sessions++
			return rpwEvent{assign: note}, nil
		}
		if ctx.Err() != nil {
			m.mu.Unlock()
			return rpwEvent{}, nil
		}
		if n := len(m.batch); n > 0 && (n >= m.w.cfg.BatchRecords || !time.Now().Before(m.due)) {
			m.mu.Unlock()
			in := m.batch
			m.batch = nil
			return rpwEvent{input: in}, nil
		}
		var pctx context.Context
		var cancel context.CancelFunc
		if len(m.batch) > 0 {
			pctx, cancel = context.WithDeadline(ctx, m.due)
		} else {
			pctx, cancel = context.WithCancel(ctx)
		}
		m.wake = cancel
		m.mu.Unlock()

		// At most what the batch lacks: every record polled is then in the batch, and End
		// commits exactly the offsets after the batch.
		fetches := m.sess.PollRecords(pctx, m.w.cfg.BatchRecords-len(m.batch))
		m.mu.Lock()
		m.wake = nil
		rebalanced := len(m.notes) > 0
		m.mu.Unlock()
		cancel()
		if rebalanced {
			// Like a sarama session's Cleanup: the batch gathered before the rebalance is
			// not processed (it is read again from the committed offsets: the revocation
			// that preceded this assignment makes the next End abort and rewind). What
			// this poll returned may be the new generation's and is kept: before the first
			// generation there is no revocation, and End would commit past dropped records.
			m.batch = nil
		}
		if fetches.IsClientClosed() {
			return rpwEvent{}, errCrash{reason: "the franz-go client closed"}
		}
		failed := false
		fetches.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			failed = true
			m.w.log.Warn("fetching the processor's input", "topic", topic, "partition", partition, "err", err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if len(m.batch) == 0 {
				m.due = time.Now().Add(m.w.cfg.BatchWait)
			}
			rec := history.Record{Topic: r.Topic, Partition: r.Partition, Value: string(r.Value)}.At(r.Offset)
			if len(r.Key) > 0 {
				rec.Key = string(r.Key)
			}
			m.batch = append(m.batch, rec)
		})
		if failed && fetches.NumRecords() == 0 {
			// Pacing, not synchronisation: a partition whose fetch keeps failing must not
			// spin this loop.
			_ = kit.Sleep(ctx, 100*time.Millisecond)
		}
	}
}

func (m *franzMember) Begin() error {
	m.acked = 0
	return m.sess.Begin()
}

func (m *franzMember) Send(out []history.Record, deadline time.Time) error {
	n, err := kfranz.Send(m.cl, out, deadline)
	m.acked += n
	return err
}

// addOffsets does nothing: GroupTransactSession.End sends the offsets (TxnOffsetCommit, with
// AddOffsetsToTxn first under the protocol before KIP-890) when it commits, with the
// generation and member id of the member that polled them.
func (m *franzMember) addOffsets() error { return nil }

func (m *franzMember) endCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), m.w.cfg.Timeout)
}

// commit ends the transaction with End(TryCommit). End decides for itself to abort instead —
// after a revocation, a lost assignment, a refused offset commit or a failed heartbeat — and,
// when EndTxn(commit) fails with UNKNOWN_SERVER_ERROR or TRANSACTION_ABORTABLE, retries as an
// abort, which after an attempted commit sends nothing and returns nil; so End's "not committed,
// no error" does not say whether the commit was sent. kfranz.Log tells: franz-go logs "ending
// transaction" with commit=true right before it sends EndTxn(commit). Hence:
//
//   - committed: ok;
//   - the commit was not sent: fail — End aborted instead, or failed before ending;
//   - it was sent and End did not report a commit: info, as for the franz-go Txn's Commit (an
//     attempted commit whose answer franz-go did not confirm, and no abort that could prove
//     it did not happen).
func (m *franzMember) Commit() (history.Type, string) {
	if m.acked == 0 {
		aerr := m.Abort()
		return history.Fail, kclient.TxnNotSent + "no output of the transaction was acknowledged" + kclient.AbortNote(ErrorText(aerr))
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
			m.w.log.Error("franz-go committed without logging that it sent EndTxn(commit): from now on, every commit that fails is recorded as unknown")
		}
		return history.OK, ""
	case sent || m.blind:
		if err != nil {
			return history.Info, "commit: " + ErrorText(err)
		}
		return history.Info, "commit: EndTxn(commit) was sent, then franz-go reported an abort without an answer that confirms it"
	case err != nil:
		return history.Fail, kclient.TxnNotSent + "the group transact session did not send the commit: " + ErrorText(err)
	}
	return history.Fail, kclient.TxnNotSent + "the group transact session aborted instead (a rebalance revoked the inputs, or their offsets could not be committed)"
}

// abort ends the transaction with End(TryAbort): buffered outputs fail, EndTxn(abort), and the
// consumer rewinds to the committed offsets.
func (m *franzMember) Abort() error {
	ctx, cancel := m.endCtx()
	defer cancel()
	_, err := m.sess.End(ctx, kgo.TryAbort)
	m.endErr = err
	return err
}

// rewind: End rewound already, unless the outcome is unknown. franz-go then rewinds to the
// offsets it last saw committed, which the commit, had it happened, moved on: processing from
// there would write the same inputs' outputs a second time. A new instance fetches the group's
// offsets from the coordinator instead.
func (m *franzMember) rewind(t history.Type) error {
	if t == history.Info {
		return errCrash{reason: "the commit's outcome is unknown: franz-go would rewind to the offsets it last saw committed; a new instance fetches them from the coordinator"}
	}
	return nil
}

// Ready: the last End returned no error (after one, franz-go may keep the transaction open, or
// may not have rewound), and the producer ID is usable.
func (m *franzMember) Ready() (bool, string) {
	if m.endErr != nil {
		return false, "ending the transaction failed: " + ErrorText(m.endErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.w.cfg.Timeout)
	defer cancel()
	if _, _, err := m.cl.ProducerID(ctx); err != nil {
		return false, "producer ID: " + ErrorText(err)
	}
	return true, "ready"
}

// close leaves the group and closes the client; a transaction still open stays open until the
// next instance initialises the transactional.id.
func (m *franzMember) Close() { kfranz.CloseClient(m.sess, m.w.log, m.w.cfg.TxnID) }
