package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/kafkaconf"
)

// minimal is the smallest valid scenario: everything else takes its default.
const minimal = "name: tiny\n"

func TestParseMinimalTakesDefaults(t *testing.T) {
	s, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if s.Topology.Nodes != 3 || len(s.Topics) != 1 || s.Topics[0].Name != DefaultTopic ||
		s.Topics[0].ReplicationFactor != 3 || s.Topics[0].MinInsyncReplicas != 2 || s.Topics[0].Partitions != 3 {
		t.Errorf("defaults not applied: %+v", s)
	}
	// Kafka's settings stay unset: kafkaconf resolves them, once, for every reader.
	if s.Client.Acks != nil || s.Client.Idempotence != nil || s.Client.Isolation != kafkaconf.ReadCommitted ||
		s.Faults.Kind != ScheduleNone || s.Duration != DefaultDuration {
		t.Errorf("client/faults/duration defaults not applied: %+v", s)
	}
	if len(s.Workload.Producers) != 1 || s.Workload.Producers[0].Count != 3 || s.Workload.Consumers.ReadCommitted != 1 {
		t.Errorf("default workload not applied: %+v", s.Workload)
	}
}

// RF and min ISR defaults shrink to fit a small cluster.
func TestParseDefaultsFitOneNode(t *testing.T) {
	s, err := Parse([]byte("name: one\ntopology: {nodes: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tp := s.Topics[0]; tp.ReplicationFactor != 1 || tp.MinInsyncReplicas != 1 {
		t.Errorf("topic %+v on one node, want RF 1 and min ISR 1", tp)
	}
}

func TestParseFullFile(t *testing.T) {
	in := `
name: my-run
description: acks=1 under a periodic leader kill
topology: {nodes: 5, dedicated_controllers: true}
broker:
  replica.lag.time.max.ms: "5000"
topics:
  - {name: a, partitions: 6, replication_factor: 3, min_insync_replicas: 2, unclean_leader_election: true, config: {retention.ms: "600000"}}
  - {name: b}
client:
  acks: 1
  max_in_flight: 1
  retries: 3
  request_timeout: 5s
  delivery_timeout: 20s
  linger: 10ms
  compression: zstd
  isolation: read_uncommitted
workload:
  producers:
    - {count: 2, async: true}
    - {count: 1, topic: b, acks: all, idempotence: true}
  consumers: {read_committed: 1, read_uncommitted: 1}
faults:
  kind: periodic
  periodic:
    interval: 20s
    quiet: 0.25
    set:
      - fault: kill
        target: {role: leader-of, topic: a, partition: 5}
      - fault: compound
        parts:
          - {fault: pause, target: {role: node, node: 101}}
          - {fault: latency, target: {role: random-minority}, params: {delay: 200ms, jitter: 20ms, links: node}}
      - fault: one-way-cut
        target: {role: controller}
        params: {to: {role: node, node: 2}, cut: refuse}
duration: 2m
seed: 99
`
	s, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	p := s.Faults.Periodic
	if *s.Client.Acks != kafkaconf.AcksLeader || p == nil || p.Hold != sec(10) || p.Start != sec(20) || len(p.Set) != 3 ||
		p.Set[1].Parts[1].Params.Delay != sec(0.2) || p.Set[2].Params.To.Node != 2 {
		t.Errorf("parsed %+v", s)
	}
	if got := s.ScheduledFaults(); strings.Join(got, ",") != "kill,latency,one-way-cut,pause" {
		t.Errorf("ScheduledFaults = %v", got)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(minimal), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(path); err != nil || s.Name != "tiny" {
		t.Fatalf("Load = %+v, %v", s, err)
	}
	_, err := Load(filepath.Join(dir, "missing.yaml"))
	if err == nil || !strings.Contains(err.Error(), "loading scenario") {
		t.Errorf("Load of a missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nclinet: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	var es Errors
	if err == nil || !strings.Contains(err.Error(), bad) || !errors.As(err, &es) {
		t.Errorf("Load of a bad file: %v (want the path and Errors)", err)
	}
}

// Every way a scenario file can be wrong gives a message naming the field, what is wrong and
// what the field accepts.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"malformed", "name: [unclosed\n", []string{"reading YAML"}},
		{"empty", "", []string{"the document is empty"}},
		{"two documents", "name: a\n---\nname: b\n", []string{"more than one document"}},
		{"not a mapping", "- name: a\n", []string{"want a mapping of fields", "client"}},
		{"unknown top-level field", "name: x\nclinet:\n  acks: all\n",
			[]string{"clinet: unknown field; the scenario has ", "broker, client, description", "(did you mean client?)", "(line 2)"}},
		{"unknown nested field", "name: x\nclient:\n  ack: all\n",
			[]string{"client.ack: unknown field; client has acks, app_resend", "(did you mean acks?)", "(line 3)"}},
		{"unknown field in a list item", "name: x\ntopics:\n  - name: t\n    min_isr: 2\n",
			[]string{"topics[0].min_isr: unknown field; topics[0] has", "min_insync_replicas", "(line 4)"}},
		{"unknown field in a step", "name: x\nfaults:\n  timeline:\n    - {at: 1s, fault: kill, duraton: 5s, target: {role: controller}}\n",
			[]string{"faults.timeline[0].duraton: unknown field", "at, duration, fault, params, parts, target", "(did you mean duration?)"}},
		{"kafka version", "name: x\nkafka: {version: 4.3.0}\n", []string{`kafka.version: kafka version "4.3.0": want one of 3.9.2, 4.0.2`}},
		{"kafka feature", "name: x\nkafka: {features: {metadata.version: 20, transaction.version: -1}}\n",
			[]string{`kafka.features["metadata.version"]: feature "metadata.version": a scenario may set transaction.version, eligible.leader.replicas.version`,
				`kafka.features["transaction.version"]: -1: want a level of 0 or more`}},
		{"upgrade to an older release", "name: x\nkafka: {version: 4.3.1}\nfaults:\n  timeline:\n    - {at: 5s, fault: rolling-upgrade, params: {version: 4.2.2}}\n",
			[]string{"faults.timeline[0].params.version: 4.2.2: the cluster runs Kafka 4.3.1 (kafka.version); an upgrade goes to a newer release"}},
		{"upgrade without a release", "name: x\nfaults:\n  timeline:\n    - {at: 5s, fault: rolling-upgrade}\n",
			[]string{"faults.timeline[0].params.version: missing: rolling-upgrade needs version"}},
		{"set-feature of a feature not settable", "name: x\nfaults:\n  timeline:\n    - {at: 5s, fault: set-feature, params: {feature: metadata.version, level: 30}}\n",
			[]string{`faults.timeline[0].params.feature: feature "metadata.version": a scenario may set`}},
		{"a stall with a client that has no max.poll.interval.ms", "name: x\nworkload:\n  producers: [{count: 1}]\n  group: {count: 2, stall_every: 10s, max_poll_interval: 3s}\n",
			[]string{"workload.group.stall_every: 10s: sarama has no max.poll.interval.ms"}},
		{"a stall without max_poll_interval", "name: x\nclient: {name: java}\nworkload:\n  producers: [{count: 1}]\n  group: {count: 2, stall_every: 10s}\n",
			[]string{"workload.group.max_poll_interval: missing"}},
		{"regression knob", "name: x\nregression: {bug: B-1, knob: seed, bad: \"1\", fixed: \"2\", shows: [lost-write]}\n",
			[]string{`regression.knob: "seed": want a knob a matrix may vary: acks`}},
		{"regression sides", "name: x\nregression: {knob: acks, bad: all, fixed: all, shows: [lost-write]}\n",
			[]string{"regression.bug: missing", `regression.fixed: "all" is the bad side's value too`}},
		{"regression anomaly", "name: x\nregression: {bug: B-1, knob: acks, bad: \"1\", fixed: all, shows: [lost-wirte]}\n",
			[]string{`regression.shows[0]: anomaly "lost-wirte": want one of`}},
		{"regression value", "name: x\nregression: {bug: B-1, knob: acks, bad: \"2\", fixed: all}\n",
			[]string{`regression.bad: --acks 2: acks "2": want 0, 1 or all`, "regression.shows: missing"}},
		{"acks string", "name: x\nclient: {acks: \"2\"}\n", []string{`client.acks: acks "2": want 0, 1 or all`, "(line 2)"}},
		{"acks number", "name: x\nclient: {acks: 2}\n", []string{`client.acks: acks "2": want 0, 1 or all`}},
		{"group acks", "name: x\nworkload: {producers: [{acks: two}]}\n", []string{`workload.producers[0].acks: acks "two": want 0, 1 or all`}},
		{"min ISR above RF", "name: x\ntopics: [{name: t, replication_factor: 3, min_insync_replicas: 4}]\n",
			[]string{"topics[0].min_insync_replicas: 4 is more than replication_factor 3", "(line 2)"}},
		{"RF above nodes", "name: x\ntopics: [{name: t, replication_factor: 5}]\n",
			[]string{"topics[0].replication_factor: 5 is more than topology.nodes 3"}},
		{"topic setting with its own field", "name: x\ntopics: [{name: t, config: {min.insync.replicas: \"1\"}}]\n",
			[]string{`topics[0].config["min.insync.replicas"]: use topics[0].min_insync_replicas`}},
		{"flush.messages not a count", "name: x\ntopics: [{name: t, config: {flush.messages: \"0\"}}]\nbroker: {log.flush.interval.messages: often}\n",
			[]string{`topics[0].config["flush.messages"]: "0" is not a count of appends`, `broker["log.flush.interval.messages"]: "often" is not a count of appends`}},
		{"partitions not a number", "name: x\ntopics: [{name: t, partitions: three}]\n",
			[]string{`topics[0].partitions: "three": want a whole number`}},
		{"bool not a bool", "name: x\ntopics: [{name: t, unclean_leader_election: sometimes}]\n",
			[]string{`topics[0].unclean_leader_election: "sometimes": want true or false`}},
		{"topics not a list", "name: x\ntopics: verity\n", []string{"topics: want a list"}},
		{"duration without unit", "name: x\nduration: 60\n", []string{`duration: "60": want a duration such as 500ms, 30s or 2m`}},
		{"duration negative", "name: x\nduration: -5s\n", []string{"duration: -5s: want a positive duration"}},
		{"isolation", "name: x\nclient: {isolation: serializable}\n", []string{`client.isolation: isolation "serializable": want read_committed or read_uncommitted`}},
		{"compression", "name: x\nclient: {compression: brotli}\n", []string{`client.compression: compression "brotli": want one of none, gzip, snappy, lz4, zstd`}},
		{"idempotence with acks 1", "name: x\nclient: {acks: 1, idempotence: true}\n", []string{"client.idempotence: enable.idempotence=true needs acks=all (has acks=1): Kafka refuses to start such a producer"}},
		{"idempotence with in-flight 6", "name: x\nclient: {max_in_flight: 6, idempotence: true}\n", []string{"client.idempotence: enable.idempotence=true needs max.in.flight.requests.per.connection at most 5 (has 6)"}},
		{"delivery timeout too short", "name: x\nclient: {delivery_timeout: 10s, request_timeout: 30s}\n", []string{"client.delivery_timeout: 10s is less than linger + request_timeout (30.005s): Kafka refuses it"}},
		{"client name", "name: x\nclient: {name: kafka-python}\n", []string{`client.name: client "kafka-python": want one of sarama, franz-go`}},
		{"crash after commit without crashes", "name: x\nworkload: {processors: {count: 1, crash_after_commit: true}}\n",
			[]string{"workload.processors.crash_after_commit: set, but crash_every is not"}},
		{"client version", "name: x\nclient: {name: sarama, version: latest}\n", []string{`client.version: client version "latest": want a module version such as v1.61.0`}},
		{"protocol the client lacks", "name: x\nclient: {txn_protocol: v2}\nworkload: {transactional: {count: 1}}\n",
			[]string{"client.txn_protocol: v2: sarama speaks transaction protocol v1 only"}},
		{"protocol without transactions", "name: x\nclient: {name: franz-go, txn_protocol: v1}\n",
			[]string{"client.txn_protocol: set, but the workload has no transactional producers or processors"}},
		{"unknown capability", "name: x\nrequires: [teleport]\n", []string{`requires[0]: capability "teleport": want one of idempotent-in-flight-5`}},
		{"capability the client lacks", "name: x\nrequires: [truncation-detection]\n",
			[]string{"requires[0]: truncation-detection: the scenario needs it and client sarama lacks it"}},
		{"transactions without transactional workload", "name: x\nclient: {transactions: {abort_probability: 0.2}}\n",
			[]string{"client.transactions: set, but the workload has no transactional producers or processors"}},
		{"abort probability", "name: x\nclient: {transactions: {abort_probability: 1.5}}\nworkload: {transactional: {count: 1}}\n",
			[]string{"client.transactions.abort_probability: 1.5: want 0 to below 1"}},
		{"producer topic", "name: x\nworkload: {producers: [{topic: nope}]}\n", []string{`workload.producers[0].topic: "nope" is not a topic of the scenario (topics: verity)`}},
		{"processor needs two topics", "name: x\nworkload: {processors: {count: 1}}\n", []string{"workload.processors.output: missing: name one of the topics (verity)"}},
		{"nothing written", "name: x\nworkload: {consumers: {read_committed: 1}}\n", []string{"workload: no producers, transactional producers or processors"}},
		{"name", "name: My Scenario\n", []string{`name: "My Scenario": want lower-case letters`}},
		{"no name", "topology: {nodes: 3}\n", []string{"name: missing"}},
		{"nodes", "name: x\ntopology: {nodes: 0}\nworkload: {producers: [{}]}\ntopics: [{name: t, replication_factor: 1, min_insync_replicas: 1}]\n", nil},
		{"nodes too many", "name: x\ntopology: {nodes: 99}\n", []string{"topology.nodes: 99: want 1 to 50 brokers"}},
		{"broker topology key", "name: x\nbroker: {node.id: \"7\"}\n", []string{`broker["node.id"]: the harness sets node.id`}},
		{"expect unknown anomaly", "name: x\nexpect: {forbidden: [lost-writes]}\n", []string{`expect.forbidden[0]: anomaly "lost-writes": want one of lost-write`}},
		{"expect likely without provoke", "name: x\nexpect: {permitted: [duplicate], likely: [duplicate]}\n", []string{"expect.provoke: missing: say how the scenario makes duplicate likely"}},
		{"fault name", "name: x\nfaults: {timeline: [{at: 5s, fault: kil, duration: 5s, target: {role: controller}}]}\n",
			[]string{`faults.timeline[0].fault: "kil": want one of kill, stop, pause, rolling-bounce-clean`, "(did you mean kill?)"}},
		{"target role", "name: x\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s, target: {role: leader}}]}\n",
			[]string{`faults.timeline[0].target.role: "leader": want one of leader-of, follower-of`, "(did you mean leader-of?)"}},
		{"target missing", "name: x\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s}]}\n",
			[]string{"faults.timeline[0].target: missing: kill needs a target with a role (leader-of,"}},
		{"target not taken", "name: x\nfaults: {timeline: [{at: 5s, fault: rolling-bounce-hard, target: {role: controller}}]}\n",
			[]string{"faults.timeline[0].target: rolling-bounce-hard takes no target"}},
		{"role not accepted", "name: x\nfaults: {timeline: [{at: 5s, fault: leader-cut-from-followers, duration: 5s, target: {role: controller}}]}\n",
			[]string{"faults.timeline[0].target.role: controller: leader-cut-from-followers aims at leader-of only"}},
		{"partition out of range", "name: x\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s, target: {role: leader-of, partition: 3}}]}\n",
			[]string{"faults.timeline[0].target.partition: 3: topic verity has partitions 0 to 2"}},
		{"node out of range", "name: x\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s, target: {role: node, node: 4}}]}\n",
			[]string{"faults.timeline[0].target.node: 4: want a broker 1 to 3"}},
		{"target field the role ignores", "name: x\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s, target: {role: controller, node: 2}}]}\n",
			[]string{"faults.timeline[0].target.node: set, but role controller does not use it"}},
		{"coordinator without transactions", "name: x\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s, target: {role: txn-coordinator}}]}\n",
			[]string{"faults.timeline[0].target.role: txn-coordinator: the workload has no transactional producer or processor"}},
		{"group coordinator without a group", "name: x\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s, target: {role: group-coordinator}}]}\n",
			[]string{"faults.timeline[0].target.role: group-coordinator: the workload has no consumer group (a group, a processor or a sink)"}},
		{"group coordinator of a sink", "name: x\nworkload: {producers: [{}], sinks: [{mode: naive}]}\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s, target: {role: group-coordinator}}]}\n", nil},
		{"healing fault without duration", "name: x\nfaults: {timeline: [{at: 5s, fault: kill, target: {role: controller}}]}\n",
			[]string{"faults.timeline[0].duration: missing: kill lasts until healed, so give it a duration"}},
		{"self-ending fault with duration", "name: x\nfaults: {timeline: [{at: 5s, fault: disk-loss, duration: 5s, target: {role: controller}}]}\n",
			[]string{"faults.timeline[0].duration: 5s: disk-loss ends by itself and takes no duration"}},
		{"step after the end", "name: x\nduration: 30s\nfaults: {timeline: [{at: 40s, fault: kill, duration: 5s, target: {role: controller}}]}\n",
			[]string{"faults.timeline[0].at: 40s is not before the end of the run (duration 30s)"}},
		{"param missing", "name: x\nfaults: {timeline: [{at: 5s, fault: latency, duration: 5s, target: {role: controller}}]}\n",
			[]string{"faults.timeline[0].params.delay: missing: latency needs delay"}},
		{"param not taken", "name: x\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s, target: {role: controller}, params: {delay: 1s}}]}\n",
			[]string{"faults.timeline[0].params.delay: kill takes no params"}},
		{"param of another fault", "name: x\nfaults: {timeline: [{at: 5s, fault: latency, duration: 5s, target: {role: controller}, params: {delay: 1s, bytes: 10}}]}\n",
			[]string{"faults.timeline[0].params.bytes: latency does not take bytes; it takes links, delay, jitter"}},
		{"disk fault: a bad pattern", "name: x\nfaults: {timeline: [{at: 5s, fault: disk-error, duration: 5s, target: {role: controller}, params: {path: \"verity-0/[x\"}}]}\n",
			[]string{"faults.timeline[0].params.path: \"verity-0/[x\": segment \"[x\": syntax error in pattern: want all, metadata, checkpoints, log, or a pattern relative to the data directory such as verity-0/*.log"}},
		{"disk fault: a log needs a partition", "name: x\nfaults: {timeline: [{at: 5s, fault: disk-full, duration: 5s, target: {role: controller}, params: {path: log}}]}\n",
			[]string{"faults.timeline[0].params.path: log: the log is a partition's, so the target's role must be one of leader-of, follower-of, followers-of, replicas-of"}},
		{"disk fault: an unknown call", "name: x\nfaults: {timeline: [{at: 5s, fault: slow-disk, duration: 5s, target: {role: controller}, params: {op: flush, delay: 1s}}]}\n",
			[]string{"faults.timeline[0].params.op: \"flush\": want one of [write fsync read]"}},
		{"disk fault: once is disk-error's", "name: x\nfaults: {timeline: [{at: 5s, fault: disk-full, duration: 5s, target: {role: controller}, params: {once: true}}]}\n",
			[]string{"faults.timeline[0].params.once: disk-full does not take once; it takes path, bytes"}},
		{"log_dirs within bounds", "name: x\ntopology: {nodes: 3, log_dirs: 9}\n",
			[]string{"topology.log_dirs: 9: want 1 to 8 log directories per node"}},
		{"boot_unsynced needs the lazy filesystem", "name: x\ntopology: {nodes: 3, boot_unsynced: true}\n",
			[]string{"topology.boot_unsynced: true needs the nodes on the lazy filesystem: set topology.power_loss, or schedule a power-loss or disk fault"}},
		{"until needs one held request", "name: x\nfaults: {timeline: [{at: 5s, fault: hold-request, duration: 5s, target: {role: controller}, params: {api: EndTxn(commit), until: EndTxn(abort)}}]}\n",
			[]string{"faults.timeline[0].params.until: until ends the hold of one request: set nth to 1 or more"}},
		{"until names a request", "name: x\nfaults: {timeline: [{at: 5s, fault: hold-request, duration: 5s, target: {role: controller}, params: {api: EndTxn, nth: 1, until: Produce(abort)}}]}\n",
			[]string{`faults.timeline[0].params.until: Kafka request "Produce(abort)": only EndTxn is narrowed`}},
		{"until on another fault", "name: x\nfaults: {timeline: [{at: 5s, fault: drop-request, duration: 5s, target: {role: controller}, params: {api: EndTxn(commit), until: EndTxn}}]}\n",
			[]string{"faults.timeline[0].params.until: drop-request does not take until"}},
		{"links value", "name: x\nfaults: {timeline: [{at: 5s, fault: latency, duration: 5s, target: {role: controller}, params: {delay: 1s, links: all}}]}\n",
			[]string{`faults.timeline[0].params.links: "all": want client, fetch or node`}},
		{"fetch links need a partition", "name: x\nfaults: {timeline: [{at: 5s, fault: latency, duration: 5s, target: {role: controller}, params: {delay: 1s, links: fetch}}]}\n",
			[]string{"faults.timeline[0].params.links: fetch: the fetch links are a partition's"}},
		{"one-way-cut without to", "name: x\nfaults: {timeline: [{at: 5s, fault: one-way-cut, duration: 5s, target: {role: controller}}]}\n",
			[]string{"faults.timeline[0].params.to: missing: one-way-cut needs to"}},
		{"compound of one", "name: x\nfaults: {timeline: [{at: 5s, fault: compound, duration: 5s, parts: [{fault: kill, target: {role: controller}}]}]}\n",
			[]string{"faults.timeline[0].parts: 1 parts: a compound needs at least 2"}},
		{"compound part", "name: x\nfaults: {timeline: [{at: 5s, fault: compound, duration: 5s, parts: [{fault: kill, target: {role: controler}}, {fault: none}]}]}\n",
			[]string{`faults.timeline[0].parts[0].target.role: "controler"`, "faults.timeline[0].parts[1].fault: none cannot be a part of a compound"}},
		{"parts on a plain fault", "name: x\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s, target: {role: controller}, parts: [{fault: none}]}]}\n",
			[]string{"faults.timeline[0].parts: only a compound has parts (this is kill)"}},
		{"schedule kind", "name: x\nfaults: {kind: sometimes}\n", []string{`faults.kind: "sometimes": want none, timeline or periodic`}},
		{"kind without timeline", "name: x\nfaults: {kind: timeline}\n", []string{"faults.timeline: no step"}},
		{"periodic", "name: x\nfaults: {periodic: {interval: 10s, hold: 20s, quiet: 1, set: []}}\n",
			[]string{"faults.periodic.quiet: 1: want 0 to below 1", "faults.periodic.hold: 20s: want a positive duration up to the interval 10s", "faults.periodic.set: no fault"}},
		{"several values at once", "name: x\nclient: {acks: \"2\", isolation: x}\n", []string{`client.acks: acks "2"`, `client.isolation: isolation "x"`}},
		{"several settings at once", "name: x\nclient: {max_in_flight: 0}\ntopics: [{name: t, min_insync_replicas: 4}]\n",
			[]string{"client.max_in_flight: 0: want at least 1", "topics[0].min_insync_replicas: 4 is more than replication_factor 3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if c.want == nil {
				// "nodes: 0" is the default, not an error.
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error for:\n%s", c.yaml)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
		})
	}
}

// Field errors are typed, so a caller can list them.
func TestParseErrorsAreTyped(t *testing.T) {
	_, err := Parse([]byte("name: x\nclient: {max_in_flight: 0}\ntopics: [{name: t, min_insync_replicas: 4}]\n"))
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error %T is not Errors", err)
	}
	paths := []string{}
	for _, e := range es {
		paths = append(paths, e.Path)
	}
	if strings.Join(paths, " ") != "topics[0].min_insync_replicas client.max_in_flight" {
		t.Errorf("paths %v", paths)
	}
	if es[0].Line != 3 || es[1].Line != 2 {
		t.Errorf("lines %d, %d; want 3, 2", es[0].Line, es[1].Line)
	}
}

// A producer group's own acks: with its own idempotence=true it must be all; without, it runs
// with Kafka's default for its acks (idempotence off), not a conflict.
func TestParseProducerGroupAcks(t *testing.T) {
	_, err := Parse([]byte("name: x\nclient: {idempotence: true}\nworkload: {producers: [{count: 2}, {acks: \"1\"}]}\n"))
	if err != nil {
		t.Errorf("acks=1 group beside idempotent ones: %v", err)
	}
	_, err = Parse([]byte("name: x\nworkload: {producers: [{acks: \"1\", idempotence: true}]}\n"))
	if err == nil || !strings.Contains(err.Error(), "workload.producers[0].idempotence: enable.idempotence=true needs acks=all (has acks=1)") {
		t.Errorf("acks=1 group with idempotence: %v", err)
	}
}

// A power-loss fault anywhere in the schedule (a periodic set, a compound's part) puts the nodes
// on the lazy filesystem; without one they stay as they are unless the topology asks.
func TestPowerLossNeedsTheLazyFilesystem(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want bool
	}{
		{"name: x\nfaults:\n  kind: periodic\n  periodic:\n    interval: 10s\n    hold: 5s\n    set:\n      - {fault: kill, target: {role: leader-of}}\n      - {fault: power-loss, target: {role: replicas-of}}\n", true},
		{"name: x\nfaults:\n  timeline:\n    - at: 5s\n      duration: 5s\n      fault: compound\n      parts:\n        - {fault: isolate, target: {role: controller}}\n        - {fault: power-loss, target: {role: controllers}}\n", true},
		{"name: x\nfaults:\n  timeline:\n    - {at: 5s, duration: 5s, fault: kill, target: {role: leader-of}}\n", false},
		{"name: x\ntopology: {power_loss: true}\n", true},
	} {
		s, err := Parse([]byte(c.yaml))
		if err != nil {
			t.Fatalf("%s: %v", c.yaml, err)
		}
		if s.Topology.PowerLoss != c.want {
			t.Errorf("%s: topology.power_loss %v, want %v", c.yaml, s.Topology.PowerLoss, c.want)
		}
	}
}
