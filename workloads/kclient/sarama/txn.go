package sarama

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// Txn is sarama's kclient.Txn: a sarama client and async producer that called InitProducerId for
// its transactional.id (which fences every earlier instance).
type Txn struct {
	spec    kclient.TxnSpec
	client  sarama.Client
	prod    sarama.AsyncProducer
	results chan txnResult
	done    chan struct{} // closed when the forwarder has seen sarama close its channels
	seq     int           // current transaction's number; results of earlier ones are stale
}

var _ kclient.Txn = (*Txn)(nil)

type txnResult struct {
	msg *sarama.ProducerMessage
	err error
}

// txnTag rides in a record's Metadata: which transaction and which record of it.
type txnTag struct{ seq, idx int }

func (c *Client) OpenTxn(_ context.Context, s kclient.TxnSpec) (kclient.Txn, error) {
	t, err := c.openTxn(s)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// openTxn is OpenTxn as sarama's own type, for the member, which commits offsets through
// its producer.
func (c *Client) openTxn(s kclient.TxnSpec) (*Txn, error) {
	cfg := c.base(s.ClientID)
	cfg.Producer.Idempotent = s.Settings.Idempotent
	cfg.Producer.RequiredAcks = requiredAcks(s.Settings.Acks)
	cfg.Net.MaxOpenRequests = s.Settings.MaxInFlight
	cfg.Producer.Retry.Max = s.Settings.Retries
	cfg.Producer.Timeout = s.RequestTimeout
	EnsureReadTimeout(cfg)
	cfg.Producer.Transaction.ID = s.TxnID
	cfg.Producer.Transaction.Timeout = s.Timeout
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	if err := cfg.Validate(); err != nil {
		return nil, &kclient.PermanentError{Err: fmt.Errorf("configuring sarama for transactional.id %s: %w", s.TxnID, err)}
	}
	client, err := sarama.NewClient(c.brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %v: %w", c.brokers, err)
	}
	prod, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("initialising transactional.id %s: %w", s.TxnID, err)
	}
	t := &Txn{spec: s, client: client, prod: prod, results: make(chan txnResult, 1024), done: make(chan struct{})}
	// sarama's result channels are unbuffered and CommitTxn/AbortTxn wait for every record in
	// flight, so something must read them at all times, not only while the role waits.
	go t.forward()
	return t, nil
}

func (t *Txn) forward() {
	defer close(t.done)
	succ, errs := t.prod.Successes(), t.prod.Errors()
	for succ != nil || errs != nil {
		select {
		case m, ok := <-succ:
			if !ok {
				succ = nil
				continue
			}
			t.results <- txnResult{msg: m}
		case pe, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			t.results <- txnResult{msg: pe.Msg, err: pe.Err}
		}
	}
}

func (t *Txn) Begin() error {
	t.seq++
	return t.prod.BeginTxn()
}

func (t *Txn) Send(recs []history.Record, deadline time.Time) error {
	for i := range recs {
		r := recs[i]
		msg := &sarama.ProducerMessage{Topic: r.Topic, Partition: r.Partition,
			Value: sarama.StringEncoder(r.Value), Metadata: txnTag{t.seq, i}}
		if r.Key != "" {
			msg.Key = sarama.StringEncoder(r.Key)
		}
		t.prod.Input() <- msg
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var first error
	for left := len(recs); left > 0; {
		select {
		case res := <-t.results:
			tag, ok := res.msg.Metadata.(txnTag)
			if !ok || tag.seq != t.seq || tag.idx >= len(recs) {
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

func (t *Txn) Abort() error { return t.prod.AbortTxn() }

// Commit: ok, fail (never requested, or aborted after a failed commit) or info (a failed commit
// that may have been prepared).
func (t *Txn) Commit() (history.Type, string) {
	out, txt, _ := t.commit()
	return out, txt
}

// commit is Commit, with the error the commit itself returned (nil when it was not sent).
func (t *Txn) commit() (history.Type, string, error) {
	if st := t.prod.TxnStatus(); st&sarama.ProducerTxnFlagInError != 0 {
		// In this state sarama's CommitTxn returns the earlier error without sending
		// EndTxn: the coordinator was never asked to commit.
		aerr := t.Abort()
		return history.Fail, kclient.TxnNotSent + "the producer was in error (" + st.String() + ")" + kclient.AbortNote(text(aerr)), nil
	}
	err := t.prod.CommitTxn()
	if err == nil {
		return history.OK, "", nil
	}
	// The coordinator accepts EndTxn(abort) only for a transaction that is still open (or
	// already aborting): once a commit is prepared it answers INVALID_TXN_STATE. A confirmed
	// abort therefore proves that the commit did not happen.
	if aerr := t.Abort(); aerr == nil {
		return history.Fail, kclient.TxnAbortConfirmed + text(err), err
	}
	return history.Info, "commit: " + text(err), err
}

// Ready: sarama's ready flag set, and not in error; otherwise its status flags say why.
func (t *Txn) Ready() (bool, string) {
	st := t.prod.TxnStatus()
	return st&sarama.ProducerTxnFlagReady != 0 && st&sarama.ProducerTxnFlagInError == 0, st.String()
}

// Close waits up to 10 s for sarama, then leaves it to finish in the background.
func (t *Txn) Close() {
	t.prod.AsyncClose()
	go func() {
		// Keep reading results so that sarama can finish closing.
		for {
			select {
			case <-t.results:
			case <-t.done:
				for len(t.results) > 0 {
					<-t.results
				}
				_ = t.client.Close()
				return
			}
		}
	}()
	kit.CloseWithin(t.spec.Log.With("txn_id", t.spec.TxnID), "transactional producer", 10*time.Second, func() { <-t.done })
}
