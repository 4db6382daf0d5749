package workloads

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
)

func ptr[T any](v T) *T { return &v }

func TestProducerDefaultsAreKafkas(t *testing.T) {
	c, warns, err := ProducerConfig{Topics: []string{"t"}}.Resolved()
	require.NoError(t, err)
	require.Empty(t, warns)
	require.Equal(t, "all", c.Acks)
	require.True(t, *c.Idempotence, "idempotence is on by default, as in Kafka")
	require.Equal(t, 1, c.MaxInFlight, "sarama's idempotent producer: one request in flight")
	require.Equal(t, 1, c.Window, "one send at a time unless async")
	var retries atomic.Int64
	_, err = c.saramaConfig(harness.SaramaConfig("t"), &retries)
	require.NoError(t, err, "sarama accepts the resolved configuration")
}

func TestIdempotenceWithMoreInFlightIsRefusedAloud(t *testing.T) {
	_, _, err := ProducerConfig{Topics: []string{"t"}, Idempotence: ptr(true), MaxInFlight: 5}.Resolved()
	require.ErrorContains(t, err, "Net.MaxOpenRequests=1")
	require.ErrorContains(t, err, "max_in_flight=5")

	// Unset idempotence with 5 in flight: Kafka would stay idempotent, sarama cannot; the
	// producer runs without it, and says so.
	c, warns, err := ProducerConfig{Topics: []string{"t"}, MaxInFlight: 5}.Resolved()
	require.NoError(t, err)
	require.False(t, *c.Idempotence)
	require.Len(t, warns, 1)
	require.Contains(t, warns[0], "Net.MaxOpenRequests=1")
	require.Equal(t, 5, c.MaxInFlight)
}

func TestProducerConflictsAreErrors(t *testing.T) {
	for name, c := range map[string]ProducerConfig{
		"idempotence with acks=1":   {Topics: []string{"t"}, Acks: "1", Idempotence: ptr(true)},
		"idempotence without retry": {Topics: []string{"t"}, Idempotence: ptr(true), Retries: ptr(0)},
		"bad acks":                  {Topics: []string{"t"}, Acks: "2"},
		"bad compression":           {Topics: []string{"t"}, Compression: "brotli"},
		"bad partitioning":          {Topics: []string{"t"}, Partitioning: "sticky"},
		"no topics":                 {},
	} {
		_, _, err := c.Resolved()
		require.Error(t, err, name)
	}
	// acks=1 leaves idempotence off by default, as Kafka does, and allows 0 retries.
	c, _, err := ProducerConfig{Topics: []string{"t"}, Acks: "1", Retries: ptr(0), Compression: "zstd", Async: true}.Resolved()
	require.NoError(t, err)
	require.False(t, *c.Idempotence)
	require.Equal(t, 5, c.MaxInFlight)
	require.Equal(t, 100, c.Window)
	var retries atomic.Int64
	sc, err := c.saramaConfig(harness.SaramaConfig("t"), &retries)
	require.NoError(t, err)
	require.Equal(t, sarama.WaitForLocal, sc.Producer.RequiredAcks)
	require.Equal(t, sarama.CompressionZSTD, sc.Producer.Compression)
}

func TestRetryBackoffsAreCounted(t *testing.T) {
	c, _, err := ProducerConfig{Topics: []string{"t"}}.Resolved()
	require.NoError(t, err)
	var retries atomic.Int64
	sc, err := c.saramaConfig(harness.SaramaConfig("t"), &retries)
	require.NoError(t, err)
	require.Equal(t, c.RetryBackoff, sc.Producer.Retry.BackoffFunc(1, 3), "the configured backoff")
	sc.Producer.Retry.BackoffFunc(2, 3)
	require.Equal(t, int64(2), retries.Load(), "every retry is seen")
}

type fakeCluster struct{}

func (fakeCluster) Bootstrap() []string                                  { return []string{"127.0.0.1:1"} }
func (fakeCluster) Brokers() []int                                       { return []int{1, 2, 3} }
func (fakeCluster) CreateTopic(context.Context, harness.TopicSpec) error { return nil }
func (fakeCluster) Deviations() []string                                 { return []string{"replica.lag.time.max.ms=10000"} }

func TestPlanNumbersProcessesAndStatesSettings(t *testing.T) {
	spec := Spec{
		Name: "mix", Seed: 1,
		Topics: []harness.TopicSpec{{Name: "d", Partitions: 3, MinISR: 2}, {Name: "a"}, {Name: "b"}},
		Producers: []ProducerSpec{
			{Instances: 2, ProducerConfig: ProducerConfig{Topics: []string{"d"}}},
			{ProducerConfig: ProducerConfig{Topics: []string{"d"}, Acks: "1", AppResend: 2}},
		},
		Transactional: []TxnConfig{{Topics: []string{"a", "b"}}},
		Processors:    []ProcessorConfig{{Input: "d", Output: "a"}},
		Consumers:     []ConsumerConfig{{Topics: []string{"d"}}, {Topics: []string{"d"}, Mode: Assign, Isolation: history.ReadCommitted}},
	}
	pl, err := planRun(spec)
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 2}, []int{pl.producers[0].p, pl.producers[1].p, pl.producers[2].p})
	require.Equal(t, 3, pl.txns[0].p)
	require.Equal(t, "verity-txn-3", pl.txns[0].cfg.TxnID, "a stable transactional.id per process")
	require.Equal(t, 4, pl.procs[0].p)
	require.Equal(t, 5, pl.consumers[0].p)
	require.Equal(t, 7, pl.next, "final readers come after the configured instances")
	require.Equal(t, []string{"d", "a", "b"}, pl.final.Topics)
	require.Len(t, pl.final.Isolations, 2, "transactions were used: both isolation levels")

	raw, err := headerConfig(spec, pl, fakeCluster{})
	require.NoError(t, err)
	var h struct {
		Processes map[string]map[string]any `json:"processes"`
		Topics    map[string]map[string]any `json:"topics"`
		Isolation string                    `json:"isolation"`
	}
	require.NoError(t, json.Unmarshal(raw, &h))
	require.Equal(t, map[string]any{"acks": "all", "idempotence": true, "max_in_flight": 1.0, "retries": 3.0}, h.Processes["0"])
	require.Equal(t, true, h.Processes["2"]["app_resend"])
	require.Equal(t, false, h.Processes["2"]["idempotence"])
	require.Equal(t, true, h.Processes["3"]["transactional"])
	require.Equal(t, true, h.Processes["4"]["transactional"])
	require.Equal(t, map[string]any{"replication_factor": 3.0, "min_insync_replicas": 2.0}, h.Topics["d"])
	require.Equal(t, history.ReadCommitted, h.Isolation)

	noTxn := Spec{Topics: []harness.TopicSpec{{Name: "d"}}, Producers: []ProducerSpec{{ProducerConfig: ProducerConfig{Topics: []string{"d"}}}}}
	pl, err = planRun(noTxn)
	require.NoError(t, err)
	require.Equal(t, []string{history.ReadUncommitted}, pl.final.Isolations)
}
