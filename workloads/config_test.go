package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
	ksarama "github.com/verity-kafka/verity/workloads/kclient/sarama"
)

func TestProducerDefaultsAreKafkas(t *testing.T) {
	c, warns, err := ProducerConfig{Topics: []string{"t"}}.Resolved(Sarama())
	require.NoError(t, err)
	require.Equal(t, kafkaconf.AcksAll, *c.Acks)
	require.True(t, *c.Idempotence, "idempotence is on by default, as in Kafka")
	require.Equal(t, 1, *c.MaxInFlight, "sarama's idempotent producer: one request in flight")
	require.Equal(t, 3, *c.Retries, "sarama's retries")
	require.Equal(t, 1, c.Window, "one send at a time unless async")
	require.Len(t, warns, 2, "both departures from Kafka are said: %v", warns)
	require.Contains(t, warns[0], "max.in.flight.requests.per.connection=1, not 5")
	require.Contains(t, warns[1], "retries unset: sarama's default 3")
	var retries atomic.Int64
	_, err = ksarama.ProducerConfig(harness.SaramaConfig("t"), c.spec("t", nil), &retries)
	require.NoError(t, err, "sarama accepts the resolved configuration")
}

// Idempotence with 5 requests in flight, asked or by default: Kafka would keep 5 in flight,
// sarama keeps one, and the producer says so rather than turn idempotence off.
func TestIdempotenceKeepsOneInFlight(t *testing.T) {
	for name, d := range map[string]kafkaconf.Delivery{
		"asked":      {Idempotence: new(true), MaxInFlight: new(5)},
		"by default": {MaxInFlight: new(5)},
	} {
		c, warns, err := ProducerConfig{Topics: []string{"t"}, Delivery: d}.Resolved(Sarama())
		require.NoError(t, err, name)
		require.True(t, *c.Idempotence, name)
		require.Equal(t, 1, *c.MaxInFlight, name)
		require.Contains(t, warns[0], "sarama's idempotent producer allows no more", name)
	}
}

func TestProducerConflictsAreErrors(t *testing.T) {
	for name, c := range map[string]ProducerConfig{
		"idempotence with acks=1":   {Topics: []string{"t"}, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksLeader), Idempotence: new(true)}},
		"idempotence without retry": {Topics: []string{"t"}, Delivery: kafkaconf.Delivery{Idempotence: new(true), Retries: new(0)}},
		"idempotence with 6":        {Topics: []string{"t"}, Delivery: kafkaconf.Delivery{Idempotence: new(true), MaxInFlight: new(6)}},
		"bad acks":                  {Topics: []string{"t"}, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.Acks(2))}},
		"bad compression":           {Topics: []string{"t"}, Compression: "brotli"},
		"bad partitioning":          {Topics: []string{"t"}, Partitioning: "sticky"},
		"no topics":                 {},
	} {
		_, _, err := c.Resolved(Sarama())
		require.Error(t, err, name)
	}
	// acks=1 leaves idempotence off by default, as Kafka does, and allows 0 retries.
	c, _, err := ProducerConfig{Topics: []string{"t"}, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksLeader), Retries: new(0)},
		Compression: "zstd", Async: true}.Resolved(Sarama())
	require.NoError(t, err)
	require.False(t, *c.Idempotence)
	require.Equal(t, 5, *c.MaxInFlight)
	require.Equal(t, 100, c.Window)
	var retries atomic.Int64
	sc, err := ksarama.ProducerConfig(harness.SaramaConfig("t"), c.spec("t", nil), &retries)
	require.NoError(t, err)
	require.Equal(t, sarama.WaitForLocal, sc.Producer.RequiredAcks)
	require.Equal(t, sarama.CompressionZSTD, sc.Producer.Compression)
	require.Equal(t, 5, sc.Net.MaxOpenRequests)
}

func TestRetryBackoffsAreCounted(t *testing.T) {
	c, _, err := ProducerConfig{Topics: []string{"t"}}.Resolved(Sarama())
	require.NoError(t, err)
	var retries atomic.Int64
	sc, err := ksarama.ProducerConfig(harness.SaramaConfig("t"), c.spec("t", nil), &retries)
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
			{ProducerConfig: ProducerConfig{Topics: []string{"d"}, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksLeader)}, AppResend: 2}},
		},
		Transactional:   []TxnConfig{{Topics: []string{"a", "b"}}},
		Processors:      []ProcessorConfig{{Input: "d", Output: "a"}},
		Consumers:       []ConsumerConfig{{Topics: []string{"d"}}, {Topics: []string{"d"}, Mode: Assign, Isolation: kafkaconf.ReadCommitted}},
		ScheduledFaults: []string{"kill"},
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

	h, err := HeaderConfig(spec, 3, []int{1, 2, 3}, []string{"replica.lag.time.max.ms=10000"}, kafkaconf.TxnProtocolV1)
	require.NoError(t, err)
	raw, err := json.Marshal(h)
	require.NoError(t, err)
	// The header as a reader sees it: every setting of every producer stated as sarama runs it.
	var got struct {
		Processes  map[string]map[string]any `json:"processes"`
		Topics     map[string]map[string]any `json:"topics"`
		Isolation  string                    `json:"isolation"`
		Faults     []string                  `json:"faults"`
		Deviations []string                  `json:"deviations"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, map[string]any{"acks": "all", "idempotence": true, "max_in_flight": 1.0, "retries": 3.0, "app_resend": false}, got.Processes["0"])
	require.Equal(t, map[string]any{"acks": "1", "idempotence": false, "max_in_flight": 5.0, "retries": 3.0, "app_resend": true}, got.Processes["2"])
	txn := map[string]any{"acks": "all", "idempotence": true, "max_in_flight": 1.0, "retries": 3.0, "app_resend": false, "transactional": true}
	require.Equal(t, txn, got.Processes["3"])
	require.Equal(t, txn, got.Processes["4"])
	require.Len(t, got.Processes, 5, "consumers write nothing")
	require.Equal(t, map[string]any{"replication_factor": 3.0, "min_insync_replicas": 2.0}, got.Topics["d"])
	require.Equal(t, map[string]any{"replication_factor": 3.0}, got.Topics["a"], "RF 0 is the broker count; min ISR 0 is left unsaid")
	require.Equal(t, "read_committed", got.Isolation, "read-process-write inputs are read committed")
	require.Equal(t, []string{"kill"}, got.Faults)
	require.Equal(t, []string{"replica.lag.time.max.ms=10000"}, got.Deviations)
	back, err := history.ParseConfig(raw)
	require.NoError(t, err, "the checker reads what the run writes")
	require.Equal(t, h.Processes, back.Processes)

	noTxn := Spec{Topics: []harness.TopicSpec{{Name: "d"}}, Producers: []ProducerSpec{{ProducerConfig: ProducerConfig{Topics: []string{"d"}}}}}
	pl, err = planRun(noTxn)
	require.NoError(t, err)
	require.Equal(t, []kafkaconf.Isolation{kafkaconf.ReadUncommitted}, pl.final.Isolations)
}

func TestErrorTextNamesKafkasError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{sarama.ErrNotEnoughReplicas, "kafka server: NOT_ENOUGH_REPLICAS: "},
		{kerr.NotEnoughReplicas, "kafka server: NOT_ENOUGH_REPLICAS: "},
		{fmt.Errorf("producing: %w", kerr.RequestTimedOut), "producing: REQUEST_TIMED_OUT: "},
	} {
		if got := ErrorText(c.err); !strings.HasPrefix(got, c.want) {
			t.Errorf("%v: %q, want it to start with %q", c.err, got, c.want)
		}
	}
	if got := ErrorText(fmt.Errorf("producing: %w", kerr.RequestTimedOut)); !strings.HasSuffix(got, "(kafka server: REQUEST_TIMED_OUT)") {
		t.Errorf("a wrapped franz-go error: %q", got)
	}
}

// An outbox sink needs an outbox topic of the run, other than its input; no other mode takes
// one. The relay is numbered after the sinks' instances.
func TestSinkOutboxPlan(t *testing.T) {
	base := func(sc SinkConfig) Spec {
		return Spec{Duration: 1, Topics: []harness.TopicSpec{{Name: "in"}, {Name: "out"}},
			Producers: []ProducerSpec{{ProducerConfig: ProducerConfig{Topics: []string{"in"}}}}, Sinks: []SinkConfig{sc}}
	}
	for _, c := range []struct {
		sc   SinkConfig
		want string
	}{
		{SinkConfig{Mode: sink.Outbox, Topic: "in"}, "none is given"},
		{SinkConfig{Mode: sink.Outbox, Topic: "in", Outbox: "in"}, "consume its own output"},
		{SinkConfig{Mode: sink.Outbox, Topic: "in", Outbox: "elsewhere"}, "not one of the run's topics"},
		{SinkConfig{Mode: sink.Naive, Topic: "in", Outbox: "out"}, "has no relay"},
	} {
		if _, err := planRun(base(c.sc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.sc, err, c.want)
		}
	}
	pl, err := planRun(base(SinkConfig{Mode: sink.Outbox, Topic: "in", Outbox: "out", Instances: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.relays) != 1 || pl.relays[0].p != 3 || pl.next != 4 {
		t.Errorf("relays %+v, next %d: want the relay as process 3 (producer 0, sink members 1 and 2)", pl.relays, pl.next)
	}
	c, err := headerConfig(base(SinkConfig{Mode: sink.Outbox, Topic: "in", Outbox: "out"}), pl, 3, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if si := c.Sinks["sink"]; si.Outbox != "out" || si.Relay == nil || *si.Relay != 3 {
		t.Errorf("header sink %+v: want outbox out, relay 3", si)
	}
}
