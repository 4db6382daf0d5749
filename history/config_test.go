package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/kafkaconf"
)

// oldRunHeader is the header config `verity run` wrote before the header was typed: the keys
// its readers must go on reading, with the values in their old spelling.
const oldRunHeader = `{"deviations":["group.initial.rebalance.delay.ms=0","heap=-Xmx384m (Kafka's start script: 1G)","replica.lag.time.max.ms=10000"],
"faults":["kill"],"isolation":"read_committed",
"processes":{"0":{"acks":"all","idempotence":true,"max_in_flight":1,"retries":3},"2":{"acks":"1","idempotence":false,"max_in_flight":5,"retries":3,"app_resend":true},
"3":{"acks":"all","idempotence":true,"max_in_flight":1,"transactional":true}},
"scenario":"default","spec":{"name":"default","seed":1},
"topics":{"verity":{"replication_factor":3,"min_insync_replicas":2,"unclean_leader_election":false}},
"workloads":{"duration":"1m0s","producers":[]}}`

// oldPredictedHeader is what Scenario.Config predicted: defaults under "producer" and "topic",
// and a producer entry spelling "idempotent".
const oldPredictedHeader = `{"scenario":"x","producer":{"acks":-1,"idempotent":true,"max_in_flight":5,"retries":2147483647,"app_resend":false},
"processes":{"1":{"acks":1}},"topic":{"replication_factor":3,"min_insync_replicas":2,"unclean_leader_election":false},
"topics":{"loose":{"min_insync_replicas":1}},"isolation":"read_uncommitted","faults":["disk-loss"],"deviations":[]}`

func TestParseConfigReadsOldHeaders(t *testing.T) {
	c, err := ParseConfig(json.RawMessage(oldRunHeader))
	require.NoError(t, err)
	require.Equal(t, "default", c.Scenario)
	p0 := kafkaconf.ResolveProducer(c.ProducerOf(0), kafkaconf.JavaClient())
	require.Equal(t, kafkaconf.Producer{Acks: kafkaconf.AcksAll, Idempotent: true, MaxInFlight: 1, Retries: 3}, p0.Producer)
	require.Empty(t, p0.Assumed)
	p2 := kafkaconf.ResolveProducer(c.ProducerOf(2), kafkaconf.JavaClient())
	require.Equal(t, kafkaconf.Producer{Acks: kafkaconf.AcksLeader, MaxInFlight: 5, Retries: 3, AppResend: true}, p2.Producer)
	p3 := kafkaconf.ResolveProducer(c.ProducerOf(3), kafkaconf.JavaClient())
	require.True(t, p3.Transactional)
	require.Equal(t, []string{"retries=2147483647"}, p3.Assumed, "old transactional entries left retries out")
	tp := kafkaconf.ResolveTopic(c.TopicOf("verity"))
	require.Equal(t, kafkaconf.Topic{RF: 3, MinISR: 2, FlushMessages: kafkaconf.DefaultFlushMessages}, tp.Topic)
	require.Empty(t, tp.Assumed)
	require.Equal(t, kafkaconf.ReadCommitted, c.ReadIsolation())
	require.Len(t, c.Deviations, 3)
	require.JSONEq(t, `{"name":"default","seed":1}`, string(c.Spec))

	c, err = ParseConfig(json.RawMessage(oldPredictedHeader))
	require.NoError(t, err)
	p1 := kafkaconf.ResolveProducer(c.ProducerOf(1), kafkaconf.JavaClient())
	require.Equal(t, kafkaconf.AcksLeader, p1.Acks)
	require.False(t, p1.Idempotent, "an entry's acks=1 over an idempotent default is a producer without idempotence, not a conflict")
	require.Empty(t, p1.Conflict)
	p7 := kafkaconf.ResolveProducer(c.ProducerOf(7), kafkaconf.JavaClient())
	require.Equal(t, kafkaconf.Producer{Acks: kafkaconf.AcksAll, Idempotent: true, MaxInFlight: 5, Retries: kafkaconf.DefaultRetries}, p7.Producer)
	require.Equal(t, 1, kafkaconf.ResolveTopic(c.TopicOf("loose")).MinISR)
	require.Equal(t, 3, kafkaconf.ResolveTopic(c.TopicOf("loose")).RF)
	require.Equal(t, kafkaconf.ReadUncommitted, c.ReadIsolation())

	for _, empty := range []string{"", "null", "{}"} {
		c, err := ParseConfig(json.RawMessage(empty))
		require.NoError(t, err, empty)
		require.Equal(t, Config{}, c)
	}
}

// A header the checker cannot read fully is an error naming the key: a misspelled setting
// would otherwise be judged at Kafka's default without a word.
func TestParseConfigIsStrict(t *testing.T) {
	for _, c := range []struct {
		raw, key, msg string
	}{
		{`{"scenario":"x","min_isr":2}`, "min_isr", "not a setting Verity writes"},
		{`{"topics":{"t":{"min_isr":2}}}`, `topics["t"]`, `unknown key "min_isr"`},
		{`{"topic":{"replication_factor":3,"unclean":true}}`, "topic", `unknown key "unclean"`},
		{`{"processes":{"3":{"acks":"all","max_inflight":5}}}`, `processes["3"]`, `unknown key "max_inflight"`},
		{`{"producer":{"acks":"most"}}`, "producer", `acks "most": want 0, 1 or all`},
		{`{"producer":{"idempotent":true,"idempotence":false}}`, "producer.idempotent", "beside"},
		{`{"processes":{"p1":{}}}`, `processes["p1"]`, "not a process number"},
		{`{"isolation":"dirty"}`, "isolation", `isolation "dirty"`},
		{`{"faults":"kill"}`, "faults", "cannot unmarshal"},
		{`[1,2]`, "config", "not a JSON object"},
		{`{"client":{"name":"sarama","modul":"x"}}`, "client", `unknown key "modul"`},
		{`{"client":{"module":"x"}}`, "client", `no "name"`},
		{`{"client":{"name":"kafka-java","txn_protocol":"v3"}}`, "client", `transaction protocol "v3"`},
	} {
		_, err := ParseConfig(json.RawMessage(c.raw))
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%s: %v", c.raw, err)
		require.Equal(t, c.key, ce.Key, c.raw)
		require.ErrorContains(t, err, c.msg, c.raw)
	}
}

// A header with a key the checker does not read stops the reader at line 1, naming it.
func TestReaderRefusesAnUnreadableHeader(t *testing.T) {
	in := `{"verity_history":1,"started":"2026-01-01T00:00:00Z","seed":1,"config":{"topics":{"t":{"min_isr":1}}}}` + "\n"
	_, err := NewReader(strings.NewReader(in))
	var le *LineError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Equal(t, 1, le.Line)
	require.ErrorContains(t, err, `topics["t"]: unknown key "min_isr"`)
}

// What the writer writes, the reader reads back the same.
func TestConfigRoundTrip(t *testing.T) {
	all, yes := kafkaconf.AcksAll, true
	cfg := Config{Scenario: "s", Producer: &kafkaconf.ProducerConfig{Delivery: kafkaconf.Delivery{Acks: &all}},
		Processes: map[int]kafkaconf.ProducerConfig{4: {Transactional: &yes}},
		Topics:    map[string]kafkaconf.TopicConfig{"t": {MinInsyncReplicas: new(2)}}, Isolation: kafkaconf.ReadCommitted,
		Faults: []string{"kill"}, Deviations: []string{"a=b"}, Spec: json.RawMessage(`{"name":"s"}`)}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Seed: 5, Config: cfg})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	r, err := NewReader(&buf)
	require.NoError(t, err)
	require.Equal(t, cfg, r.Header().Config)
	require.Equal(t, cfg, cfg.Clone())
	clone := cfg.Clone()
	clone.Processes[5] = kafkaconf.ProducerConfig{}
	clone.Faults[0] = "stop"
	require.Len(t, cfg.Processes, 1, "Clone shares no map")
	require.Equal(t, "kill", cfg.Faults[0], "Clone shares no slice")
}

// A history another tool wrote names its own client: the header is read whatever the name, and
// keeps it, since the checker judges by the settings the header states.
func TestParseConfigTakesAnyClientName(t *testing.T) {
	raw := `{"client":{"name":"kafka-java-verifiable","module":"org.apache.kafka:kafka-tools","version":"4.3.0","txn_protocol":"v2"}}`
	c, err := ParseConfig(json.RawMessage(raw))
	require.NoError(t, err)
	require.Equal(t, &ClientInfo{Name: "kafka-java-verifiable", Module: "org.apache.kafka:kafka-tools", Version: "4.3.0",
		TxnProtocol: kafkaconf.TxnProtocolV2}, c.Client)
	b, err := json.Marshal(c)
	require.NoError(t, err)
	require.JSONEq(t, raw, string(b))
}
