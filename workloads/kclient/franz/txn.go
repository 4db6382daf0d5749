package franz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// Txn is franz-go's kclient.Txn: a kgo client with a transactional.id whose producer ID was
// initialised when it opened, fencing every earlier instance.
type Txn struct {
	spec kclient.TxnSpec
	cl   *kgo.Client
	// open: a transaction was begun and has not been ended (committed, or aborted without
	// error). franz-go keeps a transaction open after an EndTxn whose outcome it could not
	// confirm, and then refuses to begin another.
	open bool
	// acked counts the records of the current transaction that the brokers acknowledged.
	acked int
}

var _ kclient.Txn = (*Txn)(nil)

// txnOpts are the options of a transactional client for s: Kafka's settings for a transactional
// producer (acks=all, idempotence, which franz-go enables by default), records sent to the
// partition the role chose, uncompressed like sarama's, and the run's transaction-protocol cap.
func (c *Client) txnOpts(s kclient.TxnSpec, lg kgo.Logger) []kgo.Opt {
	opts := append(c.base(s.ClientID),
		kgo.TransactionalID(s.TxnID),
		kgo.TransactionTimeout(s.Timeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(s.Settings.Retries),
		kgo.ProduceRequestTimeout(s.RequestTimeout),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.WithLogger(lg),
	)
	return append(opts, c.txnCapOpts()...)
}

func (c *Client) OpenTxn(ctx context.Context, s kclient.TxnSpec) (kclient.Txn, error) {
	cl, err := kgo.NewClient(c.txnOpts(s, NewLog(s.Log, nil))...)
	if err != nil {
		return nil, &kclient.PermanentError{Err: fmt.Errorf("creating a franz-go client for transactional.id %s: %w", s.TxnID, err)}
	}
	if err = initProducerID(ctx, cl, s.Timeout); err != nil {
		closeClient(cl, s.Log, s.TxnID)
		return nil, err
	}
	return &Txn{spec: s, cl: cl}, nil
}

// initProducerID makes cl send InitProducerId for its transactional.id now. franz-go initialises
// lazily, at the first transaction; but an instance must take the id when it starts: that is
// what fences the earlier instance (a zombie's usurper, a crashed processor's successor) and
// aborts the transaction it left open.
func initProducerID(ctx context.Context, cl *kgo.Client, timeout time.Duration) error {
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, _, err := cl.ProducerID(ictx)
	return err
}

func (t *Txn) Begin() error {
	t.acked = 0
	if err := t.cl.BeginTransaction(); err != nil {
		return err
	}
	t.open = true
	return nil
}

func (t *Txn) Send(recs []history.Record, deadline time.Time) error {
	n, err := sendTxn(t.cl, recs, deadline)
	t.acked += n
	return err
}

// endCtx bounds ending a transaction. franz-go documents that cancelling EndTransaction may
// leave the client unusable; the transaction timeout is long enough that the coordinator has
// answered or aborted the transaction itself by then.
func (t *Txn) endCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), t.spec.Timeout)
}

// Commit: commitOutcome says what EndTransaction's error means.
func (t *Txn) Commit() (history.Type, string) {
	if t.acked == 0 {
		// franz-go's EndTransaction(TryCommit) returns nil without committing anything when
		// no record was acknowledged (under KIP-890 it even aborts): never read that as a
		// commit. The roles commit only transactions whose records were all acknowledged.
		aerr := t.Abort()
		return history.Fail, kclient.TxnNotSent + "no record of the transaction was acknowledged" + kclient.AbortNote(text(aerr))
	}
	ctx, cancel := t.endCtx()
	defer cancel()
	// The records were all acknowledged (Send), so nothing is buffered; EndTransaction's
	// contract still asks for a flush first.
	if err := t.cl.Flush(ctx); err != nil {
		aerr := t.Abort()
		return history.Fail, kclient.TxnNotSent + "flushing: " + text(err) + kclient.AbortNote(text(aerr))
	}
	typ, txt := commitOutcome(t.cl.EndTransaction(ctx, kgo.TryCommit))
	if typ == history.OK {
		t.open = false
		return typ, txt
	}
	// After a commit that was not attempted, this aborts the transaction. After an attempted
	// one, franz-go does not send EndTxn(abort): it re-initialises the producer ID, which
	// bumps the epoch and so aborts the transaction if the commit had not been prepared, and
	// tells nothing either way. Either way it readies the client for another transaction.
	if aerr := t.Abort(); aerr != nil {
		txt += kclient.AbortNote(text(aerr))
	}
	return typ, txt
}

// commitOutcome maps what franz-go's EndTransaction(ctx, TryCommit) returned to the history's
// outcome, by the rules at kclient.TxnAborted (franz-go v1.22.3, pkg/kgo/txn.go):
//
//   - nil: committed. EndTransaction also returns nil when it sent nothing (no transaction, or
//     no partition added, which under KIP-890 it even turns into an abort); Txn.Commit and the
//     processor commit only transactions with acknowledged records, which are added.
//   - kerr.OperationNotAttempted: fail. EndTransaction returns it before any request, when the
//     producer ID has failed ("If the producer ID has an error and you are trying to commit,
//     this will return with kerr.OperationNotAttempted"); the broker never sends this code
//     for EndTxn. The transaction stays open in the client until an abort.
//   - an error wrapping both kerr.TransactionAbortable and kerr.UnknownTopicID: fail.
//     errRecreatedInTxn, returned before any request when a topic of the transaction was
//     deleted and recreated; the transaction stays open.
//   - anything else: info. EndTxn(commit) was sent — franz-go's request layer may have sent
//     it more than once, across retries and coordinator moves — and its answer was lost,
//     refused or unknown: PRODUCER_FENCED or CONCURRENT_TRANSACTIONS may answer a retry of a
//     commit that was prepared. franz-go marks the outcome unconfirmed ("If a commit attempt's
//     outcome is unconfirmed ... retry with TryAbort: the retry aborts by reloading the
//     producer ID"), and that abort sends no EndTxn(abort), so unlike sarama's, no abort can
//     be confirmed afterwards to prove the commit did not happen.
func commitOutcome(err error) (history.Type, string) {
	switch {
	case err == nil:
		return history.OK, ""
	case errors.Is(err, kerr.OperationNotAttempted):
		return history.Fail, kclient.TxnNotSent + "franz-go sent no EndTxn: its producer ID had failed (" + text(err) + ")"
	case errors.Is(err, kerr.TransactionAbortable) && errors.Is(err, kerr.UnknownTopicID):
		return history.Fail, kclient.TxnNotSent + "franz-go refused to commit: " + text(err)
	}
	return history.Info, "commit: " + text(err)
}

// Abort: the records still buffered fail, then EndTxn(abort) (or, when the producer ID failed,
// franz-go's re-initialisation of it, which aborts as well).
func (t *Txn) Abort() error {
	ctx, cancel := t.endCtx()
	defer cancel()
	if err := t.cl.AbortBufferedRecords(ctx); err != nil {
		return fmt.Errorf("failing the buffered records: %w", err)
	}
	if err := t.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return err
	}
	t.open = false
	return nil
}

// Ready: no transaction left open, and a usable producer ID. franz-go loads the ID here if it
// must be re-initialised (as BeginTransaction would); an ID failed for good (fenced) is refused.
func (t *Txn) Ready() (bool, string) {
	if t.open {
		return false, "a transaction is still open: ending it failed"
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.spec.Timeout)
	defer cancel()
	if _, _, err := t.cl.ProducerID(ctx); err != nil {
		return false, "producer ID: " + text(err)
	}
	return true, "ready"
}

func (t *Txn) Close() { closeClient(t.cl, t.spec.Log, t.spec.TxnID) }

// closeClient closes cl without ending its transaction, waiting up to 10 s (as sarama's close).
func closeClient(cl interface{ Close() }, log *slog.Logger, txnID string) {
	kit.CloseWithin(log.With("txn_id", txnID), "franz-go client", 10*time.Second, cl.Close)
}

// sendTxn produces recs in cl's current transaction and waits until each is acknowledged or failed,
// or until deadline; it fills in the partitions and offsets of acknowledged records, and returns
// how many were acknowledged and the first error.
func sendTxn(cl *kgo.Client, recs []history.Record, deadline time.Time) (int, error) {
	type result struct {
		idx int
		rec *kgo.Record
		err error
	}
	// Promises are called serially by franz-go and must not block: the channel holds them all.
	// Each send has its own, so a late answer cannot be taken for a later transaction's.
	results := make(chan result, len(recs))
	// Records still buffered at the deadline fail with it (franz-go cancels a record only
	// while no request carrying it is in flight); the transaction is aborted then anyway.
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for i, r := range recs {
		kr := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Value: []byte(r.Value)}
		if r.Key != "" {
			kr.Key = []byte(r.Key)
		}
		cl.Produce(ctx, kr, func(kr *kgo.Record, err error) { results <- result{idx: i, rec: kr, err: err} })
	}
	var first error
	acked := 0
	for left := len(recs); left > 0; left-- {
		select {
		case res := <-results:
			if res.err != nil {
				if first == nil {
					first = res.err
				}
				continue
			}
			acked++
			recs[res.idx].Partition = res.rec.Partition
			recs[res.idx] = recs[res.idx].At(res.rec.Offset)
		case <-ctx.Done():
			if first == nil {
				first = fmt.Errorf("%d of %d records unanswered after the delivery timeout", left, len(recs))
			}
			return acked, first
		}
	}
	return acked, first
}
