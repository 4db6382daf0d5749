package nemesis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
)

// RollingUpgrade moves every node of the cluster to Kafka release To under load, one at a time
// as an operator upgrades: each node stopped cleanly and started on To's image with its data
// (harness Upgrade), the next only once the cluster is healthy again; brokers first, then the
// dedicated controllers. Once every node runs To, the upgrade is finalized: metadata.version
// is raised to the highest level To supports (what kafka-features.sh upgrade does for
// metadata). It ends by itself.
//
// Events "upgrade" per node (noting the release), then "finalize-features".
type RollingUpgrade struct {
	To kafkaconf.KafkaVersion
	// Gate bounds the wait for health between two nodes; default defaultGate.
	Gate time.Duration
}

func (f RollingUpgrade) Name() string { return "rolling-upgrade" }
func (f RollingUpgrade) String() string {
	return fmt.Sprintf("rolling-upgrade(every node to Kafka %s)", f.To)
}
func (f RollingUpgrade) Available(c Cluster) error {
	if err := needBrokers(c, 2); err != nil {
		return err
	}
	if from := c.KafkaVersion(); !from.Less(f.To) {
		return fmt.Errorf("the cluster runs Kafka %s: an upgrade goes to a newer release than %s", from, f.To)
	}
	return nil
}

func (f RollingUpgrade) Inject(ctx context.Context, e *Env) (any, error) {
	order := slices.Sorted(slices.Values(e.Cluster.Brokers()))
	for _, id := range slices.Sorted(slices.Values(e.Cluster.Controllers())) {
		if !slices.Contains(order, id) {
			order = append(order, id)
		}
	}
	for k, id := range order {
		t := Targets{Nodes: []int{id}, Role: fmt.Sprintf("node %d of %d, order %v", k+1, len(order), order),
			Note: fmt.Sprintf("Kafka %s to %s", e.Cluster.NodeVersion(id), f.To)}
		if err := e.Do(ctx, "upgrade", t, func(ctx context.Context) error { return e.Cluster.Upgrade(ctx, id, f.To) }); err != nil {
			return []int{id}, err
		}
		if err := e.gate(ctx, f.Gate, fmt.Sprintf("upgrading node %d", id), "upgrade"); err != nil {
			return nil, err
		}
	}
	return nil, e.DoReport(ctx, "finalize-features", Targets{Fault: f.Name()}, func(ctx context.Context, t *Targets) error {
		st, err := e.Cluster.Features(ctx)
		if err != nil {
			return err
		}
		want := kafkaconf.FeatureLevels{kafkaconf.FeatureMetadata: st.Supported.Level(kafkaconf.FeatureMetadata)}
		t.Note = fmt.Sprintf("%s (from %d)", want, st.Finalized.Level(kafkaconf.FeatureMetadata))
		return e.Cluster.SetFeatures(ctx, want)
	})
}

func (f RollingUpgrade) Heal(ctx context.Context, e *Env, state any) error {
	if state == nil {
		return nil
	}
	return startAgain(ctx, e, f.Name(), state, nil)
}
