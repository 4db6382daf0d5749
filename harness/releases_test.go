package harness_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
	"github.com/verity-kafka/verity/kafkaconf"
)

// Every release Verity runs starts from its image, logs (reload4j on 3.x, log4j2 on 4.x), says
// its feature levels, takes a transaction from Verity's sarama client speaking no newer protocol
// than the release's, and moves transaction.version where it has one.
//
// The releases' single-node clusters, and TestUpgrade's, run two at a time (-parallel,
// GOMAXPROCS by default): a one-node cluster's start is mostly waiting.
func TestReleases(t *testing.T) {
	harnesstest.RequireDocker(t)
	t.Parallel()
	ctx := withTimeout(t, 12*time.Minute)
	for _, r := range kafkaconf.Releases() {
		t.Run(string(r.Version), func(t *testing.T) {
			t.Parallel()
			c := harnesstest.Start(t, harness.Spec{Nodes: 1, KafkaVersion: r.Version})
			require.Equal(t, r.Version, c.KafkaVersion())
			_, standIn := harness.KafkaImages(r.Version)
			require.Contains(t, []string{"apache/kafka:" + string(r.Version), standIn}, c.Images().Kafka)

			log, err := c.NodeLog(ctx, 1)
			require.NoError(t, err)
			require.Contains(t, log, "Kafka Server started", "the broker's own log lines reach the node log")

			st, err := c.Features(ctx)
			require.NoError(t, err)
			t.Logf("Kafka %s finalized: %s; supported: %s", r.Version, st.Finalized, st.Supported)
			require.Positive(t, st.Finalized.Level(kafkaconf.FeatureMetadata), "every KRaft cluster finalizes metadata.version")

			// The deviations a header lists are measured against one table of defaults
			// (kafkaconf.BrokerDefaults): it must be every release's.
			defaults := brokerDefaults(ctx, t, c)
			for _, k := range slices.Sorted(maps.Keys(kafkaconf.BrokerDefaults())) {
				got, known := defaults[k]
				if !known {
					t.Logf("Kafka %s has no setting %s", r.Version, k)
					continue
				}
				require.Equal(t, kafkaconf.BrokerDefaults()[k], got, "Kafka %s's default of %s", r.Version, k)
			}

			cfg := c.SaramaConfig("verity-releases")
			want := string(r.Version)
			if sv, _ := sarama.ParseKafkaVersion(want); !sarama.MaxVersion.IsAtLeast(sv) {
				want = sarama.MaxVersion.String()
			}
			require.Equal(t, want, cfg.Version.String(), "sarama's protocol version follows the release up to the newest it knows")
			transact(t, c, cfg)

			if st.Supported.Level(kafkaconf.FeatureTransaction) < 2 {
				err := c.SetFeatures(ctx, kafkaconf.FeatureLevels{kafkaconf.FeatureTransaction: 2})
				require.ErrorIs(t, err, harness.ErrFeature, "a level the release lacks is refused with ErrFeature")
				t.Logf("SetFeatures: %v", err)
				return
			}
			from := st.Finalized.Level(kafkaconf.FeatureTransaction)
			to := int16(1)
			if from == 1 {
				to = 2
			}
			require.NoError(t, c.SetFeatures(ctx, kafkaconf.FeatureLevels{kafkaconf.FeatureTransaction: to}))
			st, err = c.Features(ctx)
			require.NoError(t, err)
			require.Equal(t, to, st.Finalized.Level(kafkaconf.FeatureTransaction), "transaction.version moved from %d", from)
			transact(t, c, cfg)
		})
	}
}

// A node moved to a newer release keeps its data and its place in the cluster, and the
// cluster's metadata.version can then be raised to the new release's.
func TestUpgrade(t *testing.T) {
	harnesstest.RequireDocker(t)
	t.Parallel()
	ctx := withTimeout(t, 5*time.Minute)
	c := harnesstest.Start(t, harness.Spec{Nodes: 1, KafkaVersion: "4.2.2"})
	cfg := c.SaramaConfig("verity-upgrade")
	first := transact(t, c, cfg)
	before, err := c.Features(ctx)
	require.NoError(t, err)

	require.ErrorIs(t, c.Upgrade(ctx, 1, "4.1.2"), harness.ErrUpgrade, "never to an older release")
	require.NoError(t, c.Upgrade(ctx, 1, "4.3.1"))
	require.Equal(t, kafkaconf.KafkaVersion("4.3.1"), c.NodeVersion(1))
	require.Equal(t, kafkaconf.KafkaVersion("4.3.1"), c.KafkaVersion())
	require.NoError(t, c.WaitHealthy(ctx))
	log, err := c.NodeLog(ctx, 1)
	require.NoError(t, err)
	require.Contains(t, log, "Kafka Server started")

	after, err := c.Features(ctx)
	require.NoError(t, err)
	require.Equal(t, before.Finalized.Level(kafkaconf.FeatureMetadata), after.Finalized.Level(kafkaconf.FeatureMetadata),
		"the upgrade alone keeps metadata.version")
	require.Greater(t, after.Supported.Level(kafkaconf.FeatureMetadata), before.Supported.Level(kafkaconf.FeatureMetadata))
	mv := after.Supported.Level(kafkaconf.FeatureMetadata)
	require.NoError(t, c.SetFeatures(ctx, kafkaconf.FeatureLevels{kafkaconf.FeatureMetadata: mv}))
	t.Logf("metadata.version %d on 4.2.2, %d after the upgrade's finalization", before.Finalized.Level(kafkaconf.FeatureMetadata), mv)
	transact(t, c, c.SaramaConfig("verity-upgrade-2"))
	o, err := c.Offsets(ctx, first, 0)
	require.NoError(t, err)
	require.Equal(t, harness.Offsets{Earliest: 0, HighWatermark: 2, LastStable: 2}, o, "the data written on 4.2.2 is there on 4.3.1")
	require.FileExists(t, filepath.Join(c.Spec().ArtifactDir, "logs", "node-1-4.2.2.log"), "the replaced container's log is kept")
}

// transact commits one transaction of one record in a new topic, checks that read_committed
// sees it, and returns the topic.
func transact(t *testing.T, c *harness.Cluster, cfg *sarama.Config) string {
	t.Helper()
	ctx := withTimeout(t, time.Minute)
	topic := fmt.Sprintf("txn-%d", time.Now().UnixNano())
	require.NoError(t, c.CreateTopic(ctx, harness.TopicSpec{Name: topic}))
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = topic
	p, err := sarama.NewSyncProducer(c.Bootstrap(), cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	require.NoError(t, p.BeginTxn())
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("v")})
	require.NoError(t, err)
	require.NoError(t, p.CommitTxn())
	require.Eventually(t, func() bool {
		o, err := c.Offsets(ctx, topic, 0)
		return err == nil && o.LastStable == 2 // the record and the commit marker
	}, 2*time.Minute, 200*time.Millisecond, "the committed transaction's marker moves the last stable offset past it")
	return topic
}

// brokerDefaults are broker 1's default values (DescribeConfigs with synonyms: a setting the
// harness gives still lists its default among them).
func brokerDefaults(ctx context.Context, t *testing.T, c *harness.Cluster) map[string]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Resources, 1)
	out := map[string]string{}
	for _, e := range resp.Resources[0].Configs {
		for _, syn := range e.ConfigSynonyms {
			if syn.Source == kmsg.ConfigSourceDefaultConfig && syn.Value != nil {
				out[e.Name] = *syn.Value
			}
		}
		if _, ok := out[e.Name]; !ok && e.Source == kmsg.ConfigSourceDefaultConfig && e.Value != nil {
			out[e.Name] = *e.Value
		}
	}
	return out
}
