package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

// settings makes command-line settings from flag=value pairs.
func settings(t *testing.T, flags ...string) []Setting {
	t.Helper()
	var out []Setting
	for _, f := range flags {
		name, v, _ := strings.Cut(f, "=")
		k, ok := LookupKnob(name)
		if !ok {
			t.Fatalf("no knob %q", name)
		}
		out = append(out, Setting{Knob: k, Value: v})
	}
	return out
}

func resolved(t *testing.T, name string) Resolved {
	t.Helper()
	s, err := Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOverride(t *testing.T) {
	base := resolved(t, "lab-isr-below-min") // has a producer group with its own acks=1
	s, err := base.Override(settings(t, "acks=1", "min-isr=1", "rf=2", "unclean=true", "isolation=read_uncommitted",
		"nodes=5", "seed=42", "duration=1m30s"))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range s.Workload.Producers {
		pc := s.Client.Producer(g)
		if *pc.Acks != kafkaconf.AcksLeader || pc.Idempotence != nil {
			t.Errorf("group %d after --acks 1: acks %s, idempotence %v (want 1 and Kafka's default)", i, *pc.Acks, pc.Idempotence)
		}
	}
	tp := s.Topics[0]
	if tp.MinInsyncReplicas != 1 || tp.ReplicationFactor != 2 || !tp.UncleanLeaderElection {
		t.Errorf("topic %+v", tp)
	}
	if s.Client.Isolation != kafkaconf.ReadUncommitted || s.Topology.Nodes != 5 || s.Seed != 42 || s.Duration.Std() != 90*time.Second {
		t.Errorf("scenario %+v", s)
	}
	// The original is untouched.
	if *base.Client.Acks != kafkaconf.AcksAll || base.Topics[0].MinInsyncReplicas != 2 || *base.Workload.Producers[2].Acks != kafkaconf.AcksLeader {
		t.Error("Override changed the scenario it was called on")
	}

	// --idempotence forces idempotence on every group, even one with its own acks=1: Kafka
	// refuses that pair, and so does the override.
	if _, err := base.Override(settings(t, "idempotence=true")); err == nil ||
		!strings.Contains(err.Error(), "workload.producers[2].idempotence: enable.idempotence=true needs acks=all (has acks=1)") {
		t.Errorf("--idempotence on an acks=1 group: %v", err)
	}
	s, err = base.Override(settings(t, "acks=all", "idempotence=true"))
	if err != nil {
		t.Fatal(err)
	}
	if pc := s.Client.Producer(s.Workload.Producers[2]); *pc.Acks != kafkaconf.AcksAll || !*pc.Idempotence {
		t.Errorf("--acks all --idempotence: group 2 %+v", pc)
	}
	if s, err = base.Override(settings(t, "acks=-1")); err != nil || *s.Client.Acks != kafkaconf.AcksAll {
		t.Errorf("--acks -1: %v, %v", s.Client.Acks, err)
	}
	// The fault's step follows the duration given beside it, whatever the flags' order.
	if s, err = base.Override(settings(t, "fault=isolate", "duration=30s")); err != nil || s.Faults.Timeline[0].Name != FaultIsolate ||
		s.Faults.Timeline[0].At != sec(10) || s.Faults.Timeline[0].For != sec(10) {
		t.Errorf("--fault isolate --duration 30s: %+v, %v", s.Faults, err)
	}
	// --isolation moves every consumer to the level.
	if s, err = resolved(t, "lab-abort-invisible").Override(settings(t, "isolation=read_uncommitted")); err != nil ||
		s.Workload.Consumers.ReadUncommitted != 2 || s.Workload.Consumers.ReadCommitted != 0 {
		t.Errorf("--isolation read_uncommitted: %+v, %v", s.Workload.Consumers, err)
	}
}

// The client knobs: a capability the scenario requires refuses a client without it, naming it;
// a protocol cap needs a client that speaks it.
// --flush sets flush.messages on every topic, and default takes it (and the brokers' own) away.
func TestOverrideFlush(t *testing.T) {
	base := resolved(t, "default")
	one, err := base.Override(settings(t, "flush=1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range one.Topics {
		if tp.Config["flush.messages"] != "1" {
			t.Errorf("topic %s after --flush 1: %v", tp.Name, tp.Config)
		}
	}
	one.Broker = map[string]string{"log.flush.interval.messages": "7"}
	back, err := one.Override(settings(t, "flush=default"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range back.Topics {
		if _, ok := tp.Config["flush.messages"]; ok {
			t.Errorf("topic %s after --flush default: %v", tp.Name, tp.Config)
		}
	}
	if _, ok := back.Broker["log.flush.interval.messages"]; ok {
		t.Errorf("brokers after --flush default: %v", back.Broker)
	}
}

func TestOverrideClient(t *testing.T) {
	s, err := resolved(t, "eos-coordinator-kill").Override(settings(t, "client=franz-go", "txn-protocol=v1"))
	if err != nil || s.Client.Name != kafkaconf.FranzGo || s.Client.TxnProtocol != kafkaconf.TxnProtocolV1 {
		t.Errorf("--client franz-go --txn-protocol v1: %+v, %v", s.Client, err)
	}
	if _, err := resolved(t, "eos-coordinator-kill").Override(settings(t, "txn-protocol=v2")); err == nil ||
		!strings.Contains(err.Error(), "client.txn_protocol: v2: sarama speaks transaction protocol v1 only") {
		t.Errorf("--txn-protocol v2 with sarama: %v", err)
	}
	_, err = resolved(t, "idempotent-inflight5-ack-loss").Override(settings(t, "client=sarama"))
	if err == nil || !strings.Contains(err.Error(), "requires[0]: idempotent-in-flight-5: the scenario needs it and client sarama lacks it") {
		t.Errorf("--client sarama on a scenario that needs 5 idempotent requests in flight: %v", err)
	}
}

func TestOverrideErrors(t *testing.T) {
	cases := []struct {
		name  string
		flags []string
		want  []string
	}{
		{"acks value", []string{"acks=2"}, []string{`--acks: acks "2": want 0, 1 or all`}},
		{"min ISR value", []string{"min-isr=0"}, []string{"--min-isr: 0: want at least 1 replica(s)"}},
		{"rf value", []string{"rf=-1"}, []string{"--rf: -1: want at least 1 replica(s)"}},
		{"rf not a number", []string{"rf=three"}, []string{`--rf: "three": want a whole number`}},
		{"isolation value", []string{"isolation=dirty"}, []string{`--isolation: isolation "dirty": want read_committed or read_uncommitted`}},
		{"nodes value", []string{"nodes=0"}, []string{"--nodes: 0: want 1 to 50 brokers"}},
		{"unclean value", []string{"unclean=maybe"}, []string{`--unclean: "maybe": want true or false`}},
		{"flush value", []string{"flush=0"}, []string{`--flush: "0" is not a count of appends: want a positive integer (1 fsyncs every append), or default`}},
		{"fault value", []string{"fault=meteor"}, []string{`--fault: fault "meteor": want one of kill`}},
		{"duration value", []string{"duration=25h"}, []string{"--duration: 25h: want a positive duration up to 24h"}},
		{"rf below min ISR", []string{"rf=1"},
			[]string{"scenario default with --rf=1: topics[0].min_insync_replicas: 2 is more than replication_factor 1"}},
		{"min ISR above RF", []string{"min-isr=4"},
			[]string{"with --min-isr=4: topics[0].min_insync_replicas: 4 is more than replication_factor 3"}},
		{"nodes below RF", []string{"nodes=2"},
			[]string{"with --nodes=2: topics[0].replication_factor: 3 is more than topology.nodes 2"}},
		{"idempotence with acks 1", []string{"acks=1", "idempotence=true"},
			[]string{"--acks=1 --idempotence=true: client.idempotence: enable.idempotence=true needs acks=all (has acks=1): Kafka refuses to start such a producer"}},
		{"client value", []string{"client=librdkafka"}, []string{`--client: client "librdkafka": want one of sarama, franz-go`}},
		{"protocol without transactions", []string{"txn-protocol=v1"},
			[]string{"with --txn-protocol=v1: client.txn_protocol: set, but the workload has no transactional producers or processors"}},
		{"duration before a step", []string{"duration=10s"},
			[]string{"faults.timeline[0].at: 20s is not before the end of the run (duration 10s)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := resolved(t, "default").Override(settings(t, c.flags...))
			if err == nil {
				t.Fatalf("no error for %v", c.flags)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Errorf("error %T does not unwrap to Errors", err)
			}
		})
	}
}

func TestSettingFlags(t *testing.T) {
	got := strings.Join(Flags(settings(t, "acks=all", "min-isr=2", "seed=3", "duration=1m30s")), " ")
	if got != "--acks=all --min-isr=2 --seed=3 --duration=1m30s" {
		t.Errorf("Flags = %q", got)
	}
}

// The knobs the checker judges by force the same settings onto a history's header as onto a
// scenario: every plain producer (not the transactional ones, whose acks Kafka fixes) and every
// topic; the others are refused for a header.
func TestOverrideHeader(t *testing.T) {
	yes, two, three := true, 2, 3
	all := kafkaconf.AcksAll
	h := history.Config{
		Processes: map[int]kafkaconf.ProducerConfig{
			0: {Delivery: kafkaconf.Delivery{Acks: &all, Idempotence: &yes}},
			1: {Delivery: kafkaconf.Delivery{Acks: &all, Idempotence: &yes}, Transactional: &yes},
		},
		Topics: map[string]kafkaconf.TopicConfig{"t": {ReplicationFactor: &three, MinInsyncReplicas: &two}},
	}
	got, err := OverrideHeader(h, settings(t, "acks=1", "min-isr=1", "unclean=true", "flush=1"))
	if err != nil {
		t.Fatal(err)
	}
	p0 := kafkaconf.ResolveProducer(got.ProducerOf(0), kafkaconf.JavaClient())
	if p0.Acks != kafkaconf.AcksLeader || p0.Idempotent || p0.Conflict != "" {
		t.Errorf("process 0 after --acks 1: %+v (want acks=1 and Kafka's default idempotence for it, off)", p0)
	}
	p1 := kafkaconf.ResolveProducer(got.ProducerOf(1), kafkaconf.JavaClient())
	if p1.Acks != kafkaconf.AcksAll || !p1.Transactional || p1.Conflict != "" {
		t.Errorf("the transactional process 1 after --acks 1: %+v (want untouched)", p1)
	}
	if p := kafkaconf.ResolveProducer(got.ProducerOf(7), kafkaconf.JavaClient()); p.Acks != kafkaconf.AcksLeader {
		t.Errorf("an unlisted process after --acks 1: %+v", p)
	}
	tp := kafkaconf.ResolveTopic(got.TopicOf("t"))
	if tp.RF != 3 || tp.MinISR != 1 || !tp.Unclean || !tp.FlushEach() {
		t.Errorf("topic t: %+v", tp)
	}
	if other := kafkaconf.ResolveTopic(got.TopicOf("other")); other.MinISR != 1 || !other.Unclean {
		t.Errorf("an unlisted topic: %+v", other)
	}
	if *h.Processes[0].Acks != kafkaconf.AcksAll || *h.Topics["t"].MinInsyncReplicas != 2 {
		t.Error("OverrideHeader changed the config it was given")
	}
	for _, f := range []string{"nodes=3", "seed=1", "fault=kill", "duration=1m", "isolation=read_committed"} {
		if _, err := OverrideHeader(h, settings(t, f)); err == nil || !strings.Contains(err.Error(), "not a setting the checker judges by") {
			t.Errorf("%s on a header: %v", f, err)
		}
	}
	if _, err := OverrideHeader(h, settings(t, "acks=2")); err == nil || !strings.Contains(err.Error(), "--acks") {
		t.Errorf("a bad value: %v", err)
	}
}

// Every knob applies to a scenario; the axes and the header knobs are the expected ones.
func TestKnobTable(t *testing.T) {
	var axes, header []string
	for _, k := range Knobs() {
		if k.Scenario == nil || k.Usage == "" || k.Name == "" {
			t.Errorf("knob %+v: every knob needs a name, a usage and a scenario side", k)
		}
		if k.Axis {
			axes = append(axes, k.Name)
		}
		if k.Header != nil {
			header = append(header, k.Name)
		}
	}
	for _, a := range []string{"acks", "min-isr", "rf", "unclean", "flush", "idempotence", "isolation", "nodes", "fault", "client", "txn-protocol", "max-stall", "recover-within"} {
		if !slices.Contains(axes, a) {
			t.Errorf("axes %v lack %s", axes, a)
		}
	}
	for _, a := range []string{"acks", "min-isr", "rf", "unclean", "flush", "idempotence", "max-stall", "recover-within"} {
		if !slices.Contains(header, a) {
			t.Errorf("header knobs %v lack %s", header, a)
		}
	}
	for _, no := range []string{"seed", "duration", "nodes", "fault", "isolation", "client", "txn-protocol"} {
		if slices.Contains(header, no) {
			t.Errorf("%s is not a setting the checker judges by", no)
		}
	}
}
