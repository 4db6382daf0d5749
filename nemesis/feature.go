package nemesis

import (
	"context"
	"fmt"

	"github.com/verity-kafka/verity/kafkaconf"
)

// SetFeature brings one of the cluster's features to a level while the workloads run
// (UpdateFeatures through the controller: an upgrade, or a downgrade that loses no metadata),
// then waits until every broker reports it. It ends by itself: a flip back is another step.
//
// Event "set-feature" noting "feature=level".
type SetFeature struct {
	Feature kafkaconf.Feature
	Level   int16
}

func (f SetFeature) Name() string   { return "set-feature" }
func (f SetFeature) String() string { return fmt.Sprintf("set-feature(%s=%d)", f.Feature, f.Level) }

func (f SetFeature) Available(Cluster) error {
	_, err := kafkaconf.ParseFeature(string(f.Feature))
	return err
}

func (f SetFeature) Inject(ctx context.Context, e *Env) (any, error) {
	note := fmt.Sprintf("%s=%d", f.Feature, f.Level)
	return nil, e.Do(ctx, f.Name(), Targets{Note: note}, func(ctx context.Context) error {
		return e.Cluster.SetFeatures(ctx, kafkaconf.FeatureLevels{f.Feature: f.Level})
	})
}

func (f SetFeature) Heal(context.Context, *Env, any) error { return nil }
