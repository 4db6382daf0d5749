package workloads

import (
	"context"
	"fmt"

	"github.com/verity-kafka/verity/kafkaconf"
)

// The clients Verity drives are listed, as data, by kafkaconf.Clients; each workload role
// dispatches on the run's client (Env.Client) to that client's adapter, in the role's file.

// txnProtocol is the transaction protocol the run's transactional clients will speak with the
// cluster: the best that the client, the cap (env.TxnProtocol) and the cluster support.
func txnProtocol(ctx context.Context, env Env) (kafkaconf.TxnProtocol, error) {
	switch env.Client {
	case kafkaconf.Sarama:
		// sarama sends EndTxn v3 whatever the cluster supports.
		return kafkaconf.TxnProtocolV1, nil
	case kafkaconf.FranzGo:
		return franzTxnProtocol(ctx, env)
	}
	return "", fmt.Errorf("no transactional producer for client %q", env.Client)
}
