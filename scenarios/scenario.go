package scenarios

import (
	"fmt"
	"slices"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// Scenario is one run's description. The YAML and JSON field names are the tags below; Parse
// fills omitted fields with the defaults documented on each field (see WithDefaults).
type Scenario struct {
	// Name identifies the scenario (lower-case letters, digits and dashes).
	Name string `yaml:"name" json:"name"`
	// Description says in a sentence what the scenario does.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Source names the document sections the scenario makes observable ("000 §20.5").
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
	// Expect is what the run should show, and why.
	Expect Expectation `yaml:"expect" json:"expect"`
	// Topology is the cluster's shape.
	Topology Topology `yaml:"topology" json:"topology"`
	// Kafka is the release the cluster runs and the feature levels it is brought to.
	Kafka Kafka `yaml:"kafka,omitempty" json:"kafka,omitempty"`
	// Broker overrides server.properties on every node (dotted names, e.g.
	// "replica.lag.time.max.ms": "10000"), over the harness's own fast defaults.
	Broker map[string]string `yaml:"broker,omitempty" json:"broker,omitempty"`
	// Topics are created before the workloads start. Default: one topic "verity" with 3
	// partitions, replication factor 3 (at most the node count) and min ISR 2 (at most RF).
	Topics []Topic `yaml:"topics" json:"topics"`
	// Client is the producers' and consumers' configuration.
	Client Client `yaml:"client" json:"client"`
	// Workload is the mix of clients. Default: 3 producers and one read_committed consumer.
	Workload Workload `yaml:"workload" json:"workload"`
	// Faults is the fault schedule. Default: none.
	Faults Schedule `yaml:"faults" json:"faults"`
	// Duration is how long the workloads run (the final reads come after). Default 60s.
	Duration Duration `yaml:"duration" json:"duration"`
	// Seed drives every random choice of the run: targets, random schedules, client choices.
	Seed int64 `yaml:"seed" json:"seed"`
	// Regression makes the scenario a check of a known bug: the knob whose two values are the
	// bug's bad side and its fixed side, and what the bad side shows (see Regression).
	Regression *Regression `yaml:"regression,omitempty" json:"regression,omitempty"`
	// Requires names what the scenario needs of its client (kafkaconf.Capabilities): a run
	// with a client that lacks one is refused before anything starts.
	Requires []kafkaconf.Capability `yaml:"requires,omitempty" json:"requires,omitempty"`
	// Tags group the scenario with others for `verity suite --tag` (Tags lists them).
	Tags []Tag `yaml:"tags,omitempty" json:"tags,omitempty"`
}

// Regression is a known bug a scenario finds again: `verity matrix -s NAME` runs its two sides
// as a 2-cell matrix (the knob at Bad, then at Fixed) and says whether the bad side showed the
// anomalies in most runs and the fixed side in none.
type Regression struct {
	// Bug names the bug by its issue and KIP ids ("KAFKA-17754, KIP-890").
	Bug string `yaml:"bug" json:"bug"`
	// Knob is the knob (Knobs, one that may be a matrix axis) that tells the sides apart.
	Knob string `yaml:"knob" json:"knob"`
	// Bad and Fixed are the knob's values on the side with the bug and on the side without.
	Bad   string `yaml:"bad" json:"bad"`
	Fixed string `yaml:"fixed" json:"fixed"`
	// Shows are the anomalies the bug causes, forbidden where the scenario runs: the bad side
	// shows at least one of them in most runs, the fixed side none in any run.
	Shows []guarantee.Anomaly `yaml:"shows" json:"shows"`
}

// Values are the knob's values, the bad side's first.
func (r Regression) Values() []string { return []string{r.Bad, r.Fixed} }

// Expectation is what a scenario expects a run to show, and why. Which anomalies the
// configuration permits or forbids is not written here: the guarantee table derives it from the
// settings (runner.Expectations), and a scenario only names what it provokes on purpose.
type Expectation struct {
	// Verdict is the verdict a run should get: pass (default) or fail. Permitted anomalies
	// do not fail a run, so every built-in expects pass but txn-read-no-rewind, the control of
	// a forbidden family that only a deliberately broken application provokes.
	Verdict results.Verdict `yaml:"verdict" json:"verdict"`
	// Text says what the run should show and why, in the documents' terms.
	Text string `yaml:"text,omitempty" json:"text,omitempty"`
	// Forbidden and Permitted are claims a scenario file may make about the guarantee table
	// (the run refuses to start when the table disagrees, quoting it); the built-ins make none.
	Forbidden []guarantee.Anomaly `yaml:"forbidden,omitempty" json:"forbidden,omitempty"`
	Permitted []guarantee.Anomaly `yaml:"permitted,omitempty" json:"permitted,omitempty"`
	// Likely are permitted anomalies the scenario provokes on purpose and expects in most runs
	// (a positive control: one that never fires proves nothing).
	Likely []guarantee.Anomaly `yaml:"likely,omitempty" json:"likely,omitempty"`
	// Provoke says how the scenario makes the Likely anomalies happen.
	Provoke string `yaml:"provoke,omitempty" json:"provoke,omitempty"`
	// LikelyNeeds are what the Likely anomalies need of the client (kafkaconf.Capabilities) to
	// fire: under a client that lacks one they cannot, so a run with it expects none of them and
	// says why, rather than reporting a positive control that did not fire.
	LikelyNeeds []kafkaconf.Capability `yaml:"likely_needs,omitempty" json:"likely_needs,omitempty"`
	// Liveness states bounds on the clients' progress, judged into the run's liveness verdict
	// apart from the safety one (a broken bound makes the outcome "fail (liveness)"); nil: none.
	Liveness *LivenessExpect `yaml:"liveness,omitempty" json:"liveness,omitempty"`
}

// LivenessExpect are the bounds on progress a scenario states (the history header's
// config.liveness), and the clients known to break them.
type LivenessExpect struct {
	// MaxStall is the longest any client may go without progress while work is available to it.
	MaxStall Duration `yaml:"max_stall,omitempty" json:"max_stall,omitempty"`
	// RecoverWithin is how soon after each heal every client the fault touched progresses again.
	RecoverWithin Duration `yaml:"recover_within,omitempty" json:"recover_within,omitempty"`
	// BreaksWithout are capabilities (kafkaconf.Capabilities) whose lack is known to break a
	// bound: a run with a client that lacks one is expected to break it, a known behaviour, and
	// Why says why.
	BreaksWithout []kafkaconf.Capability `yaml:"breaks_without,omitempty" json:"breaks_without,omitempty"`
	Why           string                 `yaml:"why,omitempty" json:"why,omitempty"`
}

// Bounds are the stated bounds as the history header writes them; nil when none is stated.
func (l *LivenessExpect) Bounds() *history.LivenessBounds {
	if l == nil || (l.MaxStall <= 0 && l.RecoverWithin <= 0) {
		return nil
	}
	var b history.LivenessBounds
	if l.MaxStall > 0 {
		b.MaxStallMS = new(l.MaxStall.Std().Milliseconds())
	}
	if l.RecoverWithin > 0 {
		b.RecoverWithinMS = new(l.RecoverWithin.Std().Milliseconds())
	}
	return &b
}

// Lacks are the capabilities of BreaksWithout that client c lacks: when there are any, a run
// with c is expected to break a stated bound.
func (l *LivenessExpect) Lacks(c kafkaconf.Client) []kafkaconf.Capability {
	if l == nil || l.Bounds() == nil {
		return nil
	}
	var out []kafkaconf.Capability
	for _, need := range l.BreaksWithout {
		if !c.Has(need) {
			out = append(out, need)
		}
	}
	return out
}

// BoundsText names the stated bounds as the checker's findings do: "max_stall 25s".
func (l *LivenessExpect) BoundsText() string { return l.Bounds().String() }

// Topology is the cluster's shape.
type Topology struct {
	// Nodes is the number of brokers, 1 to 50; default 3. Brokers are nodes 1..Nodes.
	Nodes int `yaml:"nodes" json:"nodes"`
	// DedicatedControllers runs three controller-only nodes (ids 101-103) beside the brokers;
	// by default every broker is also a KRaft controller.
	DedicatedControllers bool `yaml:"dedicated_controllers,omitempty" json:"dedicated_controllers,omitempty"`
	// PowerLoss runs every node on the lazy filesystem, which keeps apart what Kafka wrote and
	// what it fsynced, so that a power-loss fault can drop the difference. Default: true when
	// the schedule has a power-loss fault.
	PowerLoss bool `yaml:"power_loss,omitempty" json:"power_loss,omitempty"`
	// BootUnsynced leaves unsynced what the nodes wrote before the cluster was ready (their
	// format's files), as on a machine that loses power within a minute of formatting; by
	// default every node is synced once the cluster is ready. Needs PowerLoss.
	BootUnsynced bool `yaml:"boot_unsynced,omitempty" json:"boot_unsynced,omitempty"`
	// LogDirs is how many log directories each node has (log.dirs), 1 to 8; default 1, which
	// also holds the KRaft metadata log. With 2 or more the metadata log has a directory of its
	// own, and a broker whose one log directory fails goes on with the others, its partitions
	// there led elsewhere (KIP-112, KIP-858); disk faults' areas follow the layout.
	LogDirs int `yaml:"log_dirs,omitempty" json:"log_dirs,omitempty"`
}

// Kafka is the cluster's release and feature levels.
type Kafka struct {
	// Version is the Kafka release (kafkaconf.Releases); default kafkaconf.DefaultKafkaVersion.
	Version kafkaconf.KafkaVersion `yaml:"version,omitempty" json:"version,omitempty"`
	// Features are levels of the settable features (kafkaconf.SettableFeatures), set once the
	// cluster is ready and before the workloads start; the others keep the release's levels.
	Features kafkaconf.FeatureLevels `yaml:"features,omitempty" json:"features,omitempty"`
	// Loggers set broker loggers' levels on every node ("kafka.server.share": DEBUG), for
	// investigating a finding with the nodes' logs; they change nothing a run judges.
	Loggers kafkaconf.Loggers `yaml:"loggers,omitempty" json:"loggers,omitempty"`
}

// Topic is one topic to create.
type Topic struct {
	Name string `yaml:"name" json:"name"`
	// Partitions: default 3.
	Partitions int32 `yaml:"partitions" json:"partitions"`
	// ReplicationFactor: default 3, at most the node count.
	ReplicationFactor int `yaml:"replication_factor" json:"replication_factor"`
	// MinInsyncReplicas is min.insync.replicas: default 2, at most ReplicationFactor.
	MinInsyncReplicas int `yaml:"min_insync_replicas" json:"min_insync_replicas"`
	// UncleanLeaderElection is unclean.leader.election.enable (Kafka's default false).
	UncleanLeaderElection bool `yaml:"unclean_leader_election" json:"unclean_leader_election"`
	// Config holds any other topic settings (dotted names); the three above have their own
	// fields and may not appear here.
	Config map[string]string `yaml:"config,omitempty" json:"config,omitempty"`
}

// Client is the configuration of the clients. Plain (non-transactional) producers use every
// setting; transactional producers and read-process-write processors always run with acks=all
// and idempotence, since Kafka refuses a transactional producer with anything else. An unset
// setting (nil, zero duration, empty) is Kafka's default (package kafkaconf), as far as the
// client can follow it; a run's notes say where it cannot.
type Client struct {
	// Name is the Kafka client every workload drives: sarama (default) or franz-go
	// (kafkaconf.Clients says what each can do).
	Name kafkaconf.ClientName `yaml:"name,omitempty" json:"name,omitempty"`
	// Version is the client module's version (v1.61.0); unset, the one linked into Verity. Another
	// version runs the workloads in a driver process built for it on demand and cached.
	Version string `yaml:"version,omitempty" json:"version,omitempty"`
	// Command, when set, is a program (its name and arguments) that serves the client over the
	// remote client protocol (docs/client-protocol.md): every workload speaks to it.
	Command []string `yaml:"command,omitempty" json:"command,omitempty"`
	// TxnProtocol caps the transaction protocol the transactional producers and processors
	// speak: v1 (before KIP-890) or v2; unset, the best the client and the cluster support.
	TxnProtocol kafkaconf.TxnProtocol `yaml:"txn_protocol,omitempty" json:"txn_protocol,omitempty"`
	// GroupProtocol is the consumer group protocol the group members speak: classic or
	// consumer (KIP-848); unset, the client's default (classic).
	GroupProtocol kafkaconf.GroupProtocol `yaml:"group_protocol,omitempty" json:"group_protocol,omitempty"`
	// Delivery is acks, idempotence, max_in_flight and retries.
	kafkaconf.Delivery `yaml:",inline"`
	// RetryBackoff is retry.backoff.ms (unset: 100ms).
	RetryBackoff Duration `yaml:"retry_backoff,omitempty" json:"retry_backoff,omitempty"`
	// RequestTimeout is request.timeout.ms. Unset: the client's default (sarama's 10s; Kafka's
	// Java client 30s).
	RequestTimeout Duration `yaml:"request_timeout,omitempty" json:"request_timeout,omitempty"`
	// DeliveryTimeout is delivery.timeout.ms, at least linger + request timeout as Kafka
	// requires. Unset: 30s (Kafka's Java client 120s; sarama has none, the workload bounds each
	// send by it).
	DeliveryTimeout Duration `yaml:"delivery_timeout,omitempty" json:"delivery_timeout,omitempty"`
	// Linger is linger.ms (unset: sarama sends at once; Kafka's Java client waits 5ms).
	Linger Duration `yaml:"linger,omitempty" json:"linger,omitempty"`
	// BatchBytes is batch.size.
	BatchBytes int `yaml:"batch_bytes,omitempty" json:"batch_bytes,omitempty"`
	// Compression is compression.type: none, gzip, snappy, lz4 or zstd.
	Compression kafkaconf.Compression `yaml:"compression,omitempty" json:"compression,omitempty"`
	// AppResend is how many times the application sends a payload again, as a new record,
	// after a failed or unknown send (0: never). Idempotence does not cover such resends.
	AppResend int `yaml:"app_resend,omitempty" json:"app_resend,omitempty"`
	// Isolation is the isolation.level of the consumer group's members: read_committed
	// (default here; Kafka's consumer default is read_uncommitted) or read_uncommitted. The
	// assigned consumers say theirs in workload.consumers; read-process-write processors always
	// read committed, as exactly-once needs.
	Isolation kafkaconf.Isolation `yaml:"isolation" json:"isolation"`
	// Transactions configures the transactional producers and processors.
	Transactions Transactions `yaml:"transactions,omitempty" json:"transactions,omitzero"`
}

// Transactions configures transactional producers and read-process-write processors.
type Transactions struct {
	// AbortProbability is the share of transactions aborted on purpose, 0 to below 1.
	AbortProbability float64 `yaml:"abort_probability,omitempty" json:"abort_probability,omitempty"`
	// Records is the most records one transaction writes (0: the workload's default).
	Records int `yaml:"records,omitempty" json:"records,omitempty"`
	// ZombieProbability is the share of transactions during which a second instance takes
	// the same transactional.id (initTransactions), fencing the first: 0 to 1.
	ZombieProbability float64 `yaml:"zombie_probability,omitempty" json:"zombie_probability,omitempty"`
	// HoldOpen keeps one transaction of each transactional producer open this long before it
	// commits, while others write (the LSO stalls read_committed readers meanwhile).
	HoldOpen Duration `yaml:"hold_open,omitempty" json:"hold_open,omitempty"`
}

// Workload is the mix of clients a run starts. Each instance is one history process; they are
// numbered in this order: producer groups in order, transactional producers, processors,
// consumers (read_committed, then read_uncommitted), group consumers (Config relies on it).
type Workload struct {
	// Producers are groups of identical plain producers.
	Producers []ProducerGroup `yaml:"producers,omitempty" json:"producers,omitempty"`
	// Transactional are transactional producers.
	Transactional TxnProducers `yaml:"transactional,omitempty" json:"transactional,omitzero"`
	// Processors are read-process-write processors (consume, produce, offsets in one
	// transaction).
	Processors Processors `yaml:"processors,omitempty" json:"processors,omitzero"`
	// Consumers are assigned consumers (every partition of their topics) per isolation level.
	Consumers Consumers `yaml:"consumers,omitempty" json:"consumers,omitzero"`
	// Group are members of one consumer group (subscribe, commit after processing).
	Group Group `yaml:"group,omitempty" json:"group,omitzero"`
	// Sinks apply every record of a topic to a store outside Kafka (PostgreSQL or the HTTP
	// ledger), each in one of the patterns of docs/sinks.md; the cluster then runs the stores.
	Sinks []Sink `yaml:"sinks,omitempty" json:"sinks,omitempty"`
	// Share are members of one share group (KIP-932) that acquire and acknowledge the records
	// of their topics (docs/share-groups.md); the client must have a share consumer.
	Share Share `yaml:"share,omitempty" json:"share,omitzero"`
}

// Share is Members consumers of one share group reading Topics: each record is acquired by one
// member under a lock and acknowledged accept, release or reject by the seeded Mix.
type Share struct {
	Members int `yaml:"members" json:"members"`
	// Name of the group; default "verity-share".
	Name   string   `yaml:"name,omitempty" json:"name,omitempty"`
	Topics []string `yaml:"topics,omitempty" json:"topics,omitempty"`
	// Mix weighs the acknowledgements; default accept 80, release 15, reject 5.
	Mix ShareMix `yaml:"mix,omitempty" json:"mix,omitzero"`
	// CrashEvery crashes each member about this often, on its own seeded schedule, right
	// after a poll while it holds what it acquired.
	CrashEvery Duration `yaml:"crash_every,omitempty" json:"crash_every,omitempty"`
	// LockDuration is the group's record lock duration (share.record.lock.duration.ms; the
	// brokers take 15s to 60s unless configured otherwise), DeliveryLimit its delivery count
	// limit (share.delivery.count.limit, 2 to 10, Kafka 4.3 on); unset: the brokers'.
	LockDuration  Duration `yaml:"lock_duration,omitempty" json:"lock_duration,omitempty"`
	DeliveryLimit int      `yaml:"delivery_limit,omitempty" json:"delivery_limit,omitempty"`
}

// ShareMix weighs a share group's acknowledgement types.
type ShareMix struct {
	Accept  int `yaml:"accept" json:"accept"`
	Release int `yaml:"release" json:"release"`
	Reject  int `yaml:"reject" json:"reject"`
}

// Sink is Count members of one consumer group that apply each record of Topic to a store
// outside Kafka in Mode, then commit (or, for offsets-in-db, keep the offset with the effect).
type Sink struct {
	// Name names the sink (its tables, its consumer group); default "sink", then "sink2", …
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Mode is naive, unique-key, offsets-in-db, inbox, outbox, http or http-keyed (sink.Modes).
	Mode sink.Mode `yaml:"mode" json:"mode"`
	// Count: default 1.
	Count int `yaml:"count" json:"count"`
	// Topic consumed; default the first topic.
	Topic string `yaml:"topic,omitempty" json:"topic,omitempty"`
	// CrashEvery crashes each member about this often, on its own seeded schedule, right after
	// a side effect and before its offset commit; an outbox sink's relay as often, between a
	// publish and marking its row sent.
	CrashEvery Duration `yaml:"crash_every,omitempty" json:"crash_every,omitempty"`
	// Outbox is the topic an outbox sink's relay publishes to (mode outbox only); default
	// "<name>-outbox", created like the topic the sink consumes when no topic has that name.
	Outbox string `yaml:"outbox,omitempty" json:"outbox,omitempty"`
}

// ReadIsolations are the isolation levels the workload's readers read at, read_committed first
// (always there: the final reads use it): its consumers', its group members' (the client's,
// clientIso) and its processors'.
func (w Workload) ReadIsolations(clientIso kafkaconf.Isolation) []kafkaconf.Isolation {
	isos := []kafkaconf.Isolation{kafkaconf.ReadCommitted}
	// A share group reads at read_uncommitted (share.isolation.level's default).
	if w.Consumers.ReadUncommitted > 0 || (w.Group.Count > 0 && clientIso == kafkaconf.ReadUncommitted) ||
		(w.Processors.Count > 0 && w.Processors.Isolation == kafkaconf.ReadUncommitted) || w.Share.Members > 0 {
		isos = append(isos, kafkaconf.ReadUncommitted)
	}
	return isos
}

// Uses is what the workload asks of the cluster, by kafkaconf's role table.
func (w Workload) Uses() kafkaconf.Uses {
	count := map[kafkaconf.RoleName]int{
		kafkaconf.RoleTxnProducer:   w.Transactional.Count,
		kafkaconf.RoleProcessor:     w.Processors.Count,
		kafkaconf.RoleConsumer:      w.Consumers.ReadCommitted + w.Consumers.ReadUncommitted,
		kafkaconf.RoleGroupConsumer: w.Group.Count,
	}
	for _, g := range w.Producers {
		count[kafkaconf.RoleProducer] += max(g.Count, 1)
	}
	for _, s := range w.Sinks {
		count[kafkaconf.RoleSink] += max(s.Count, 1)
	}
	count[kafkaconf.RoleShareMember] = w.Share.Members
	return kafkaconf.UsesOf(count)
}

// Downstream reports whether sink i consumes another sink's outbox topic.
func (w Workload) Downstream(i int) bool {
	return slices.ContainsFunc(w.Sinks, func(o Sink) bool { return o.Outbox != "" && o.Outbox == w.Sinks[i].Topic })
}

// Stores are the stores the scenario's sinks write to, each once, in sink order.
func (w Workload) Stores() []sink.Store {
	var out []sink.Store
	for _, s := range w.Sinks {
		if in, ok := s.Mode.Info(); ok && !slices.Contains(out, in.Store) {
			out = append(out, in.Store)
		}
	}
	return out
}

// ProducerGroup is Count identical plain producers. Delivery settings given here replace the
// client's for this group (a run may mix an acks=1 producer with acks=all ones).
type ProducerGroup struct {
	// Count: default 1.
	Count int `yaml:"count" json:"count"`
	// Async hands records to the client without waiting (up to 100 outstanding), the client
	// batching them; otherwise each producer sends one record at a time.
	Async bool `yaml:"async,omitempty" json:"async,omitempty"`
	// Topic the group writes to; default the first topic.
	Topic string `yaml:"topic,omitempty" json:"topic,omitempty"`
	// Rate is each producer's sends per second (default 200; a negative rate: unlimited).
	Rate               float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	kafkaconf.Delivery `yaml:",inline"`
}

// Producer is what the scenario asks of a producer of group g: the group's delivery settings
// over the client's, and whether the application resends.
func (c Client) Producer(g ProducerGroup) kafkaconf.ProducerConfig {
	return kafkaconf.ProducerConfig{Delivery: g.Delivery.Over(c.Delivery), AppResend: new(c.AppResend > 0)}
}

// TxnProducers are Count transactional producers, each with its own transactional.id.
type TxnProducers struct {
	Count int `yaml:"count" json:"count"`
	// Topics each transaction writes to (atomically across them), at least two; default the
	// first two topics.
	Topics []string `yaml:"topics,omitempty" json:"topics,omitempty"`
}

// Processors are Count read-process-write processors from Input to Output.
type Processors struct {
	Count int `yaml:"count" json:"count"`
	// Input and Output topics; default the first and second topics.
	Input  string `yaml:"input,omitempty" json:"input,omitempty"`
	Output string `yaml:"output,omitempty" json:"output,omitempty"`
	// CrashEvery restarts a processor this often (a new instance, same transactional.id).
	CrashEvery Duration `yaml:"crash_every,omitempty" json:"crash_every,omitempty"`
	// CrashAfterCommit crashes them right after a committed transaction instead of in the
	// middle of one (needs crash_every).
	CrashAfterCommit bool `yaml:"crash_after_commit,omitempty" json:"crash_after_commit,omitempty"`
	// Writes makes every transaction one that reads and writes: it sends this many new
	// records to random partitions of Output — which may then be Input, so that what one
	// processor writes another reads — instead of one output per input, and is recorded as a
	// txn op with what it read (docs/guarantees.md, transactions that read).
	Writes int `yaml:"writes,omitempty" json:"writes,omitempty"`
	// Isolation is the processors' consumers': read_committed (default); read_uncommitted
	// only with writes, as a control of what that level permits.
	Isolation kafkaconf.Isolation `yaml:"isolation,omitempty" json:"isolation,omitempty"`
	// SkipRewind leaves a processor's consumer where it was after a transaction that aborted,
	// as an application that forgets KAFKA-17582 does: a control of resume-skipped-ahead (its
	// next transaction starts past the aborted inputs). It needs a client whose member keeps
	// its position after an abort (position-kept-after-abort).
	SkipRewind bool `yaml:"skip_rewind,omitempty" json:"skip_rewind,omitempty"`
}

// Consumers are assigned consumers of Topics (default every topic).
type Consumers struct {
	ReadCommitted   int      `yaml:"read_committed,omitempty" json:"read_committed,omitempty"`
	ReadUncommitted int      `yaml:"read_uncommitted,omitempty" json:"read_uncommitted,omitempty"`
	Topics          []string `yaml:"topics,omitempty" json:"topics,omitempty"`
}

// Group is Count members of one consumer group that subscribe to Topics (default the first
// topic), at the client's isolation level, committing offsets after processing (at least once).
type Group struct {
	Count int `yaml:"count" json:"count"`
	// Name of the group; default "verity-group".
	Name   string   `yaml:"name,omitempty" json:"name,omitempty"`
	Topics []string `yaml:"topics,omitempty" json:"topics,omitempty"`
	// RestartEvery crashes each member about this often, on its own seeded schedule (a
	// rebalance each time).
	RestartEvery Duration `yaml:"restart_every,omitempty" json:"restart_every,omitempty"`
	// StallEvery stalls each member about this often, on its own seeded schedule, for twice
	// MaxPollInterval (max.poll.interval.ms, which a stalling group needs) without a poll: a
	// slow application, which the group drops until it polls again.
	StallEvery      Duration `yaml:"stall_every,omitempty" json:"stall_every,omitempty"`
	MaxPollInterval Duration `yaml:"max_poll_interval,omitempty" json:"max_poll_interval,omitempty"`
}

// Schedule kinds.
const (
	ScheduleNone     = "none"
	ScheduleTimeline = "timeline"
	SchedulePeriodic = "periodic"
)

// Schedule is when faults happen: none, a fixed timeline, or periodic random draws from a set.
type Schedule struct {
	// Kind is none, timeline or periodic; default from which of Timeline and Periodic is set.
	Kind     string    `yaml:"kind" json:"kind"`
	Timeline []Step    `yaml:"timeline,omitempty" json:"timeline,omitempty"`
	Periodic *Periodic `yaml:"periodic,omitempty" json:"periodic,omitempty"`
}

// Step is one fault of a timeline: injected At after the start, healed For later. Faults that
// end by themselves (see FaultSpec.Heals) take no duration.
type Step struct {
	At    Duration `yaml:"at" json:"at"`
	Fault `yaml:",inline"`
	For   Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
}

// Periodic draws one fault from Set every Interval (from the run's seed), leaving a Quiet
// share of the intervals without a fault; each drawn fault lasts Hold.
type Periodic struct {
	Interval Duration `yaml:"interval" json:"interval"`
	// Quiet is the share of intervals with no fault, 0 to below 1.
	Quiet float64 `yaml:"quiet,omitempty" json:"quiet,omitempty"`
	// Hold is how long each fault lasts; default half the interval, at most the interval.
	Hold Duration `yaml:"hold" json:"hold"`
	// Start is when the first interval begins; default one interval in, so that the workload
	// runs unharmed first.
	Start Duration `yaml:"start" json:"start"`
	Set   []Fault  `yaml:"set" json:"set"`
}

// Fault is one fault of the catalogue (FaultSpecs) aimed at a target.
type Fault struct {
	Name   FaultName `yaml:"fault" json:"fault"`
	Target *Target   `yaml:"target,omitempty" json:"target,omitempty"`
	Params Params    `yaml:"params,omitempty" json:"params,omitzero"`
	// Parts are the faults of a compound, injected in order and healed in reverse.
	Parts []Fault `yaml:"parts,omitempty" json:"parts,omitempty"`
}

// Target says which nodes a fault hits, resolved from the live cluster when it is injected.
type Target struct {
	Role Role `yaml:"role" json:"role"`
	// Topic and Partition name the partition of leader-of, follower-of and followers-of;
	// default the first topic, partition 0.
	Topic     string `yaml:"topic,omitempty" json:"topic,omitempty"`
	Partition int32  `yaml:"partition,omitempty" json:"partition,omitempty"`
	// Node is the id of role node: a broker 1..nodes, or a dedicated controller 101-103.
	Node int `yaml:"node,omitempty" json:"node,omitempty"`
	// TxnID names the transactional.id of txn-coordinator; default the run's first
	// transactional producer or processor.
	TxnID string `yaml:"txn_id,omitempty" json:"txn_id,omitempty"`
	// Group names the consumer group of group-coordinator; default the run's group (the
	// processors' group when there is no group workload).
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
}

// String names the target as the nemesis describes it ("leader of verity-0").
func (t Target) String() string {
	switch t.Role {
	case RoleLeaderOf, RoleFollowerOf, RoleFollowersOf, RoleReplicasOf:
		return fmt.Sprintf("%s %s-%d", t.Role, t.Topic, t.Partition)
	case RoleNode:
		return fmt.Sprintf("node %d", t.Node)
	case RoleTxnCoordinator:
		if t.TxnID != "" {
			return fmt.Sprintf("%s of %s", t.Role, t.TxnID)
		}
	case RoleGroupCoordinator:
		if t.Group != "" {
			return fmt.Sprintf("%s of %s", t.Role, t.Group)
		}
	}
	return string(t.Role)
}

// Params are a fault's settings; each fault accepts only the ones its FaultSpec lists.
type Params struct {
	// Links says which links of the target a link fault acts on: "client" (clients to the
	// target nodes; default), "fetch" (the partition's followers fetching from its leader:
	// needs a partition role) or "node" (every inter-node link of the target nodes).
	Links string `yaml:"links,omitempty" json:"links,omitempty"`
	// Cut is how a network fault cuts: "blackhole" (default: packets vanish, peers wait for
	// timeouts, like a real partition) or "refuse" (connections refused at once).
	Cut string `yaml:"cut,omitempty" json:"cut,omitempty"`
	// Delay: latency's added delay, slow-close's delay of the close.
	Delay Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
	// Jitter: latency's random variation.
	Jitter Duration `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	// RateKBps: bandwidth's cap in kilobytes per second.
	RateKBps int64 `yaml:"rate_kbps,omitempty" json:"rate_kbps,omitempty"`
	// After: blackhole-timeout closes the connections after this (0: holds them until
	// healed); reset-peer resets them after this (0: at once).
	After Duration `yaml:"after,omitempty" json:"after,omitempty"`
	// Bytes: limit-data closes a connection after this many bytes of responses.
	Bytes int64 `yaml:"bytes,omitempty" json:"bytes,omitempty"`
	// Hold: ack-loss holds connections open with the answers black-holed (the client waits
	// for its request timeout and its retries reach the broker) instead of closing them at
	// the first byte of an answer (fast; retries never arrive).
	Hold bool `yaml:"hold,omitempty" json:"hold,omitempty"`
	// To is the far end of a one-way-cut: traffic from the target to To is dropped.
	To *Target `yaml:"to,omitempty" json:"to,omitempty"`
	// Gate bounds a rolling bounce's wait for a healthy cluster between two nodes.
	Gate Duration `yaml:"gate,omitempty" json:"gate,omitempty"`
	// Service is the side-effect service a service fault acts on: postgres (default) or
	// ledger.
	Service string `yaml:"service,omitempty" json:"service,omitempty"`
	// API is the Kafka request a request fault acts on, as Kafka names it (Produce, EndTxn,
	// AddPartitionsToTxn, TxnOffsetCommit, WriteTxnMarkers, Fetch, …; EndTxn(commit) and
	// EndTxn(abort) for one end of a transaction); Nth which one (from 1, per proxy; 0: every
	// one).
	API string `yaml:"api,omitempty" json:"api,omitempty"`
	Nth int    `yaml:"nth,omitempty" json:"nth,omitempty"`
	// Until ends hold-request's hold when a request it names (as API does) crosses another
	// connection: the held request goes on first, that one after Delay.
	Until string `yaml:"until,omitempty" json:"until,omitempty"`
	// Feature and Level: set-feature brings the cluster's Feature (a settable one,
	// kafkaconf.SettableFeatures) to Level.
	Feature kafkaconf.Feature `yaml:"feature,omitempty" json:"feature,omitempty"`
	Level   *int16            `yaml:"level,omitempty" json:"level,omitempty"`
	// Version: rolling-upgrade moves every node to this Kafka release, newer than kafka.version.
	Version kafkaconf.KafkaVersion `yaml:"version,omitempty" json:"version,omitempty"`
	// Path is the files a disk fault acts on: an area (all, the default; metadata; checkpoints;
	// log: the target partition's) or a pattern relative to the data directory. Op is the call
	// (write, fsync, read); Once makes disk-error fail only the first call it matches.
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	Op   string `yaml:"op,omitempty" json:"op,omitempty"`
	Once bool   `yaml:"once,omitempty" json:"once,omitempty"`
}

// Duration is a duration written as Go writes them ("60s", "1m30s") in YAML and JSON.
type Duration = kafkaconf.Duration
