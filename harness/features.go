package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/verity-kafka/verity/kafkaconf"
)

// ErrFeature is wrapped by errors about a feature level the cluster cannot take.
var ErrFeature = errors.New("feature level refused")

// FeatureState is what one broker says of the cluster's features: the levels finalized and, for
// each feature, the highest level this broker supports.
type FeatureState struct {
	Finalized kafkaconf.FeatureLevels
	Supported kafkaconf.FeatureLevels
	// Epoch orders finalized states: a later change has a higher epoch (-1: unknown).
	Epoch int64
}

// Features asks the brokers, first that answers, for the finalized feature levels
// (ApiVersions, KIP-584). Every broker carries them from the metadata log. Version 4 is asked
// for: below it a broker leaves out of the supported list every feature whose lowest level is
// 0 (KIP-1022), transaction.version among them.
func (c *Cluster) Features(ctx context.Context) (FeatureState, error) {
	var errs []error
	for _, addr := range c.Bootstrap() {
		if err := ctx.Err(); err != nil {
			return FeatureState{}, err
		}
		st, err := c.featuresAt(addr)
		if err == nil {
			return st, nil
		}
		errs = append(errs, err)
	}
	return FeatureState{}, fmt.Errorf("reading the cluster's feature levels: %w", errors.Join(errs...))
}

func (c *Cluster) featuresAt(addr string) (FeatureState, error) {
	cfg := c.SaramaConfig("verity-features")
	cfg.Net.ReadTimeout = 5 * time.Second
	b := sarama.NewBroker(addr)
	if err := b.Open(cfg); err != nil {
		return FeatureState{}, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	defer func() { _ = b.Close() }()
	resp, err := b.ApiVersions(&sarama.ApiVersionsRequest{Version: 4, ClientSoftwareName: "verity", ClientSoftwareVersion: "1"})
	if err != nil {
		return FeatureState{}, fmt.Errorf("ApiVersions to %s: %w", addr, err)
	}
	if resp.ErrorCode != 0 {
		return FeatureState{}, fmt.Errorf("ApiVersions to %s: %w", addr, sarama.KError(resp.ErrorCode))
	}
	st := FeatureState{Finalized: kafkaconf.FeatureLevels{}, Supported: kafkaconf.FeatureLevels{}, Epoch: resp.FinalizedFeaturesEpoch}
	for _, f := range resp.FinalizedFeatures {
		if f.MaxVersionLevel > 0 {
			st.Finalized[kafkaconf.Feature(f.Name)] = f.MaxVersionLevel
		}
	}
	for _, f := range resp.SupportedFeatures {
		st.Supported[kafkaconf.Feature(f.Name)] = f.MaxVersion
	}
	return st, nil
}

// SetFeatures brings each feature of want to its level (UpdateFeatures through the active
// controller): an upgrade, or a safe downgrade (one that loses no metadata, which the controller
// refuses otherwise). A level the release does not support is refused before anything is asked.
func (c *Cluster) SetFeatures(ctx context.Context, want kafkaconf.FeatureLevels) error {
	if len(want) == 0 {
		return nil
	}
	st, err := c.Features(ctx)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 30_000
	for _, f := range slices.Sorted(maps.Keys(want)) {
		lvl := want[f]
		if lvl > st.Supported[f] {
			return fmt.Errorf("%w: %s=%d: Kafka %s supports %s up to %d", ErrFeature, f, lvl, c.KafkaVersion(), f, st.Supported[f])
		}
		if st.Finalized[f] == lvl {
			continue
		}
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel = string(f), lvl
		u.UpgradeType, u.AllowDowngrade = 1, false // upgrade
		if lvl < st.Finalized[f] {
			u.UpgradeType, u.AllowDowngrade = 2, true // a safe downgrade: none that loses metadata
		}
		req.FeatureUpdates = append(req.FeatureUpdates, u)
	}
	if len(req.FeatureUpdates) == 0 {
		return nil
	}
	// franz-go rather than sarama: sarama writes its downgrade flag into version 1's
	// upgrade-type byte as 1, which asks for an upgrade.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ClientID("verity-features"))
	if err != nil {
		return fmt.Errorf("updating features %s: %w", want, err)
	}
	defer cl.Close()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("updating features %s: %w", want, err)
	}
	errs := []error{featureErr("", resp.ErrorCode, resp.ErrorMessage)}
	for _, r := range resp.Results {
		errs = append(errs, featureErr(fmt.Sprintf("%s=%d", r.Feature, want[kafkaconf.Feature(r.Feature)]), r.ErrorCode, r.ErrorMessage))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.waitFeatures(ctx, want)
}

// featureErr is an UpdateFeatures error code as an error wrapping ErrFeature (nil for none).
func featureErr(what string, code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	text := kerr.ErrorForCode(code).Error()
	if msg != nil && *msg != "" {
		text += ": " + *msg
	}
	if what != "" {
		text = what + ": " + text
	}
	return fmt.Errorf("%w: %s", ErrFeature, text)
}

// waitFeatures returns once every running broker reports the levels of want: a broker learns
// them from the metadata log, shortly after the controller commits them. A broker a fault keeps
// down learns them when it is back; it is not waited for.
func (c *Cluster) waitFeatures(ctx context.Context, want kafkaconf.FeatureLevels) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		behind := ""
		states, addrs := c.NodeStates(), c.Bootstrap()
		for i, id := range c.Brokers() {
			if states[id] != NodeRunning {
				continue
			}
			addr := addrs[i]
			st, err := c.featuresAt(addr)
			if err != nil {
				behind = err.Error()
				break
			}
			for f, lvl := range want {
				if st.Finalized[f] != lvl {
					behind = fmt.Sprintf("%s says %s=%d", addr, f, st.Finalized[f])
				}
			}
			if behind != "" {
				break
			}
		}
		if behind == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("features %s not seen by every running broker (last: %s): %w", want, behind, ctx.Err())
		case <-tick.C:
		}
	}
}
