package guarantee

import (
	"strings"
	"testing"

	"github.com/verity-kafka/verity/kafkaconf"
)

func p[T any](v T) *T { return &v }

// facts are the circumstances of a send by a producer asked for prod (as Kafka's Java client
// resolves it) to a topic with topic's settings.
func facts(prod kafkaconf.Delivery, topic kafkaconf.TopicConfig, faults Faults) Facts {
	return Facts{HasWriter: true, Producer: kafkaconf.ResolveProducer(kafkaconf.ProducerConfig{Delivery: prod}, kafkaconf.JavaClient()),
		WriterKind: WriterSend, Topic: kafkaconf.ResolveTopic(topic), Faults: faults}
}

type (
	Producer = kafkaconf.Delivery
	Topic    = kafkaconf.TopicConfig
	Acks     = kafkaconf.Acks
)

const AcksAll = kafkaconf.AcksAll

var (
	strictTopic = Topic{ReplicationFactor: p(3), MinInsyncReplicas: p(2), UncleanLeaderElection: p(false)}
	idem        = Producer{Acks: p(AcksAll), Idempotence: p(true)}
)

// Every family ends in a catch-all row, so a finding is never left unjudged for lack of a row.
func TestEveryAnomalyHasACatchAll(t *testing.T) {
	rules := Rules()
	for _, a := range Anomalies() {
		var last *Rule
		for i := range rules {
			if rules[i].Anomaly == a {
				last = &rules[i]
			}
		}
		if last == nil {
			t.Errorf("%s: no row", a)
			continue
		}
		if !last.Match(Facts{}) {
			t.Errorf("%s: last row %q is not a catch-all", a, last.When)
		}
	}
	for i, r := range rules {
		if r.Why == "" || r.When == "" {
			t.Errorf("row %d (%s) lacks its condition or reason", i, r.Anomaly)
		}
		if strings.Contains(Explain(r.Why, Facts{}), "{") {
			t.Errorf("row %d (%s): unknown placeholder in %q", i, r.Anomaly, r.Why)
		}
	}
}

func TestJudge(t *testing.T) {
	cases := []struct {
		name   string
		a      Anomaly
		f      Facts
		want   Judgement
		whyHas string
	}{
		{"acks=all min ISR 2: loss forbidden", LostWrite, facts(idem, strictTopic, Faults{}), Forbidden, "min.insync.replicas=2"},
		{"acks=1: loss permitted", LostWrite, facts(Producer{Acks: p(Acks(1))}, strictTopic, Faults{}), Permitted, "acks=1"},
		{"acks=0: loss permitted", LostWrite, facts(Producer{Acks: p(Acks(0))}, strictTopic, Faults{}), Permitted, "acks=0"},
		{"unclean topic: loss permitted", LostWrite, facts(idem, Topic{ReplicationFactor: p(3), MinInsyncReplicas: p(2), UncleanLeaderElection: p(true)}, Faults{}), Permitted, "unclean"},
		{"forced unclean election: loss permitted", LostWrite, facts(idem, strictTopic, Faults{UncleanElection: true}), Permitted, "unclean"},
		{"RF 1 with disk loss", LostWrite, facts(idem, Topic{ReplicationFactor: p(1), MinInsyncReplicas: p(1)}, Faults{DiskLossNodes: 1}), Permitted, "only copy"},
		{"RF 1 without disk loss", LostWrite, facts(idem, Topic{ReplicationFactor: p(1), MinInsyncReplicas: p(1)}, Faults{}), Forbidden, "leader's disk"},
		{"min ISR 1 with disk loss", LostWrite, facts(idem, Topic{ReplicationFactor: p(3), MinInsyncReplicas: p(1)}, Faults{DiskLossNodes: 1}), Permitted, "min.insync.replicas=1"},
		{"min ISR 2, one disk lost", LostWrite, facts(idem, strictTopic, Faults{DiskLossNodes: 1}), Forbidden, "one broker loss"},
		{"min ISR 2, two disks lost", LostWrite, facts(idem, strictTopic, Faults{DiskLossNodes: 2}), Permitted, "beyond the documented guarantee"},
		{"min ISR above RF: unknown", LostWrite, facts(idem, Topic{ReplicationFactor: p(1), MinInsyncReplicas: p(2)}, Faults{}), Unknown, "exceeds the replication factor"},
		{"idempotence with acks=1: unknown", LostWrite, facts(Producer{Acks: p(Acks(1)), Idempotence: p(true)}, strictTopic, Faults{}), Unknown, "enable.idempotence=true needs acks=all"},
		{"idempotent duplicate forbidden", Duplicate, facts(idem, strictTopic, Faults{}), Forbidden, "idempotence=true"},
		{"idempotent duplicate after power loss on every replica: permitted", Duplicate, facts(idem, strictTopic, Faults{PowerLossNodes: 3}), Permitted, "producer sequences"},
		{"idempotent duplicate after power loss on one replica: forbidden", Duplicate, facts(idem, strictTopic, Faults{PowerLossNodes: 1}), Forbidden, "idempotence=true"},
		{"idempotent duplicate after two disks lost: permitted", Duplicate, facts(idem, strictTopic, Faults{DiskLossNodes: 2}), Permitted, "producer sequences"},
		{"idempotent reorder after an unclean election: permitted", Reorder, facts(idem, strictTopic, Faults{UncleanElection: true}), Permitted, "new session"},
		{"idempotent reorder after power loss on every replica: permitted", Reorder, facts(idem, strictTopic, Faults{PowerLossNodes: 3}), Permitted, "new session"},
		{"idempotent reorder after two disks lost: permitted", Reorder, facts(idem, strictTopic, Faults{DiskLossNodes: 2}), Permitted, "new session"},
		{"idempotent reorder after power loss on one replica: forbidden", Reorder, facts(idem, strictTopic, Faults{PowerLossNodes: 1}), Forbidden, "sequence numbers"},
		{"retrying plain producer duplicate permitted", Duplicate, facts(Producer{Acks: p(AcksAll), Idempotence: p(false), Retries: p(3)}, strictTopic, Faults{}), Permitted, "retries=3"},
		{"plain producer without retries: duplicate forbidden", Duplicate, facts(Producer{Acks: p(AcksAll), Idempotence: p(false), Retries: p(0)}, strictTopic, Faults{}), Forbidden, "retries=0"},
		{"default producer is idempotent", Duplicate, facts(Producer{}, strictTopic, Faults{}), Forbidden, "idempotence=true"},
		{"acks=1 turns default idempotence off", Duplicate, facts(Producer{Acks: p(Acks(1))}, strictTopic, Faults{}), Permitted, "idempotence=false"},
		{"reorder: plain, in-flight 5", Reorder, facts(Producer{Idempotence: p(false), MaxInFlight: p(5), Retries: p(1)}, strictTopic, Faults{}), Permitted, "max.in.flight.requests.per.connection=5"},
		{"reorder: plain, in-flight 1", Reorder, facts(Producer{Idempotence: p(false), MaxInFlight: p(1), Retries: p(1)}, strictTopic, Faults{}), Forbidden, "one request at a time"},
		{"reorder: idempotent", Reorder, facts(idem, strictTopic, Faults{}), Forbidden, "sequence numbers"},
		{"unexpected ack, acks=all", UnexpectedAck, facts(idem, strictTopic, Faults{}), Forbidden, "NOT_ENOUGH_REPLICAS"},
		{"poll skip with unclean election", PollSkip, facts(idem, strictTopic, Faults{UncleanElection: true}), Permitted, "OFFSET_OUT_OF_RANGE"},
		{"zombie write", ZombieWrite, Facts{}, Forbidden, "fences the old one"},
		{"partial transaction", PartialTransaction, facts(idem, strictTopic, Faults{}), Forbidden, "atomic"},
		{"partial transaction after an unclean election", PartialTransaction, facts(idem, strictTopic, Faults{UncleanElection: true}), Permitted, "truncated"},
		{"eos-missing after two disks lost", EOSMissing, facts(idem, strictTopic, Faults{DiskLossNodes: 2}), Permitted, "truncated"},
		{"eos-missing", EOSMissing, facts(idem, strictTopic, Faults{DiskLossNodes: 1}), Forbidden, "exactly-once"},
		{"zombie write under protocol v2", ZombieWrite, Facts{TxnProtocol: kafkaconf.TxnProtocolV2}, Forbidden, "KIP-890"},
		{"zombie write under protocol v1", ZombieWrite, Facts{TxnProtocol: kafkaconf.TxnProtocolV1}, Forbidden, "AddPartitionsToTxn"},
		{"eos-duplicate with franz-go", EOSDuplicate, Facts{Client: kafkaconf.FranzGo}, Forbidden, "rewinds to the committed offsets"},
		{"eos-duplicate with sarama", EOSDuplicate, Facts{Client: kafkaconf.Sarama}, Forbidden, "new group session"},
		{"metadata lost, no fault", MetadataLost, Facts{Faults: Faults{Controllers: 3}}, Forbidden, "never goes back"},
		{"metadata lost, power loss on 1 of 3 controllers", MetadataLost, Facts{Faults: Faults{Controllers: 3, ControllerPowerLoss: 1}}, Forbidden, "fewer than a majority"},
		{"metadata lost, power loss on 2 of 3 controllers", MetadataLost, Facts{Faults: Faults{Controllers: 3, ControllerPowerLoss: 2}}, Unknown, "power loss on 2 of 3 controllers"},
		{"metadata lost, power loss on 2 of 5 controllers", MetadataLost, Facts{Faults: Faults{Controllers: 5, ControllerPowerLoss: 2}}, Forbidden, "fewer than a majority"},
		{"metadata lost, power loss, quorum not known", MetadataLost, Facts{Faults: Faults{ControllerPowerLoss: 1}}, Unknown, "names no controllers"},
		{"metadata lost, disk loss on unnamed nodes", MetadataLost, Facts{Faults: Faults{Controllers: 3, ControllerDiskLoss: -1}}, Unknown, "names no nodes"},
		{"metadata lost, disk loss, quorum not known", MetadataLost, Facts{Faults: Faults{ControllerDiskLoss: 1}}, Unknown, "not known"},
		{"metadata lost, power loss on 2 of 4 controllers", MetadataLost, Facts{Faults: Faults{Controllers: 4, ControllerPowerLoss: 2}}, Unknown, "half of them or more"},
		{"metadata lost, disk loss on 1 of 3 controllers", MetadataLost, Facts{Faults: Faults{Controllers: 3, ControllerDiskLoss: 1}}, Unknown, "KIP-853"},
		{"metadata lost, disk loss on 2 of 3 controllers", MetadataLost, Facts{Faults: Faults{Controllers: 3, ControllerDiskLoss: 2}}, Permitted, "beyond any guarantee"},
		{"metadata lost, broker power loss only", MetadataLost, Facts{Faults: Faults{Controllers: 3, PowerLossNodes: 3}}, Forbidden, "must survive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Judge(tc.a, tc.f)
			if d.Judgement != tc.want {
				t.Errorf("%s: %s, want %s (why: %s)", tc.a, d.Judgement, tc.want, d.Why)
			}
			if !strings.Contains(d.Why, tc.whyHas) {
				t.Errorf("why %q lacks %q", d.Why, tc.whyHas)
			}
		})
	}
	if d := Judge("no-such-anomaly", Facts{}); d.Judgement != Unknown || d.Rule != -1 {
		t.Errorf("an unknown anomaly name: %+v", d)
	}
}

func TestRulesIsACopy(t *testing.T) {
	rs := Rules()
	rs[0].Why = "changed"
	if Rules()[0].Why == "changed" {
		t.Fatal("Rules returned the table itself")
	}
}

func TestJudgementText(t *testing.T) {
	for _, j := range []Judgement{Unknown, Permitted, Forbidden} {
		b, err := j.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Judgement
		if err := back.UnmarshalText(b); err != nil || back != j {
			t.Errorf("%s: read back as %s, %v", b, back, err)
		}
	}
	var j Judgement
	if err := j.UnmarshalText([]byte("allowed")); err == nil {
		t.Error("an unknown judgement was read")
	}
	if Worst(Permitted, Unknown) != Unknown || Worst(Unknown, Forbidden, Permitted) != Forbidden || Worst() != Permitted {
		t.Error("Worst orders forbidden, unknown, permitted")
	}
}

func TestParseAnomaly(t *testing.T) {
	for _, a := range Anomalies() {
		if got, err := ParseAnomaly(string(a)); err != nil || got != a {
			t.Errorf("%s: %s, %v", a, got, err)
		}
	}
	if _, err := ParseAnomaly("lost-writes"); err == nil || !strings.Contains(err.Error(), "lost-write") {
		t.Errorf("an unknown name: %v", err)
	}
}

// A known issue explains a finding the table forbids, under its conditions only, and never
// turns it permitted.
func TestKnownIssues(t *testing.T) {
	flushEach := strictTopic
	flushEach.FlushMessages = p(int64(1))
	allLostPower := Faults{Kinds: []string{FaultPowerLoss}, PowerLossNodes: 3}
	inFlight := func(n int) Producer { d := idem; d.MaxInFlight = p(n); return d }
	cases := []struct {
		name string
		f    Facts
		want KnownIssue
	}{
		{"five in flight, every replica lost power", facts(inFlight(5), flushEach, allLostPower), ResendAfterSnapshotReload},
		{"one in flight: the snapshot keeps the only unanswered batch", facts(inFlight(1), flushEach, allLostPower), ""},
		{"two of three replicas lost power: a replica kept its memory", facts(inFlight(5), flushEach, Faults{Kinds: []string{FaultPowerLoss}, PowerLossNodes: 2}), ""},
		{"power loss on nodes not known", facts(inFlight(5), flushEach, Faults{Kinds: []string{FaultPowerLoss}, PowerLossNodes: -1}), ""},
		{"no power loss", facts(inFlight(5), flushEach, Faults{}), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Judge(Duplicate, c.f)
			if d.Judgement != Forbidden {
				t.Fatalf("a duplicate of an idempotent send with flush.messages=1 is %s (%s), want forbidden", d.Judgement, d.Why)
			}
			if d.Known != c.want {
				t.Errorf("known issue %q, want %q", d.Known, c.want)
			}
		})
	}
	// A transactional writer's duplicate is not the plain producer's resend.
	txn := facts(inFlight(5), flushEach, allLostPower)
	txn.WriterKind = WriterTxn
	if d := Judge(Duplicate, txn); d.Known != "" {
		t.Errorf("a transactional write's duplicate is explained by %q", d.Known)
	}
	// Without flush.messages=1 the same duplicate is permitted: a known issue never touches it.
	if d := Judge(Duplicate, facts(inFlight(5), strictTopic, allLostPower)); d.Judgement != Permitted || d.Known != "" {
		t.Errorf("default flush: %s, known %q; want permitted, none", d.Judgement, d.Known)
	}
	for _, k := range KnownIssues() {
		if k.When == "" || k.About == "" || k.Shown == "" || k.Match == nil {
			t.Errorf("%s: says too little", k.Issue)
		}
		var back KnownIssue
		if err := back.UnmarshalText([]byte(k.Issue)); err != nil || back != k.Issue {
			t.Errorf("%s does not read back: %v", k.Issue, err)
		}
	}
	var k KnownIssue
	if err := k.UnmarshalText([]byte("flaky")); err == nil {
		t.Error("an unknown known issue was read")
	}
}
