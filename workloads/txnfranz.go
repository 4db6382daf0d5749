package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// franzTxn is the franz-go adapter of txnProducer: a kgo client with a transactional.id whose
// producer ID was initialised when it opened, fencing every earlier instance. Only the goroutine
// that owns the instance calls its methods.
type franzTxn struct {
	id  string
	cl  *kgo.Client
	c   TxnClientConfig
	log *slog.Logger
	// open: a transaction was begun and has not been ended (committed, or aborted without
	// error). franz-go keeps a transaction open after an EndTxn whose outcome it could not
	// confirm, and then refuses to begin another.
	open bool
	// acked counts the records of the current transaction that the brokers acknowledged.
	acked int
	// why says why ready last answered false.
	why string
}

// franzTxnOpts are the options of a franz-go transactional client for txnID: Kafka's settings
// for a transactional producer (acks=all, idempotence, which franz-go enables by default),
// records sent to the partition the workload chose, uncompressed like sarama's, and the run's
// transaction-protocol cap.
func franzTxnOpts(env Env, p int, role, txnID string, c TxnClientConfig, lg kgo.Logger) []kgo.Opt {
	set := transactional(env.kafka(), c)
	opts := append(env.Franz(clientID(p, role)),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(c.Timeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(set.Retries),
		kgo.ProduceRequestTimeout(c.RequestTimeout),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.WithLogger(lg),
	)
	return append(opts, franzTxnCap(env.TxnProtocol)...)
}

// openFranzTxn opens a franz-go instance for txnID, retrying the initialisation until ctx ends
// (as openTxnClient).
func openFranzTxn(ctx context.Context, env Env, p int, role, txnID string, c TxnClientConfig, log *slog.Logger) (*franzTxn, error) {
	return initWithRetry(ctx, log, txnID, func() (*franzTxn, bool, error) {
		cl, err := kgo.NewClient(franzTxnOpts(env, p, role, txnID, c, newFranzLog(log, nil))...)
		if err != nil {
			// A configuration franz-go refuses: no retry changes it.
			return nil, false, fmt.Errorf("creating a franz-go client for transactional.id %s: %w", txnID, err)
		}
		if err = franzInitProducerID(ctx, cl, c.Timeout); err != nil {
			closeFranz(cl, log, txnID)
			return nil, true, err
		}
		return &franzTxn{id: txnID, cl: cl, c: c, log: log}, true, nil
	})
}

// franzInitProducerID makes cl send InitProducerId for its transactional.id now. franz-go
// initialises lazily, at the first transaction; but an instance must take the id when it starts:
// that is what fences the earlier instance (a zombie's usurper, a crashed processor's successor)
// and aborts the transaction it left open.
func franzInitProducerID(ctx context.Context, cl *kgo.Client, timeout time.Duration) error {
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, _, err := cl.ProducerID(ictx)
	return err
}

func (f *franzTxn) begin() error {
	f.acked = 0
	if err := f.cl.BeginTransaction(); err != nil {
		return err
	}
	f.open = true
	return nil
}

func (f *franzTxn) send(recs []history.Record, deadline time.Time) error {
	n, err := franzSend(f.cl, recs, deadline)
	f.acked += n
	return err
}

// endCtx bounds ending a transaction. franz-go documents that cancelling EndTransaction may
// leave the client unusable; the transaction timeout is long enough that the coordinator has
// answered or aborted the transaction itself by then.
func (f *franzTxn) endCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), f.c.Timeout)
}

// commit commits the current transaction; franzCommitOutcome says what its error means.
func (f *franzTxn) commit() (history.Type, string) {
	if f.acked == 0 {
		// franz-go's EndTransaction(TryCommit) returns nil without committing anything when
		// no record was acknowledged (under KIP-890 it even aborts): never read that as a
		// commit. The workloads commit only transactions whose records were all acknowledged.
		aerr := f.abort()
		return history.Fail, kclient.TxnNotSent + "no record of the transaction was acknowledged" + abortNote(aerr)
	}
	ctx, cancel := f.endCtx()
	defer cancel()
	// The records were all acknowledged (send), so nothing is buffered; EndTransaction's
	// contract still asks for a flush first.
	if err := f.cl.Flush(ctx); err != nil {
		aerr := f.abort()
		return history.Fail, kclient.TxnNotSent + "flushing: " + ErrorText(err) + abortNote(aerr)
	}
	t, text := franzCommitOutcome(f.cl.EndTransaction(ctx, kgo.TryCommit))
	if t == history.OK {
		f.open = false
		return t, text
	}
	// After a commit that was not attempted, this aborts the transaction. After an attempted
	// one, franz-go does not send EndTxn(abort): it re-initialises the producer ID, which
	// bumps the epoch and so aborts the transaction if the commit had not been prepared, and
	// tells nothing either way. Either way it readies the client for another transaction.
	if aerr := f.abort(); aerr != nil {
		text += abortNote(aerr)
	}
	return t, text
}

// franzCommitOutcome maps what franz-go's EndTransaction(ctx, TryCommit) returned to the
// history's outcome, by the rules at kclient.TxnAborted (franz-go v1.22.3, pkg/kgo/txn.go):
//
//   - nil: committed. EndTransaction also returns nil when it sent nothing (no transaction, or
//     no partition added, which under KIP-890 it even turns into an abort); franzTxn.commit and
//     the processor commit only transactions with acknowledged records, which are added.
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
func franzCommitOutcome(err error) (history.Type, string) {
	switch {
	case err == nil:
		return history.OK, ""
	case errors.Is(err, kerr.OperationNotAttempted):
		return history.Fail, kclient.TxnNotSent + "franz-go sent no EndTxn: its producer ID had failed (" + ErrorText(err) + ")"
	case errors.Is(err, kerr.TransactionAbortable) && errors.Is(err, kerr.UnknownTopicID):
		return history.Fail, kclient.TxnNotSent + "franz-go refused to commit: " + ErrorText(err)
	}
	return history.Info, "commit: " + ErrorText(err)
}

// abort aborts the current transaction: the records still buffered fail, then EndTxn(abort)
// (or, when the producer ID failed, franz-go's re-initialisation of it, which aborts as well).
func (f *franzTxn) abort() error {
	ctx, cancel := f.endCtx()
	defer cancel()
	if err := f.cl.AbortBufferedRecords(ctx); err != nil {
		return fmt.Errorf("failing the buffered records: %w", err)
	}
	if err := f.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return err
	}
	f.open = false
	return nil
}

// ready: no transaction left open, and a usable producer ID. franz-go loads the ID here if it
// must be re-initialised (as BeginTransaction would); an ID failed for good (fenced) is refused.
func (f *franzTxn) ready() bool {
	if f.open {
		f.why = "a transaction is still open: ending it failed"
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.c.Timeout)
	defer cancel()
	if _, _, err := f.cl.ProducerID(ctx); err != nil {
		f.why = "producer ID: " + ErrorText(err)
		return false
	}
	f.why = ""
	return true
}

func (f *franzTxn) status() string {
	if f.why == "" {
		return "ready"
	}
	return f.why
}

func (f *franzTxn) close() { closeFranz(f.cl, f.log, f.id) }

// closeFranz closes cl without ending its transaction, waiting up to 10 s (as sarama's close).
func closeFranz(cl interface{ Close() }, log *slog.Logger, txnID string) {
	closeProducerWithin(log.With("txn_id", txnID), "franz-go client", 10*time.Second, cl.Close)
}

// franzSend produces recs in cl's current transaction and waits until each is acknowledged or
// failed, or until deadline; it fills in the partitions and offsets of acknowledged records,
// and returns how many were acknowledged and the first error.
func franzSend(cl *kgo.Client, recs []history.Record, deadline time.Time) (int, error) {
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

// txnFranzPartitions asks the cluster, with a franz-go client of its own, how many partitions
// each topic has.
func txnFranzPartitions(ctx context.Context, env Env, id string, topics []string) (map[string]int32, error) {
	cl, err := kgo.NewClient(env.Franz(id)...)
	if err != nil {
		return nil, fmt.Errorf("creating a franz-go client: %w", err)
	}
	defer cl.Close()
	return franzPartitionCounts(ctx, cl, topics)
}
