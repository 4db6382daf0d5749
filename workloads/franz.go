package workloads

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/verity-kafka/verity/kafkaconf"
)

// franzTxnProtocol asks the cluster which transaction protocol franz-go will speak: KIP-890's
// (v2) when the cluster has finalised transaction.version 2 and the run's cap allows it, else
// the one before (franz-go opts in on the same condition).
func franzTxnProtocol(ctx context.Context, env Env) (kafkaconf.TxnProtocol, error) {
	if env.TxnProtocol == kafkaconf.TxnProtocolV1 {
		return kafkaconf.TxnProtocolV1, nil
	}
	cl, err := kgo.NewClient(env.Franz(clientID(0, "features"))...)
	if err != nil {
		return "", fmt.Errorf("asking the cluster's transaction.version: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "verity", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("asking the cluster's transaction.version: %w", err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" && f.MaxVersionLevel >= 2 {
			return kafkaconf.TxnProtocolV2, nil
		}
	}
	return kafkaconf.TxnProtocolV1, nil
}

// franzTxnCap are the options that keep a franz-go client to transaction protocol v1 when the
// run caps it so: EndTxn at v4 (v5 is KIP-890's), so that franz-go does not opt in.
func franzTxnCap(p kafkaconf.TxnProtocol) []kgo.Opt {
	if p != kafkaconf.TxnProtocolV1 {
		return nil
	}
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	return []kgo.Opt{kgo.MaxVersions(v)}
}
