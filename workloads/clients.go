package workloads

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/kafkaconf"
)

// adapters are one client's implementation of every workload role. The clients Verity drives
// are listed, as data, by kafkaconf.Clients; each has one entry in clientAdapters, and every
// role dispatches through adaptersOf, so that a client cannot be listed with a role missing
// (TestEveryClientHasEveryRole).
type adapters struct {
	// producer opens a plain producer; warnings say what of cfg the client cannot do.
	producer func(ctx context.Context, env Env, p int, cfg ProducerConfig, log *slog.Logger) (_ producerClient, parts map[string]int32, warnings []string, _ error)
	// txn opens a transactional producer for txnID, initialised (fencing earlier instances).
	txn func(ctx context.Context, env Env, p int, role, txnID string, c TxnClientConfig, log *slog.Logger) (txnProducer, error)
	// member opens a read-process-write processor's instance.
	member func(ctx context.Context, w *processor) (rpwMember, error)
	// consumer opens a consumer instance.
	consumer openConsumer
	// partitions counts each topic's partitions.
	partitions func(ctx context.Context, env Env, id string, topics []string) (map[string]int32, error)
	// txnProtocol is the transaction protocol the client will speak with the cluster: the best
	// that the client, the cap (env.TxnProtocol) and the cluster support.
	txnProtocol func(ctx context.Context, env Env) (kafkaconf.TxnProtocol, error)
}

func clientAdapters() map[kafkaconf.ClientName]adapters {
	return map[kafkaconf.ClientName]adapters{
		kafkaconf.Sarama: {
			producer: func(_ context.Context, env Env, p int, cfg ProducerConfig, log *slog.Logger) (producerClient, map[string]int32, []string, error) {
				cl, parts, err := openSaramaProducer(env, p, cfg, log)
				return cl, parts, nil, err
			},
			txn: func(ctx context.Context, env Env, p int, role, txnID string, c TxnClientConfig, log *slog.Logger) (txnProducer, error) {
				return nilIfErr[txnProducer](openTxnClient(ctx, env, p, role, txnID, c, log))
			},
			member: func(ctx context.Context, w *processor) (rpwMember, error) {
				return nilIfErr[rpwMember](openSaramaMember(ctx, w))
			},
			consumer:   openSaramaConsumer,
			partitions: saramaPartitions,
			// sarama sends EndTxn v3 whatever the cluster supports.
			txnProtocol: func(context.Context, Env) (kafkaconf.TxnProtocol, error) { return kafkaconf.TxnProtocolV1, nil },
		},
		kafkaconf.FranzGo: {
			producer: openFranzProducer,
			txn: func(ctx context.Context, env Env, p int, role, txnID string, c TxnClientConfig, log *slog.Logger) (txnProducer, error) {
				return nilIfErr[txnProducer](openFranzTxn(ctx, env, p, role, txnID, c, log))
			},
			member: func(ctx context.Context, w *processor) (rpwMember, error) {
				return nilIfErr[rpwMember](openFranzMember(ctx, w))
			},
			consumer:    openFranzConsumer,
			partitions:  txnFranzPartitions,
			txnProtocol: franzTxnProtocol,
		},
	}
}

// adaptersOf is client c's adapters.
func adaptersOf(c kafkaconf.ClientName) (adapters, error) {
	a, ok := clientAdapters()[c]
	if !ok {
		return adapters{}, fmt.Errorf("no workloads for client %q", c)
	}
	return a, nil
}

// nilIfErr returns a concrete adapter as its role's interface, and a nil interface (not one
// holding a nil pointer) with the error.
func nilIfErr[I any, T any](v T, err error) (I, error) {
	var zero I
	if err != nil {
		return zero, err
	}
	return any(v).(I), nil
}

// txnProtocol is the transaction protocol the run's transactional clients will speak.
func txnProtocol(ctx context.Context, env Env) (kafkaconf.TxnProtocol, error) {
	a, err := adaptersOf(env.Client)
	if err != nil {
		return "", err
	}
	return a.txnProtocol(ctx, env)
}

// topicPartitions asks the cluster, with the run's client, how many partitions each topic has.
func topicPartitions(ctx context.Context, env Env, id string, topics []string) (map[string]int32, error) {
	a, err := adaptersOf(env.Client)
	if err != nil {
		return nil, err
	}
	return a.partitions(ctx, env, id, topics)
}

// saramaPartitions counts each topic's partitions with a sarama client of its own.
func saramaPartitions(_ context.Context, env Env, id string, topics []string) (map[string]int32, error) {
	client, err := sarama.NewClient(env.Brokers, env.Sarama(id))
	if err != nil {
		return nil, fmt.Errorf("connecting to %v: %w", env.Brokers, err)
	}
	defer client.Close()
	return partitionCounts(client, topics)
}
