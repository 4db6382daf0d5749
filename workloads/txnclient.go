package workloads

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// TxnClientConfig is what a transactional producer instance needs besides its transactional.id.
type TxnClientConfig struct {
	// Timeout is transaction.timeout.ms: how long the coordinator lets a transaction stay open
	// before aborting it itself; default 30s (Kafka's: 60s), so that a crashed instance's open
	// transaction stalls read_committed readers for less time.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Retries is the client's retries for the records (0: the client's default, see
	// kafkaconf.Clients; idempotence needs >= 1).
	Retries int `json:"retries,omitempty"`
	// RequestTimeout is Producer.Timeout, the leader's wait for the ISR; default 10s.
	RequestTimeout time.Duration `json:"request_timeout,omitempty"`
	// DeliveryTimeout bounds the wait for a transaction's records to be acknowledged; default
	// 30s. A record unanswered by then fails the transaction (it is aborted, not committed).
	DeliveryTimeout time.Duration `json:"delivery_timeout,omitempty"`
}

// transactional are the effective settings of a transactional producer with c: what Kafka
// forces (acks=all, idempotence) within client's limits.
func transactional(client kafkaconf.Client, c TxnClientConfig) kafkaconf.Producer {
	pc := kafkaconf.ProducerConfig{Transactional: new(true)}
	if c.Retries > 0 {
		pc.Retries = new(c.Retries)
	}
	return kafkaconf.ResolveProducer(pc, client).Producer
}

func (c TxnClientConfig) withDefaults() TxnClientConfig {
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.DeliveryTimeout <= 0 {
		c.DeliveryTimeout = 30 * time.Second
	}
	return c
}

// txnProducer is one instance of a transactional producer: what the transactional workload (and
// the processor's output side) needs of a client, whichever it is. An instance is opened for a
// transactional.id by openTxnProducer, which initialises the id and so fences every earlier
// instance of it (their open transaction is aborted, their later requests refused).
type txnProducer interface {
	// begin starts a transaction.
	begin() error
	// send writes recs in the current transaction and waits until each is acknowledged or
	// failed, or until deadline. It fills in the partitions and offsets of acknowledged
	// records and returns the first error (a record still unanswered at the deadline is one).
	send(recs []history.Record, deadline time.Time) error
	// commit ends the current transaction with a commit, and says what is known of its
	// outcome by the rules at kclient.TxnAborted in errors.go: ok, fail or info, with the error text.
	commit() (history.Type, string)
	// abort ends the current transaction with an abort.
	abort() error
	// ready says whether the instance can begin another transaction; otherwise it must be
	// replaced by a new one.
	ready() bool
	// status describes the instance's transactional state, for the reason of a restart.
	status() string
	// close shuts the instance down without ending its transaction: an open one is aborted by
	// the next instance's initialisation, or by the coordinator after the transaction timeout.
	close()
}

// openTxnProducer opens an instance of the run's client for txnID as process p, retrying until
// ctx ends: initialising may fail while the coordinator moves or while an earlier instance's
// transaction is being completed.
func openTxnProducer(ctx context.Context, env Env, p int, role, txnID string, c TxnClientConfig, log *slog.Logger) (txnProducer, error) {
	a, err := adaptersOf(env.Client)
	if err != nil {
		return nil, err
	}
	return a.txn(ctx, env, p, role, txnID, c, log)
}

// txnClient is the sarama adapter of txnProducer: a sarama client and async producer that called
// InitProducerId for its transactional.id (which fences every earlier instance).
type txnClient struct {
	id      string
	client  sarama.Client
	prod    sarama.AsyncProducer
	results chan txnResult
	done    chan struct{} // closed when the forwarder has seen sarama close its channels
	seq     int           // current transaction's number; results of earlier ones are stale
	log     *slog.Logger
}

type txnResult struct {
	msg *sarama.ProducerMessage
	err error
}

// txnTag rides in a record's Metadata: which transaction and which record of it.
type txnTag struct{ seq, idx int }

// openTxnClient creates an instance for txnID, retrying until ctx ends (initWithRetry).
func openTxnClient(ctx context.Context, env Env, p int, role, txnID string, c TxnClientConfig, log *slog.Logger) (*txnClient, error) {
	return initWithRetry(ctx, log, txnID, func() (*txnClient, bool, error) {
		tc, err := openTxnClientOnce(env, p, role, txnID, c, log)
		return tc, true, err
	})
}

// initWithRetry calls open until it succeeds, fails for good (retry false) or ctx ends:
// initialising a transactional id may fail while the coordinator moves or a previous
// instance's transaction is being completed.
func initWithRetry[T any](ctx context.Context, log *slog.Logger, txnID string, open func() (_ T, retry bool, _ error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, retry, err := open()
		if err == nil || !retry {
			return v, err
		}
		log.Warn("initialising the transactional producer failed; retrying", "txn_id", txnID, "err", err)
		// Backoff before asking the coordinator again, bounded so a healed cluster is
		// noticed quickly.
		if sleepCtx(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 5*time.Second)) != nil {
			var zero T
			return zero, fmt.Errorf("initialising transactional.id %s: %w (last error: %v)", txnID, ctx.Err(), err)
		}
	}
}

func openTxnClientOnce(env Env, p int, role, txnID string, c TxnClientConfig, log *slog.Logger) (*txnClient, error) {
	cfg := env.Sarama(clientID(p, role))
	set := transactional(env.kafka(), c)
	cfg.Producer.Idempotent = set.Idempotent
	cfg.Producer.RequiredAcks = requiredAcks(set.Acks)
	cfg.Net.MaxOpenRequests = set.MaxInFlight
	cfg.Producer.Retry.Max = set.Retries
	cfg.Producer.Timeout = c.RequestTimeout
	ensureReadTimeout(cfg)
	cfg.Producer.Transaction.ID = txnID
	cfg.Producer.Transaction.Timeout = c.Timeout
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	client, err := sarama.NewClient(env.Brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %v: %w", env.Brokers, err)
	}
	prod, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("initialising transactional.id %s: %w", txnID, err)
	}
	tc := &txnClient{id: txnID, client: client, prod: prod, results: make(chan txnResult, 1024),
		done: make(chan struct{}), log: log}
	// sarama's result channels are unbuffered and CommitTxn/AbortTxn wait for every record in
	// flight, so something must read them at all times, not only while the workload waits.
	go tc.forward()
	return tc, nil
}

func (tc *txnClient) forward() {
	defer close(tc.done)
	succ, errs := tc.prod.Successes(), tc.prod.Errors()
	for succ != nil || errs != nil {
		select {
		case m, ok := <-succ:
			if !ok {
				succ = nil
				continue
			}
			tc.results <- txnResult{msg: m}
		case pe, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			tc.results <- txnResult{msg: pe.Msg, err: pe.Err}
		}
	}
}

// begin starts a transaction.
func (tc *txnClient) begin() error {
	tc.seq++
	return tc.prod.BeginTxn()
}

// send hands recs to sarama and waits until each is acknowledged or failed, or until deadline.
// It fills in the offsets of acknowledged records and returns the first error (a record still
// unanswered at the deadline is an error too).
func (tc *txnClient) send(recs []history.Record, deadline time.Time) error {
	for i := range recs {
		r := recs[i]
		msg := &sarama.ProducerMessage{Topic: r.Topic, Partition: r.Partition,
			Value: sarama.StringEncoder(r.Value), Metadata: txnTag{tc.seq, i}}
		if r.Key != "" {
			msg.Key = sarama.StringEncoder(r.Key)
		}
		tc.prod.Input() <- msg
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var first error
	for left := len(recs); left > 0; {
		select {
		case res := <-tc.results:
			tag, ok := res.msg.Metadata.(txnTag)
			if !ok || tag.seq != tc.seq || tag.idx >= len(recs) {
				continue // a late answer from an earlier transaction
			}
			left--
			if res.err != nil {
				if first == nil {
					first = res.err
				}
				continue
			}
			recs[tag.idx].Partition = res.msg.Partition
			recs[tag.idx] = recs[tag.idx].At(res.msg.Offset)
		case <-timer.C:
			if first == nil {
				first = fmt.Errorf("%d of %d records unanswered after the delivery timeout", left, len(recs))
			}
			return first
		}
	}
	return first
}

// abort aborts the current transaction.
func (tc *txnClient) abort() error { return tc.prod.AbortTxn() }

// commit commits the current transaction and says what is known of the outcome, by the rules
// at kclient.TxnAborted in errors.go: ok, fail (never requested, or aborted after a failed commit) or
// info (a failed commit that may have been prepared).
func (tc *txnClient) commit() (history.Type, string) {
	if st := tc.prod.TxnStatus(); st&sarama.ProducerTxnFlagInError != 0 {
		// In this state sarama's CommitTxn returns the earlier error without sending
		// EndTxn: the coordinator was never asked to commit.
		aerr := tc.abort()
		return history.Fail, kclient.TxnNotSent + "the producer was in error (" + st.String() + ")" + abortNote(aerr)
	}
	err := tc.prod.CommitTxn()
	if err == nil {
		return history.OK, ""
	}
	// The coordinator accepts EndTxn(abort) only for a transaction that is still open (or
	// already aborting): once a commit is prepared it answers INVALID_TXN_STATE. A confirmed
	// abort therefore proves that the commit did not happen.
	if aerr := tc.abort(); aerr == nil {
		return history.Fail, kclient.TxnAbortConfirmed + ErrorText(err)
	}
	return history.Info, "commit: " + ErrorText(err)
}

func abortNote(err error) string {
	if err == nil {
		return ""
	}
	return "; abort: " + ErrorText(err)
}

// ready says whether the instance can begin another transaction; otherwise it must be replaced.
func (tc *txnClient) ready() bool {
	st := tc.prod.TxnStatus()
	return st&sarama.ProducerTxnFlagReady != 0 && st&sarama.ProducerTxnFlagInError == 0
}

// status is sarama's transaction status flags.
func (tc *txnClient) status() string { return tc.prod.TxnStatus().String() }

// close shuts the instance down without ending its transaction (an open one is aborted by the
// next instance's InitProducerId, or by the coordinator after the transaction timeout). It
// waits up to 10 s for sarama, then leaves it to finish in the background.
func (tc *txnClient) close() {
	tc.prod.AsyncClose()
	go func() {
		// Keep reading results so that sarama can finish closing.
		for {
			select {
			case <-tc.results:
			case <-tc.done:
				for len(tc.results) > 0 {
					<-tc.results
				}
				_ = tc.client.Close()
				return
			}
		}
	}()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-tc.done:
	case <-t.C:
		tc.log.Warn("transactional producer still closing after 10s; left to finish in the background", "txn_id", tc.id)
	}
}
