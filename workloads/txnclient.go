package workloads

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
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

// openTxnProducer opens an instance of the run's client for txnID as process p, retrying until
// ctx ends: initialising may fail while the coordinator moves or while an earlier instance's
// transaction is being completed.
func openTxnProducer(ctx context.Context, env Env, p int, role, txnID string, c TxnClientConfig, log *slog.Logger) (kclient.Txn, error) {
	cl, err := env.client()
	if err != nil {
		return nil, err
	}
	spec := txnSpec(env, p, role, txnID, c, log)
	return initWithRetry(ctx, log, txnID, func() (kclient.Txn, error) { return cl.OpenTxn(ctx, spec) })
}

// txnSpec is what a client opens a transactional producer for txnID with.
func txnSpec(env Env, p int, role, txnID string, c TxnClientConfig, log *slog.Logger) kclient.TxnSpec {
	return kclient.TxnSpec{ClientID: clientID(p, role), TxnID: txnID, Settings: transactional(env.kafka(), c),
		Timeout: c.Timeout, RequestTimeout: c.RequestTimeout, Log: log}
}

// initWithRetry calls open until it succeeds, fails for good (a kclient.PermanentError) or ctx
// ends: initialising a transactional id may fail while the coordinator moves or a previous
// instance's transaction is being completed.
func initWithRetry[T any](ctx context.Context, log *slog.Logger, txnID string, open func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := open()
		if err == nil || kclient.IsPermanent(err) {
			return v, err
		}
		log.Warn("initialising the transactional producer failed; retrying", "txn_id", txnID, "err", err)
		// Backoff before asking the coordinator again, bounded so a healed cluster is
		// noticed quickly.
		if kit.Sleep(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 5*time.Second)) != nil {
			var zero T
			return zero, fmt.Errorf("initialising transactional.id %s: %w (last error: %v)", txnID, ctx.Err(), err)
		}
	}
}
