package workloads

import (
	"context"
	"fmt"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
	kfranz "github.com/verity-kafka/verity/workloads/kclient/franz"
	ksarama "github.com/verity-kafka/verity/workloads/kclient/sarama"
)

// clients builds each client Verity drives (kafkaconf.Clients) for a run's Env: one row per
// client, so that a client cannot be listed without one (TestEveryClientHasEveryRole).
func clients() map[kafkaconf.ClientName]func(Env) kclient.Client {
	return map[kafkaconf.ClientName]func(Env) kclient.Client{
		kafkaconf.Sarama:  func(e Env) kclient.Client { return ksarama.New(e.Brokers, e.Sarama) },
		kafkaconf.FranzGo: func(e Env) kclient.Client { return kfranz.New(e.Franz, e.TxnProtocol) },
	}
}

// client is the run's client.
func (e Env) client() (kclient.Client, error) {
	build, ok := clients()[e.Client]
	if !ok {
		return nil, fmt.Errorf("no workloads for client %q", e.Client)
	}
	return build(e), nil
}

// txnProtocol is the transaction protocol the run's transactional clients will speak.
func txnProtocol(ctx context.Context, env Env) (kafkaconf.TxnProtocol, error) {
	cl, err := env.client()
	if err != nil {
		return "", err
	}
	return cl.TxnProtocol(ctx)
}

// topicPartitions asks the cluster, with the run's client, how many partitions each topic has.
func topicPartitions(ctx context.Context, env Env, id string, topics []string) (map[string]int32, error) {
	cl, err := env.client()
	if err != nil {
		return nil, err
	}
	parts, err := cl.Partitions(ctx, id, topics)
	if err != nil {
		return nil, err
	}
	return kclient.Counts(parts), nil
}
