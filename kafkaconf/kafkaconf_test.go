package kafkaconf

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestAcks(t *testing.T) {
	for in, want := range map[string]Acks{`"all"`: AcksAll, `-1`: AcksAll, `"-1"`: AcksAll, `1`: AcksLeader, `"0"`: AcksNone, `" ALL "`: AcksAll} {
		var a Acks
		if err := json.Unmarshal([]byte(in), &a); err != nil || a != want {
			t.Errorf("%s: %v %v", in, a, err)
		}
	}
	for _, bad := range []string{`"2"`, `2`, `"most"`, `null`} {
		var a Acks
		if err := json.Unmarshal([]byte(bad), &a); err == nil {
			t.Errorf("acks %s must be rejected", bad)
		}
	}
	for a, want := range map[Acks]string{AcksAll: `"all"`, AcksLeader: `"1"`, AcksNone: `"0"`} {
		if b, err := json.Marshal(a); err != nil || string(b) != want {
			t.Errorf("marshal %d: %s %v", a, b, err)
		}
	}
	if _, err := json.Marshal(Acks(2)); err == nil {
		t.Error("acks 2 was written")
	}
}

func TestParsers(t *testing.T) {
	if v, err := ParseIsolation("read_committed"); err != nil || v != ReadCommitted {
		t.Errorf("isolation: %v %v", v, err)
	}
	if _, err := ParseIsolation("serializable"); err == nil {
		t.Error("an unknown isolation was read")
	}
	if v, err := ParseCompression("ZSTD"); err != nil || v != CompressionZstd {
		t.Errorf("compression: %v %v", v, err)
	}
	if _, err := ParseCompression("brotli"); err == nil || !strings.Contains(err.Error(), "none, gzip, snappy, lz4, zstd") {
		t.Errorf("an unknown codec: %v", err)
	}
	for in, want := range map[string]string{"90s": "1m30s", "0": "0s", "250ms": "250ms", "2h": "2h"} {
		d, err := ParseDuration(in)
		if err != nil || d.String() != want {
			t.Errorf("duration %s: %s %v", in, d, err)
		}
	}
	if _, err := ParseDuration("60"); err == nil {
		t.Error("a duration without a unit was read")
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"1m30s"`), &d); err != nil || d.String() != "1m30s" {
		t.Errorf("duration JSON: %s %v", d, err)
	}
}

// Kafka's rules, with Kafka's own client: every default, and every conflict Kafka refuses to
// start with.
func TestResolveProducerKafkaRules(t *testing.T) {
	r := ResolveProducer(ProducerConfig{}, JavaClient())
	if r.Acks != AcksAll || !r.Idempotent || r.MaxInFlight != 5 || r.Retries != DefaultRetries || r.Conflict != "" || len(r.Departures) != 0 {
		t.Errorf("Kafka 4.3's default producer: %+v", r)
	}
	if want := []string{"acks=all", "max.in.flight.requests.per.connection=5", "retries=2147483647", "enable.idempotence=true"}; !slices.Equal(r.Assumed, want) {
		t.Errorf("assumed %q, want %q", r.Assumed, want)
	}
	cases := []struct {
		name       string
		c          ProducerConfig
		idempotent bool
		conflict   string
	}{
		{"acks=1 turns the default off", ProducerConfig{Delivery: Delivery{Acks: new(AcksLeader)}}, false, ""},
		{"retries 0 turns the default off", ProducerConfig{Delivery: Delivery{Retries: new(0)}}, false, ""},
		{"6 in flight turns the default off", ProducerConfig{Delivery: Delivery{MaxInFlight: new(6)}}, false, ""},
		{"5 in flight keeps it", ProducerConfig{Delivery: Delivery{MaxInFlight: new(5)}}, true, ""},
		{"asked with acks=1", ProducerConfig{Delivery: Delivery{Acks: new(AcksLeader), Idempotence: new(true)}}, true, "needs acks=all (has acks=1)"},
		{"asked with 6 in flight", ProducerConfig{Delivery: Delivery{MaxInFlight: new(6), Idempotence: new(true)}}, true, "at most 5 (has 6)"},
		{"transactional", ProducerConfig{Transactional: new(true)}, true, ""},
		{"transactional without idempotence", ProducerConfig{Transactional: new(true), Delivery: Delivery{Idempotence: new(false)}}, true, "enable.idempotence=false"},
		{"transactional with acks=0", ProducerConfig{Transactional: new(true), Delivery: Delivery{Acks: new(AcksNone)}}, true, "needs acks=all"},
		{"in flight 0", ProducerConfig{Delivery: Delivery{MaxInFlight: new(0)}}, true, "below 1"},
		{"negative retries", ProducerConfig{Delivery: Delivery{Retries: new(-1)}}, false, "negative"},
		{"acks 2", ProducerConfig{Delivery: Delivery{Acks: new(Acks(2))}}, false, "not 0, 1 or all"},
	}
	for _, c := range cases {
		r := ResolveProducer(c.c, JavaClient())
		if r.Idempotent != c.idempotent || (c.conflict == "") != (r.Conflict == "") || !strings.Contains(r.Conflict, c.conflict) {
			t.Errorf("%s: idempotent %t, conflict %q; want %t, %q", c.name, r.Idempotent, r.Conflict, c.idempotent, c.conflict)
		}
	}
	if r := ResolveProducer(ProducerConfig{Transactional: new(true)}, JavaClient()); slices.Contains(r.Assumed, "acks=all") {
		t.Errorf("a transactional producer's acks=all is Kafka's rule, not an assumption: %q", r.Assumed)
	}
}

// A client's limits apply after Kafka's rules, each said as a departure; a producer whose
// settings are all stated resolves to itself.
func TestResolveProducerClientLimits(t *testing.T) {
	small := Client{Name: "small", MaxIdempotentInFlight: 1, DefaultRetries: 3}
	r := ResolveProducer(ProducerConfig{}, small)
	if !r.Idempotent || r.MaxInFlight != 1 || r.Retries != 3 || len(r.Departures) != 2 {
		t.Errorf("%+v", r)
	}
	again := ResolveProducer(r.Config(), small)
	if again.Producer != r.Producer || len(again.Assumed) != 0 || len(again.Departures) != 0 {
		t.Errorf("resolving a resolved producer: %+v, want %+v with nothing assumed or departed", again, r.Producer)
	}
	if plain := ResolveProducer(ProducerConfig{Delivery: Delivery{Idempotence: new(false)}}, small); plain.MaxInFlight != 5 {
		t.Errorf("the in-flight limit is the idempotent producer's only: %+v", plain)
	}
}

func TestDeliveryOver(t *testing.T) {
	client := Delivery{Acks: new(AcksAll), Idempotence: new(true), Retries: new(7)}
	// A group's acks=1 without idempotence drops the client's idempotence (Kafka's default
	// for acks=1 applies) and keeps the rest.
	g := Delivery{Acks: new(AcksLeader)}.Over(client)
	if *g.Acks != AcksLeader || g.Idempotence != nil || *g.Retries != 7 {
		t.Errorf("%+v", g)
	}
	// Its own idempotence stays, even if Kafka then refuses the pair.
	g = Delivery{Acks: new(AcksLeader), Idempotence: new(true)}.Over(client)
	if g.Idempotence == nil || !*g.Idempotence {
		t.Errorf("%+v", g)
	}
	if g = (Delivery{}).Over(client); *g.Acks != AcksAll || !*g.Idempotence {
		t.Errorf("nothing over the client: %+v", g)
	}
	pc := ProducerConfig{AppResend: new(true)}.Over(ProducerConfig{Delivery: client, Transactional: new(false)})
	if !*pc.AppResend || *pc.Transactional || *pc.Retries != 7 {
		t.Errorf("%+v", pc)
	}
}

func TestResolveTopic(t *testing.T) {
	r := ResolveTopic(TopicConfig{})
	if r.RF != 1 || r.MinISR != 1 || r.Unclean || len(r.Assumed) != 3 || r.Conflict != "" {
		t.Errorf("Kafka 4.3's topic defaults: %+v", r)
	}
	if r := ResolveTopic(TopicConfig{ReplicationFactor: new(1), MinInsyncReplicas: new(2)}); !strings.Contains(r.Conflict, "exceeds") {
		t.Errorf("min ISR above RF: %+v", r)
	}
	if r.FlushMessages != DefaultFlushMessages || r.FlushEach() {
		t.Errorf("Kafka never fsyncs per append by default: %+v", r)
	}
	for _, full := range []Topic{{RF: 3, MinISR: 2, Unclean: true, FlushMessages: DefaultFlushMessages}, {RF: 3, MinISR: 2, FlushMessages: 1}} {
		if r := ResolveTopic(full.Config()); r.Topic != full || len(r.Assumed) != 0 {
			t.Errorf("a stated topic: %+v", r)
		}
	}
	full := Topic{RF: 3, MinISR: 2, Unclean: true, FlushMessages: DefaultFlushMessages}
	if r := ResolveTopic(TopicConfig{FlushMessages: new(int64(0))}); !strings.Contains(r.Conflict, "flush.messages") {
		t.Errorf("flush.messages 0: %+v", r)
	}
	for _, c := range []struct {
		topic, broker map[string]string
		want          string
	}{
		{nil, nil, "<nil>"},
		{map[string]string{"flush.messages": "1"}, map[string]string{"log.flush.interval.messages": "5"}, "1"},
		{nil, map[string]string{"log.flush.interval.messages": "5"}, "5"},
		{map[string]string{"flush.messages": "0"}, nil, "error"},
		{map[string]string{"flush.messages": "x"}, nil, "error"},
	} {
		got, err := FlushMessagesOf(c.topic, c.broker)
		s := "<nil>"
		switch {
		case err != nil:
			s = "error"
		case got != nil:
			s = strconv.FormatInt(*got, 10)
		}
		if s != c.want {
			t.Errorf("FlushMessagesOf(%v, %v) = %s (%v), want %s", c.topic, c.broker, s, err, c.want)
		}
	}
	if got := (TopicConfig{MinInsyncReplicas: new(1)}).Over(full.Config()); *got.MinInsyncReplicas != 1 || *got.ReplicationFactor != 3 {
		t.Errorf("Over: %+v", got)
	}
}

func TestKafkaVersions(t *testing.T) {
	for _, s := range KafkaVersions() {
		if v, err := ParseKafkaVersion(" " + s + " "); err != nil || string(v) != s {
			t.Errorf("ParseKafkaVersion(%q) = %q, %v", s, v, err)
		}
	}
	for _, bad := range []string{"", "4.3", "4.3.0", "5.0.0", "latest"} {
		if _, err := ParseKafkaVersion(bad); err == nil || !strings.Contains(err.Error(), "want one of 3.9.2") {
			t.Errorf("ParseKafkaVersion(%q): want an error listing the releases, got %v", bad, err)
		}
	}
	if !KafkaVersion("4.1.2").AtLeast(4, 1) || KafkaVersion("3.9.2").AtLeast(4, 0) || !KafkaVersion("").AtLeast(4, 3) {
		t.Error("AtLeast misorders releases")
	}
	if !slices.Contains(KafkaVersions(), string(DefaultKafkaVersion)) {
		t.Errorf("the default %s is not a release", DefaultKafkaVersion)
	}
}

func TestFeatures(t *testing.T) {
	if f, err := ParseFeature("transaction.version"); err != nil || f != FeatureTransaction {
		t.Errorf("ParseFeature: %q, %v", f, err)
	}
	if _, err := ParseFeature("metadata.version"); err == nil {
		t.Error("metadata.version must not be settable by a scenario")
	}
	for _, bad := range []string{"-1", "x", "70000"} {
		if _, err := ParseFeatureLevel(bad); err == nil {
			t.Errorf("ParseFeatureLevel(%q) accepted", bad)
		}
	}
	l := FeatureLevels{FeatureTransaction: 2, FeatureMetadata: 27}
	if got := l.String(); got != "metadata.version=27 transaction.version=2" {
		t.Errorf("String() = %q", got)
	}
	if l.Level(FeatureELR) != 0 {
		t.Error("an absent feature is at level 0")
	}
}

func TestParseClientRef(t *testing.T) {
	for in, want := range map[string]struct {
		name    ClientName
		version string
	}{
		"sarama":                {Sarama, ""},
		" franz-go ":            {FranzGo, ""},
		"sarama@v1.61.0":        {Sarama, "v1.61.0"},
		"franz-go@v1.21.5":      {FranzGo, "v1.21.5"},
		"franz-go@v1.22.0-rc.1": {FranzGo, "v1.22.0-rc.1"},
	} {
		n, v, err := ParseClientRef(in)
		if err != nil || n != want.name || v != want.version {
			t.Errorf("ParseClientRef(%q) = %q, %q, %v; want %q, %q", in, n, v, err, want.name, want.version)
		}
	}
	for _, in := range []string{"kafka-go", "sarama@", "sarama@1.61.0", "sarama@v1.61", "sarama@v1.061.0", "sarama@latest", "kafka-go@v1.0.0"} {
		if _, _, err := ParseClientRef(in); err == nil {
			t.Errorf("ParseClientRef(%q): no error", in)
		}
	}
}

func TestUsesOf(t *testing.T) {
	for _, c := range []struct {
		count map[RoleName]int
		want  Uses
	}{
		{nil, Uses{}},
		{map[RoleName]int{RoleProducer: 3, RoleConsumer: 1}, Uses{}},
		{map[RoleName]int{RoleTxnProducer: 1}, Uses{Transactions: true}},
		{map[RoleName]int{RoleProcessor: 2}, Uses{Transactions: true, Groups: true}},
		{map[RoleName]int{RoleGroupConsumer: 1, RoleTxnProducer: 0}, Uses{Groups: true}},
		{map[RoleName]int{RoleSink: 2, RoleProducer: 1}, Uses{Groups: true}},
	} {
		if got := UsesOf(c.count); got != c.want {
			t.Errorf("UsesOf(%v) = %+v, want %+v", c.count, got, c.want)
		}
	}
	names := map[RoleName]bool{}
	for _, r := range Roles() {
		if names[r.Name] {
			t.Errorf("role %s: listed twice", r.Name)
		}
		names[r.Name] = true
	}
}

func TestParseLoggers(t *testing.T) {
	ls, err := ParseLoggers(" kafka.server.share=debug, org.apache.kafka.coordinator.share=TRACE")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ls.String(), "kafka.server.share=DEBUG,org.apache.kafka.coordinator.share=TRACE"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, bad := range []string{"", "kafka.server.share", "kafka.server.share=LOUD", "kafka..share=DEBUG", "kafka share=DEBUG", "=DEBUG", "a=DEBUG,b"} {
		if _, err := ParseLoggers(bad); err == nil {
			t.Errorf("ParseLoggers(%q): no error", bad)
		}
	}
	if got := (Loggers{"kafka.log": "trace"}).String(); got != "kafka.log=TRACE" {
		t.Errorf("a level written in lower case: String() = %q", got)
	}
	if err := (Loggers{"kafka.log": "VERBOSE"}).Validate(); err == nil || !strings.Contains(err.Error(), "kafka.log") {
		t.Errorf("Validate of a bad level = %v, want an error naming the logger", err)
	}
}
