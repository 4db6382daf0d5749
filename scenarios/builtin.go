package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// Builtins returns the built-in scenarios, "default" first, then the catalogue (docs/scenarios.md
// lists it) in its order, each with defaults applied. Each call builds fresh values, so a caller
// may change what it gets.
func Builtins() []Scenario {
	makers := builtinMakers()
	out := make([]Scenario, len(makers))
	for i, m := range makers {
		out[i] = m().withDefaults()
	}
	return out
}

// Names lists the built-in scenarios' names in Builtins' order.
func Names() []string {
	var out []string
	for _, s := range Builtins() {
		out = append(out, s.Name)
	}
	return out
}

// Builtin returns the built-in scenario called name.
func Builtin(name string) (Scenario, error) {
	for _, s := range Builtins() {
		if s.Name == name {
			return s, nil
		}
	}
	names := Names()
	return Scenario{}, fmt.Errorf("no built-in scenario %q%s; built-ins: %s", name, suggest(name, names), strings.Join(names, ", "))
}

// Default returns the default scenario: 3 nodes, RF 3, min ISR 2, acks=all and idempotent,
// one leader kill, 60 s.
func Default() Scenario { return defaultScenario().withDefaults() }

func builtinMakers() []func() Scenario {
	return []func() Scenario{
		defaultScenario,
		labFollowerDown, labISRBelowMin, labLeaderFailover, labAbortInvisible, labFencing, labLSOHold,
		acks0LeaderLoss, acks1LeaderLoss,
		minISR1DiskLoss, minISR2DiskLoss,
		powerLossAllReplicas, powerLossAllReplicasFlushEach, powerLossLeader, powerLossControllers,
		diskErrorLeader, diskErrorLogDir, diskFullFollower, diskErrorMetadata, slowDiskLeader,
		uncleanIsolation, elrLastReplica,
		unansweringLeader,
		idempotentAckLoss, idempotentInflight5AckLoss, plainAckLoss, plainInflightReorder, plainInflight1Order, appResend,
		eosCoordinatorKill, eosRollingBounce,
		txnReadKill, txnReadPause, txnReadIsolate, txnReadRequestFaults, txnReadUncommitted, txnReadNoRewind,
		groupRebalance,
		shareBaseline, shareLeaderKill, shareLeaderPause, shareCoordinatorKill, shareCoordinatorPause, sharePowerLoss,
		shareMembersCut, shareCoordinatorCut, shareCountForgotten,
		sinkNaive, sinkUniqueKey, sinkOffsetsInDB, sinkInbox, sinkOutbox, sinkHTTP, sinkHTTPKeyed,
		regressKafka17754,
		regressFranzEndTxnUnconfirmed,
		regressSaramaStableOffsets,
		regressKIP890HangingTxn,
		regressKIP966ELR,
		regressKafka20321,
		regressShareStaleStateWrite,
		exploreRequestFaults, exploreEveryFault, exploreTxnReadEveryFault, exploreSinkEveryFault,
		upgradeEOS,
	}
}

// Helpers that keep the catalogue readable.

func sec(n float64) Duration { return Duration(time.Duration(n * float64(time.Second))) }

// Targets on partition 0 of the default topic.
func leaderOf0() *Target    { return &Target{Role: RoleLeaderOf, Topic: DefaultTopic} }
func followerOf0() *Target  { return &Target{Role: RoleFollowerOf, Topic: DefaultTopic} }
func followersOf0() *Target { return &Target{Role: RoleFollowersOf, Topic: DefaultTopic} }
func replicasOf0() *Target  { return &Target{Role: RoleReplicasOf, Topic: DefaultTopic} }

// twoTopics are the default topic and a second one like it: a transaction spans at least two
// topics (the workloads make every transaction of two or more records atomic across topics).
func twoTopics() []Topic {
	return []Topic{
		{Name: DefaultTopic, Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2},
		{Name: SecondTopic, Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2},
	}
}

// dedicatedControllers moves the KRaft quorum off the brokers, for scenarios that stop two of
// three brokers: on combined nodes that would also stop two of three controllers, the quorum
// would be lost, and acks=all writes would hang instead of failing with NOT_ENOUGH_REPLICAS.
func dedicatedControllers(s *Scenario) { s.Topology.DedicatedControllers = true }

func timeline(steps ...Step) Schedule { return Schedule{Kind: ScheduleTimeline, Timeline: steps} }

func step(at, dur float64, name FaultName, t *Target) Step {
	return Step{At: sec(at), For: sec(dur), Fault: Fault{Name: name, Target: t}}
}

// base is the catalogue's defaults: 3 nodes, topic "verity" with 3 partitions, RF 3, min ISR
// 2, unclean off; acks=all idempotent producers (two one at a time, one async); one
// read_committed consumer; 60 s; no faults.
func base(name, description, source string) Scenario {
	return Scenario{
		Name:        name,
		Description: description,
		Source:      source,
		Topology:    Topology{Nodes: 3},
		Topics:      []Topic{{Name: DefaultTopic, Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2}},
		Client:      Client{Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksAll), Idempotence: new(true)}, Isolation: kafkaconf.ReadCommitted},
		Workload: Workload{
			Producers: []ProducerGroup{{Count: 2, Topic: DefaultTopic}, {Count: 1, Async: true, Topic: DefaultTopic}},
			Consumers: Consumers{ReadCommitted: 1, Topics: []string{DefaultTopic}},
		},
		Faults:   Schedule{Kind: ScheduleNone},
		Duration: sec(60),
		Seed:     1,
	}
}

func defaultScenario() Scenario {
	s := base("default", "The defaults that keep Kafka's durability promise, under one leader crash.", "000 §6, §20.5")
	s.Tags = []Tag{TagDurability}
	s.Faults = timeline(step(20, 20, FaultKill, leaderOf0()))
	s.Expect = Expectation{
		Text: "acks=all with min.insync.replicas=2 and unclean election off: a write is acknowledged only once every " +
			"ISR member (at least 2) has it, so when p0's leader is SIGKILLed an in-sync follower takes over with every " +
			"acknowledged write; idempotence de-duplicates the producers' retries and keeps their order. No anomaly is permitted.",
	}
	return s
}

func labFollowerDown() Scenario {
	s := base("lab-follower-down", "Stop one follower of p0 for 30 s while writing.", "000 §20.3, 001 §10")
	s.Tags = []Tag{TagLab, TagDurability}
	s.Faults = timeline(step(10, 30, FaultStop, followerOf0()))
	s.Expect = Expectation{
		Text: "With one follower of p0 down its ISR shrinks to 2, which still meets min.insync.replicas=2, so acks=all " +
			"writes keep succeeding; nothing acknowledged is lost and the follower catches up from the leader when it returns.",
	}
	return s
}

func labISRBelowMin() Scenario {
	s := base("lab-isr-below-min", "Stop both followers of p0 while acks=all producers and one acks=1 producer write.", "000 §20.4, 001 §10")
	s.Tags = []Tag{TagLab, TagDurability}
	dedicatedControllers(&s)
	s.Workload.Producers = append(s.Workload.Producers, ProducerGroup{Count: 1, Topic: DefaultTopic, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksLeader), Idempotence: new(false)}})
	s.Faults = timeline(step(10, 30, FaultStop, followersOf0()))
	s.Expect = Expectation{
		Text: "With both followers of p0 stopped its ISR is the leader alone, below min.insync.replicas=2: acks=all writes to " +
			"p0 fail with NOT_ENOUGH_REPLICAS (reported as unavailability, not an anomaly) while the acks=1 producer's " +
			"writes still succeed (min ISR applies to acks=all only). After the followers start, no acknowledged acks=all " +
			"write is lost, and none was acknowledged while the ISR was below min ISR.",
	}
	return s
}

func labLeaderFailover() Scenario {
	s := base("lab-leader-failover", "SIGKILL p0's leader, start it 20 s later.", "000 §20.5")
	s.Tags = []Tag{TagLab, TagDurability}
	s.Faults = timeline(step(15, 20, FaultKill, leaderOf0()))
	s.Expect = Expectation{
		Text: "The controller elects a new leader of p0 from its ISR, which holds every acknowledged write (acks=all, " +
			"min ISR 2), so none is lost; the old leader rejoins as a follower, truncating only what was never acknowledged.",
	}
	return s
}

func labAbortInvisible() Scenario {
	s := base("lab-abort-invisible", "Transactional producers abort 30 % of their transactions; consumers read in both isolation levels.", "000 §20.8")
	s.Tags = []Tag{TagLab, TagTransactions}
	s.Topics = twoTopics()
	s.Workload = Workload{
		Transactional: TxnProducers{Count: 2, Topics: []string{DefaultTopic, SecondTopic}},
		Consumers:     Consumers{ReadCommitted: 1, ReadUncommitted: 1, Topics: []string{DefaultTopic, SecondTopic}},
	}
	s.Client.Transactions = Transactions{AbortProbability: 0.3}
	s.Expect = Expectation{
		Text: "Aborted records stay in the log and their abort markers hide them from read_committed readers, so the " +
			"read_committed consumer must see none of them (aborted-read forbidden) and must see every committed " +
			"transaction whole; the read_uncommitted consumer may see them (aborted-read permitted for it).",
		Likely:  []guarantee.Anomaly{guarantee.AbortedRead},
		Provoke: "30 % of the transactions abort on purpose and a read_uncommitted consumer reads the same partitions, so it meets aborted records in every run.",
	}
	return s
}

func labFencing() Scenario {
	s := base("lab-fencing", "A second instance takes a transactional producer's transactional.id mid-transaction.", "000 §11.7, §20.10")
	s.Tags = []Tag{TagLab, TagTransactions}
	s.Topics = twoTopics()
	s.Workload = Workload{
		Transactional: TxnProducers{Count: 2, Topics: []string{DefaultTopic, SecondTopic}},
		Consumers:     Consumers{ReadCommitted: 1, Topics: []string{DefaultTopic, SecondTopic}},
	}
	s.Client.Transactions = Transactions{ZombieProbability: 0.1, AbortProbability: 0.1}
	s.Expect = Expectation{
		Text: "initTransactions by the new instance bumps the producer epoch and fences the old one: the old instance's " +
			"later sends and commit fail, and none of its records written after the fence becomes visible as committed.",
	}
	return s
}

func labLSOHold() Scenario {
	s := base("lab-lso-hold", "One transaction is held open for 30 s while plain producers keep writing.", "000 §13.5, §20.10")
	s.Tags = []Tag{TagLab, TagTransactions}
	s.Topics = twoTopics()
	s.Workload.Transactional = TxnProducers{Count: 1, Topics: []string{DefaultTopic, SecondTopic}}
	s.Workload.Consumers = Consumers{ReadCommitted: 1, ReadUncommitted: 1, Topics: []string{DefaultTopic, SecondTopic}}
	s.Client.Transactions = Transactions{HoldOpen: sec(30)}
	s.Duration = sec(75)
	s.Expect = Expectation{
		Text: "read_committed readers never read past the LSO, the first offset of the earliest open transaction: while " +
			"the transaction is open their positions stall although the high watermark advances (measured and reported), " +
			"then proceed after the commit without skipping or repeating anything.",
	}
	return s
}

func acks0LeaderLoss() Scenario {
	s := base("acks0-leader-loss", "acks=0 producers while p0's leader is SIGKILLed.", "000 §2.1")
	s.Tags = []Tag{TagDurability}
	s.Client.Acks, s.Client.Idempotence = new(kafkaconf.AcksNone), new(false)
	s.Faults = timeline(step(20, 20, FaultKill, leaderOf0()))
	s.Expect = Expectation{
		Text: "With acks=0 the producer does not wait for the broker: nothing is acknowledged, offsets are unknown (-1), " +
			"and records on their way to the dying leader are lost without any error. Loss is permitted.",
	}
	return s
}

func acks1LeaderLoss() Scenario {
	s := base("acks1-leader-loss", "acks=1 producers; p0's followers are slowed, then its leader is SIGKILLed.", "000 §2.2, 001 §7")
	s.Tags = []Tag{TagDurability}
	s.Client.Acks, s.Client.Idempotence = new(kafkaconf.AcksLeader), new(false)
	s.Workload.Producers = []ProducerGroup{{Count: 2, Topic: DefaultTopic}, {Count: 2, Async: true, Topic: DefaultTopic}}
	s.Faults = timeline(
		Step{At: sec(10), For: sec(30), Fault: Fault{Name: FaultLatency, Target: leaderOf0(),
			Params: Params{Links: LinksFetch, Delay: sec(1), Jitter: Duration(100 * time.Millisecond)}}},
		step(20, 15, FaultKill, leaderOf0()),
	)
	s.Expect = Expectation{
		Text: "With acks=1 the leader acknowledges a write as soon as it has appended it, before any follower copied it; " +
			"when the leader dies, the follower elected in its place lacks the newest acknowledged writes and the old " +
			"leader truncates them when it rejoins. Lost acknowledged writes are permitted.",
		Likely: []guarantee.Anomaly{guarantee.LostWrite},
		Provoke: "A 1 s latency toxic on the fetch links of p0's followers keeps them about a second behind the leader " +
			"(still inside replica.lag.time.max.ms, so still in the ISR and electable); killing the leader 10 s later " +
			"then loses the last second of acks=1 writes in most runs.",
	}
	return s
}

// diskLossTimeline stops both followers of p0, keeps writing to the leader alone, wipes the
// leader's disk, and lets the followers start again.
func diskLossTimeline() Schedule {
	return timeline(
		step(10, 40, FaultStop, followersOf0()),
		Step{At: sec(25), Fault: Fault{Name: FaultDiskLoss, Target: leaderOf0()}},
	)
}

func minISR1DiskLoss() Scenario {
	s := base("minisr1-disk-loss", "min.insync.replicas=1: stop both followers of p0, keep writing, wipe the leader's disk, restart all.", "001 §16 case 4")
	s.Tags = []Tag{TagDurability}
	dedicatedControllers(&s)
	s.Topics[0].MinInsyncReplicas = 1
	s.Faults = diskLossTimeline()
	s.Duration = sec(75)
	s.Expect = Expectation{
		Text: "With min.insync.replicas=1 the ISR may shrink to the leader alone and acks=all writes are still " +
			"acknowledged; when that leader's disk is then lost, those writes existed nowhere else. Loss is permitted.",
		Likely: []guarantee.Anomaly{guarantee.LostWrite},
		Provoke: "Both followers are stopped first, so for 15 s the leader alone holds (and, with min ISR 1, " +
			"acknowledges) every write to p0; then its data directory is wiped and it restarts empty.",
	}
	return s
}

func minISR2DiskLoss() Scenario {
	s := base("minisr2-disk-loss", "min.insync.replicas=2: the same sequence as minisr1-disk-loss.", "000 §6")
	s.Tags = []Tag{TagDurability}
	dedicatedControllers(&s)
	s.Faults = diskLossTimeline()
	s.Duration = sec(75)
	s.Expect = Expectation{
		Text: "With min.insync.replicas=2, once both followers are stopped acks=all writes to p0 are rejected " +
			"(NOT_ENOUGH_REPLICAS: unavailability, reported); every write acknowledged before was on all three replicas, " +
			"so losing the leader's disk loses none of them.",
	}
	return s
}

// powerLossAllReplicas cuts the power of every replica of p0 at once. The controllers are
// dedicated, so that the brokers' power loss leaves the quorum up (a controller's power loss is
// a different question: its metadata log is fsynced by the quorum).
func powerLossAllReplicas() Scenario {
	s := base("power-loss-all-replicas", "Cut the power of every replica of p0 at once, with Kafka's default flush settings.", "000 §2.5, 001 §16 case 6")
	s.Tags = []Tag{TagDurability, TagPowerLoss}
	dedicatedControllers(&s)
	s.Faults = timeline(step(20, 10, FaultPowerLoss, replicasOf0()))
	s.Expect = Expectation{
		Text: "Kafka acknowledges a write once the in-sync replicas have appended it, not once it is on a disk, and by " +
			"default it fsyncs a log only when a segment rolls. A power cut of every replica at once loses what they " +
			"had acknowledged since: beyond the documented guarantee, so loss is permitted.",
		Likely: []guarantee.Anomaly{guarantee.LostWrite},
		Provoke: "After 20 s of writes the three brokers (every replica of p0, and of every other partition) lose " +
			"power together: SIGKILL, and the lazy filesystem under each drops every write no fsync made durable. " +
			"They start again 10 s later.",
	}
	return s
}

func powerLossAllReplicasFlushEach() Scenario {
	s := powerLossAllReplicas()
	s.Name, s.Description = "power-loss-all-replicas-flush1", "The same power cut of every replica of p0, with flush.messages=1 on the topic."
	s.Topics[0].Config = map[string]string{kafkaconf.TopicFlushMessages: "1"}
	s.Expect = Expectation{
		Text: "With flush.messages=1 every replica fsyncs each append before it acknowledges it or fetches further, " +
			"so an acknowledged write is on min.insync.replicas disks: a power cut of every replica loses none of them.",
	}
	return s
}

func powerLossLeader() Scenario {
	s := base("power-loss-leader", "Cut the power of p0's leader alone: acks=all, min.insync.replicas=2.", "000 §2.5")
	s.Tags = []Tag{TagDurability, TagPowerLoss}
	s.Topology.PowerLoss = true
	s.Faults = timeline(step(20, 15, FaultPowerLoss, leaderOf0()))
	s.Expect = Expectation{
		Text: "An acknowledged acks=all write is in the page cache of at least min.insync.replicas=2 replicas; the " +
			"leader's power loss takes one of them, and a broker that restarts after an unclean shutdown rejoins " +
			"the ISR only once it has caught up. Nothing acknowledged may be lost.",
	}
	return s
}

// diskErrorLeader fails every write to p0's log on its leader with EIO. Kafka takes a log
// directory that fails an I/O offline, and a broker whose every log directory is offline shuts
// down (LogManager: "Shutdown broker because all log dirs in ... have failed"): a follower in
// the ISR takes over, and the broker, started again with its data, recovers its log and
// catches up.
func diskErrorLeader() Scenario {
	s := base("disk-error-leader", "Every write to p0's log on its leader fails with EIO for 20 s: acks=all, min.insync.replicas=2.",
		"KIP-112; Kafka docs, log.dirs")
	s.Tags = []Tag{TagDurability, TagDisk}
	s.Faults = timeline(Step{At: sec(20), For: sec(20), Fault: Fault{Name: FaultDiskError, Target: leaderOf0(), Params: Params{Path: DiskLog}}})
	s.Expect = Expectation{Text: "A broker takes a log directory that fails an I/O offline, and shuts down when it has no other: " +
		"p0's leader stops at its first failed append, which it never acknowledged. An acknowledged acks=all write is on " +
		"min.insync.replicas=2 replicas, so a follower in the ISR that takes over has it: nothing acknowledged may be lost."}
	return s
}

// diskErrorLogDir is diskErrorLeader on nodes with two log directories and the metadata log in
// a third: the leader takes the directory that holds p0 offline and goes on with the other
// (KIP-112, KIP-858). It tells the controller, which leaves it out of the ISR of every
// partition in that directory and elects leaders for those it led; the heal restarts it, as an
// operator would after replacing the disk, and the directory comes back.
func diskErrorLogDir() Scenario {
	s := base("disk-error-logdir", "Two log directories per broker: every write to p0's log on its leader fails with EIO for 20 s; "+
		"acks=all, min.insync.replicas=2.", "KIP-112; KIP-858; Kafka docs, log.dirs")
	s.Tags = []Tag{TagDurability, TagDisk}
	s.Topology.LogDirs = 2
	s.Topics[0].Partitions = 6
	s.Faults = timeline(Step{At: sec(20), For: sec(20), Fault: Fault{Name: FaultDiskError, Target: leaderOf0(), Params: Params{Path: DiskLog}}})
	s.Expect = Expectation{Text: "A broker takes a log directory that fails an I/O offline and goes on with its others; the " +
		"controller leaves it out of the ISR of the partitions in that directory and elects new leaders for them from the ISR. " +
		"An acknowledged acks=all write is on min.insync.replicas=2 replicas, so nothing acknowledged may be lost, and the " +
		"partitions in the other directory stay where they are."}
	return s
}

// diskFullFollower fills the disk under a follower's copy of p0: its appends of fetched records
// fail with ENOSPC, its log directory goes offline and the broker stops; the leader shrinks the
// ISR to the two replicas left, min.insync.replicas, and goes on.
func diskFullFollower() Scenario {
	s := base("disk-full-follower", "The disk under a follower's copy of p0 is full for 20 s: acks=all, min.insync.replicas=2.",
		"KIP-112; Kafka docs, log.dirs")
	s.Tags = []Tag{TagDurability, TagDisk}
	s.Faults = timeline(Step{At: sec(20), For: sec(20), Fault: Fault{Name: FaultDiskFull, Target: followerOf0(), Params: Params{Path: DiskLog}}})
	s.Expect = Expectation{Text: "A full disk fails the follower's appends with ENOSPC, which Kafka treats as any I/O error: the " +
		"log directory goes offline and the broker stops. The leader and the other follower are min.insync.replicas=2: writes " +
		"go on, and nothing acknowledged may be lost."}
	return s
}

// diskErrorMetadata fails the fsyncs of the KRaft metadata log on the active controller (every
// node is a controller and a broker): a controller that cannot make its log durable must not
// acknowledge, and Kafka stops a node whose metadata log directory fails; the other two voters
// elect a new controller.
func diskErrorMetadata() Scenario {
	s := base("disk-error-metadata", "Every fsync of the metadata log on the active controller fails with EIO for 20 s.",
		"KIP-595; KIP-858; Kafka docs, metadata.log.dir")
	s.Tags = []Tag{TagDurability, TagDisk}
	s.Faults = timeline(Step{At: sec(20), For: sec(20), Fault: Fault{Name: FaultDiskError, Target: &Target{Role: RoleController},
		Params: Params{Path: DiskMetadata, Op: "fsync"}}})
	s.Expect = Expectation{Text: "A KRaft voter appends to the metadata log and fsyncs it before it counts the entry as its own; a failed " +
		"fsync takes the metadata log directory offline, and a node without it stops. The other two voters are a majority: they " +
		"elect a controller, and nothing the quorum committed (leaders, epochs) nor any acknowledged write may be lost."}
	return s
}

// slowDiskLeader slows every write to p0's log on its leader: appends take longer, producers
// wait, nothing fails.
func slowDiskLeader() Scenario {
	s := base("slow-disk-leader", "Every write to p0's log on its leader takes 100 ms longer for 20 s.", "Kafka docs, log.dirs")
	s.Tags = []Tag{TagDurability, TagDisk}
	s.Faults = timeline(Step{At: sec(20), For: sec(20), Fault: Fault{Name: FaultSlowDisk, Target: leaderOf0(),
		Params: Params{Path: DiskLog, Op: "write", Delay: sec(0.1)}}})
	s.Expect = Expectation{Text: "A slow disk is not a failed one: the leader's appends and its followers' fetches wait, the " +
		"producers' latency grows, and every acknowledged write stays."}
	return s
}

// powerLossControllers cuts the power of the whole KRaft quorum, then of one controller: what
// the quorum committed (the topics, their partitions' leaders and leader epochs) was fsynced by a
// majority before it was committed, so it must all be there when they start again. A clean
// stop of p0's leader before each cut makes the quorum commit a new leader and epoch at once
// (controlled shutdown moves its partitions; a kill would wait out the broker session timeout),
// for metadata-lost to compare afterwards.
func powerLossControllers() Scenario {
	s := base("power-loss-controllers", "Stop p0's leader, then cut the power of every dedicated controller at once; later the same with one controller.", "000 §2.5")
	s.Tags = []Tag{TagDurability, TagPowerLoss, TagSlow}
	dedicatedControllers(&s)
	s.Topology.PowerLoss = true
	// Each stop and each cut leaves the cluster time to be whole again (the broker caught up,
	// the quorum electing) before the next begins: a controlled shutdown waits for the
	// controller, and three controllers started at once took 30 s to elect on a 2-core machine.
	s.Duration = sec(120)
	s.Faults = timeline(
		step(5, 5, FaultStop, leaderOf0()),
		step(25, 10, FaultPowerLoss, &Target{Role: RoleControllers}),
		step(75, 5, FaultStop, leaderOf0()),
		step(92, 8, FaultPowerLoss, &Target{Role: RoleNode, Node: 101}),
	)
	s.Expect = Expectation{
		Text: "A KRaft controller fsyncs its metadata log before it counts towards a commit, so the leaders and leader " +
			"epochs the quorum committed after each stop survive a power cut of every controller, and of one: no " +
			"partition's leader epoch goes back or names two leaders (metadata-lost). While the quorum is down the " +
			"brokers keep serving what they lead; afterwards the cluster heals and no acknowledged write is lost.",
	}
	return s
}

func uncleanIsolation() Scenario {
	s := base("unclean-isolation", "unclean.leader.election.enable=true: cut the fetches of p0's followers from its leader, then isolate the leader.", "000 §7.4, 001 §16 case 5")
	s.Tags = []Tag{TagDurability}
	s.Topics[0].UncleanLeaderElection = true
	s.Topics[0].MinInsyncReplicas = 1
	s.Faults = timeline(
		Step{At: sec(5), For: sec(45), Fault: Fault{Name: FaultOneWayCut, Target: followersOf0(), Params: Params{To: leaderOf0()}}},
		step(25, 20, FaultIsolate, leaderOf0()),
	)
	s.Expect = Expectation{
		Text: "With unclean leader election enabled an out-of-sync replica may become leader, and the log is truncated " +
			"to what it had: acknowledged writes it never copied are lost. Loss is permitted.",
		Likely: []guarantee.Anomaly{guarantee.LostWrite},
		Provoke: "First only the connections the followers open to the leader are cut (their fetches), so the leader " +
			"still reaches the controller and stays leader; after replica.lag.time.max.ms its ISR is itself alone and, " +
			"with min.insync.replicas=1 (set here so that it keeps acknowledging; with 2 it would refuse and nothing " +
			"acknowledged could be lost), it goes on acknowledging writes the followers never get. Then the leader is " +
			"isolated entirely: the controller fences it and, with no ISR member left, elects an out-of-sync follower, " +
			"truncating those writes. (Cutting every link between the leader and its followers would not do: on combined " +
			"nodes it also cuts the leader from the controller, which fences it while the followers are still in the ISR, " +
			"and the election is clean.)",
	}
	return s
}

func elrLastReplica() Scenario {
	s := base("elr-last-replica", "Shrink p0's ISR below min ISR, then kill its leader: a replica from the ELR takes over.", "000 §7.2")
	s.Tags = []Tag{TagDurability}
	dedicatedControllers(&s)
	s.Faults = timeline(
		step(10, 30, FaultStop, followersOf0()),
		step(20, 30, FaultKill, leaderOf0()),
	)
	s.Duration = sec(75)
	s.Expect = Expectation{
		Text: "Kafka 4.x keeps the eligible leader replicas (ELR, KIP-966): replicas that left the ISR while it was below " +
			"min.insync.replicas still hold every acknowledged write (acks=all writes were rejected meanwhile), so when the " +
			"last ISR member dies one of them can lead without loss. No acknowledged write may be lost.",
	}
	return s
}

// unansweringLeader cuts p0's leader off from its peers with producers writing, and states how
// long a producer may go without progress: the new leader is elected once the old one's broker
// session expires (about 9 s), and a producer that refreshes its metadata after a timed-out
// request (5 s) is writing to it well within 25 s. One that keeps retrying the old leader, which
// still answers clients (sarama, in some runs), stalls until the heal: the bound catches that.
func unansweringLeader() Scenario {
	s := base("unanswering-leader", "Cut p0's leader off from its peers for 40 s while producers write: every producer must "+
		"move to the new leader within 25 s (max_stall).", "000 §20.5")
	s.Tags = []Tag{TagLiveness, TagDurability}
	s.Client.RequestTimeout = sec(5)
	s.Workload.Consumers = Consumers{}
	s.Faults = timeline(step(20, 40, FaultIsolate, leaderOf0()))
	s.Duration = sec(90)
	s.Expect = Expectation{
		Text: "p0's leader is cut off from its peers (its links to them black-holed; clients still reach it) and the " +
			"controller elects an in-sync follower once its broker session expires, with every acknowledged write (acks=all, " +
			"min ISR 2): safety passes. The old leader can no longer reach min ISR, so it answers sends with timeouts; a " +
			"producer that refreshes its metadata sends to the new leader, so none goes 25 s without progress. Under a client " +
			"without leaves-unanswering-leader (sarama) a producer can keep its sends on the old leader until the heal: " +
			"fail (liveness) in some runs, a known behaviour of that client.",
		Liveness: &LivenessExpect{MaxStall: sec(25), BreaksWithout: []kafkaconf.Capability{kafkaconf.CapLeavesUnansweringLeader},
			Why: "sarama can keep a partition's sends on a leader cut off from its peers, which answers them with timeouts, " +
				"until the fault heals, though a new leader was elected (docs/clients.md)"},
	}
	return s
}

// regressKIP966ELR is elr-last-replica with the last ISR member's power cut instead of a kill:
// it comes back without what it had not fsynced. Without eligible leader replicas
// (eligible.leader.replicas.version 0) it is still the partition's whole ISR, so it is elected
// again when it returns and the followers, which held every acknowledged write, truncate to its
// shorter log: acknowledged writes are lost. With ELR (KIP-966, level 1, the default of 4.1 and
// later) the followers that left the ISR below min.insync.replicas stay eligible, one of them is
// elected when it returns, and the replica that shut down uncleanly is no longer eligible.
func regressKIP966ELR() Scenario {
	s := base("regress-kip966-elr", "Shrink p0's ISR below min ISR, then cut its leader's power: lost writes without eligible "+
		"leader replicas (eligible.leader.replicas.version 0), none with them (1).", "KIP-966")
	s.Tags = []Tag{TagRegression, TagDurability, TagPowerLoss}
	dedicatedControllers(&s)
	s.Topology.PowerLoss = true
	s.Kafka.Features = kafkaconf.FeatureLevels{kafkaconf.FeatureELR: 1}
	// The followers return 10 s before the leader: with ELR one of them can lead by then.
	s.Faults = timeline(
		step(10, 30, FaultStop, followersOf0()),
		step(20, 30, FaultPowerLoss, leaderOf0()),
	)
	s.Duration = sec(75)
	s.Regression = &Regression{Bug: "KIP-966", Knob: "elr-version", Bad: "0", Fixed: "1", Shows: []guarantee.Anomaly{guarantee.LostWrite}}
	s.Expect = Expectation{
		Text: "Acknowledged acks=all writes are on every follower that was in the ISR when they were acknowledged; once the " +
			"ISR is below min.insync.replicas no write is acknowledged. With eligible leader replicas (KIP-966) those " +
			"followers stay eligible and the leader that lost its unflushed tail in the power cut is not, so nothing " +
			"acknowledged may be lost. Without them (--elr-version 0, the regression's bad side) the leader is elected " +
			"again on its return and the followers truncate to it.",
	}
	return s
}

func idempotentAckLoss() Scenario {
	s := base("idempotent-ack-loss", "Idempotent producers while the answers of p0's leader are lost, repeatedly.", "000 §0, §9")
	s.Tags = []Tag{TagDelivery}
	s.Client.RequestTimeout, s.Client.DeliveryTimeout = sec(5), sec(30)
	s.Faults = Schedule{Kind: SchedulePeriodic, Periodic: &Periodic{
		Interval: sec(15), Hold: sec(6), Start: sec(10),
		Set: []Fault{{Name: FaultAckLoss, Target: leaderOf0(), Params: Params{Hold: true}}},
	}}
	s.Expect = Expectation{
		Text: "The broker appends records whose acknowledgements never reach the producer, which retries them; the " +
			"idempotent producer's id, epoch and sequence numbers let the broker recognise the retries, so no record is " +
			"appended twice. Sends the producer gave up on are unknown, not lost, and the final reads resolve them.",
	}
	return s
}

func idempotentInflight5AckLoss() Scenario {
	s := base("idempotent-inflight5-ack-loss", "Idempotent async producers with 5 requests in flight while p0's leader's answers are lost, then the leader is killed, then the new leader's answers are lost.", "000 §0, §9; KIP-98")
	s.Tags = []Tag{TagDelivery}
	s.Requires = []kafkaconf.Capability{kafkaconf.CapIdempotentInFlight5}
	s.Client.Name = kafkaconf.FranzGo
	s.Client.MaxInFlight = new(kafkaconf.MaxIdempotentInFlight)
	s.Client.Linger = Duration(5 * time.Millisecond)
	s.Client.RequestTimeout, s.Client.DeliveryTimeout = sec(5), sec(30)
	s.Workload.Producers = []ProducerGroup{{Count: 3, Async: true, Topic: DefaultTopic}}
	ackLoss := Fault{Name: FaultAckLoss, Target: leaderOf0(), Params: Params{Hold: true}}
	s.Faults = timeline(
		Step{At: sec(10), For: sec(8), Fault: ackLoss},
		step(25, 15, FaultKill, leaderOf0()),
		Step{At: sec(45), For: sec(8), Fault: ackLoss},
	)
	s.Expect = Expectation{
		Text: "The broker keeps, for each idempotent producer and partition, the sequence numbers of the last 5 batches it " +
			"appended: with 5 requests in flight, a batch whose answer was lost and that is sent again is recognised and not " +
			"appended twice, and a batch that arrives after a gap in the sequence is refused until the gap is filled, so " +
			"order holds too. Across the leader's death the new leader rebuilds that state from its log. No duplicate and " +
			"no reordering are permitted. Sarama keeps one idempotent request in flight, so this needs franz-go.",
	}
	return s
}

func plainAckLoss() Scenario {
	s := base("plain-ack-loss", "Non-idempotent producers with retries while the answers of p0's leader are lost.", "000 §8.1")
	s.Tags = []Tag{TagDelivery}
	s.Client.Idempotence, s.Client.MaxInFlight = new(false), new(1)
	s.Client.RequestTimeout, s.Client.DeliveryTimeout = sec(5), sec(30)
	ackLoss := Fault{Name: FaultAckLoss, Target: leaderOf0(), Params: Params{Hold: true}}
	s.Faults = timeline(Step{At: sec(10), For: sec(8), Fault: ackLoss}, Step{At: sec(30), For: sec(8), Fault: ackLoss})
	s.Expect = Expectation{
		Text: "Without idempotence the broker cannot tell a retry from a new record: when an acknowledgement is lost the " +
			"producer retries and the record is appended again. Duplicates are permitted; with one request in flight " +
			"order is still kept.",
		Likely: []guarantee.Anomaly{guarantee.Duplicate},
		Provoke: "ack-loss in hold mode black-holes the leader's answers while requests still arrive, so each request " +
			"is appended, times out after request_timeout (5 s) and is retried within delivery_timeout (30 s); the " +
			"retry is appended again.",
	}
	return s
}

// resetPeerSchedule resets the client connections to p0's leader every 10 s.
func resetPeerSchedule() Schedule {
	return Schedule{Kind: SchedulePeriodic, Periodic: &Periodic{
		Interval: sec(10), Hold: sec(3), Start: sec(10),
		Set: []Fault{{Name: FaultResetPeer, Target: leaderOf0(), Params: Params{After: Duration(200 * time.Millisecond)}}},
	}}
}

func plainInflightReorder() Scenario {
	s := base("plain-inflight-reorder", "Non-idempotent async producers with 5 requests in flight while their connections are reset.", "000 §8.2")
	s.Tags = []Tag{TagDelivery}
	s.Client.Idempotence, s.Client.MaxInFlight = new(false), new(5)
	s.Client.Linger = Duration(5 * time.Millisecond)
	s.Workload.Producers = []ProducerGroup{{Count: 3, Async: true, Topic: DefaultTopic}}
	s.Faults = resetPeerSchedule()
	s.Expect = Expectation{
		Text: "Without idempotence, with several requests in flight a failed batch may be retried after later batches went " +
			"through, so it lands after them: Kafka permits reordering of one producer's sends here (and duplicates too). " +
			"This run shows the configuration is judged so; it does not reliably produce a reordering: sarama's async " +
			"producer, unlike Kafka's Java client, holds back a partition's newer messages while it retries older ones, and " +
			"a reset connection fails every request in flight at once, so the retries go out in order.",
	}
	return s
}

func plainInflight1Order() Scenario {
	s := plainInflightReorder()
	s.Name = "plain-inflight1-order"
	s.Description = "The same as plain-inflight-reorder with one request in flight."
	s.Client.MaxInFlight = new(1)
	s.Expect = Expectation{
		Text: "With max.in.flight.requests.per.connection=1 a request cannot be overtaken, so retries keep the send " +
			"order: reorder is forbidden even without idempotence (duplicates are still permitted).",
	}
	return s
}

func appResend() Scenario {
	s := base("app-resend", "Idempotent producers whose application sends a payload again after an unknown outcome, under ack loss.", "000 §8.4, §9.5")
	s.Tags = []Tag{TagDelivery}
	s.Client.AppResend = 1
	// Hold mode: the requests already on their way are appended and their answers never come,
	// so a send the client gives up is in the log, and so is the application's resend of it
	// whenever it reaches the leader. The fault must outlast the slowest way a client gives up:
	// sarama and franz-go after their one retry's read timeout (request timeout + 5 s, twice:
	// about 14 s); Kafka's Java client only at delivery.timeout.ms (20 s), for its retry waits
	// for a new connection whose first answer (ApiVersions) is black-holed too, and a connection
	// not ready costs a batch no attempt. At 25 s every client has given up some sends while the
	// fault holds, and their resends are appended, during it or after it.
	// (sarama's own retries are de-duplicated by idempotence, so they must run out; in close mode
	// nothing is appended while the fault holds, and a resend that gives up then is lost too.)
	s.Client.RequestTimeout, s.Client.DeliveryTimeout, s.Client.Retries = sec(2), sec(20), new(1)
	ackLoss := Fault{Name: FaultAckLoss, Target: leaderOf0(), Params: Params{Hold: true}}
	s.Faults = timeline(Step{At: sec(10), For: sec(25), Fault: ackLoss}, Step{At: sec(50), For: sec(25), Fault: ackLoss})
	s.Duration = sec(90)
	s.Expect = Expectation{
		Text: "Idempotence de-duplicates the producer's own retries only: when the application sends the same payload " +
			"again after a send failed or timed out, that is a new record, and if the first one had been appended both " +
			"are in the log. Duplicates are permitted in every configuration.",
		Likely:      []guarantee.Anomaly{guarantee.Duplicate},
		LikelyNeeds: []kafkaconf.Capability{kafkaconf.CapIdempotentGivesUp},
		Provoke: "ack-loss in hold mode black-holes the leader's answers for 25 s while the requests sent are appended; " +
			"the client gives those sends up (sarama and franz-go after one retry with a 2 s request timeout, about 14 s; " +
			"Kafka's Java client at its 20 s delivery timeout), and the application resends each payload once, so the first " +
			"copy and the resend are both in the log.",
	}
	return s
}

// eosBase is a read-process-write pipeline from eos-in to eos-out, plus transactional
// producers on their own topic, with 20 % aborts.
func eosBase(name, description, source string) Scenario {
	s := base(name, description, source)
	s.Topics = []Topic{
		{Name: "eos-in", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2},
		{Name: "eos-out", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2},
		{Name: "txn", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2},
		{Name: "txn-b", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2},
	}
	s.Workload = Workload{
		Producers:     []ProducerGroup{{Count: 2, Topic: "eos-in"}},
		Transactional: TxnProducers{Count: 1, Topics: []string{"txn", "txn-b"}},
		Processors:    Processors{Count: 2, Input: "eos-in", Output: "eos-out"},
		Consumers:     Consumers{ReadCommitted: 1, ReadUncommitted: 1, Topics: []string{"eos-out", "txn", "txn-b"}},
	}
	s.Client.Transactions = Transactions{AbortProbability: 0.2}
	s.Duration = sec(90)
	s.Expect = Expectation{}
	return s
}

func eosCoordinatorKill() Scenario {
	s := eosBase("eos-coordinator-kill", "Read-process-write and transactions while the transaction coordinator is SIGKILLed, repeatedly.", "000 §14, 002")
	s.Tags = []Tag{TagTransactions}
	s.Faults = Schedule{Kind: SchedulePeriodic, Periodic: &Periodic{
		Interval: sec(20), Hold: sec(10), Start: sec(15), Quiet: 0.2,
		Set: []Fault{{Name: FaultKill, Target: &Target{Role: RoleTxnCoordinator}}},
	}}
	s.Expect.Text = "A transaction coordinator that dies hands its transactions to the new leader of its " +
		"__transaction_state partition, which completes or aborts each one: every committed input record yields its " +
		"output exactly once in the committed output, group offsets move only with committed transactions, and " +
		"read_committed readers see no aborted record (read_uncommitted ones may)."
	return s
}

// txnReadBase: three processors whose transactions read and write one topic (txr): each polls,
// begins, sends two new records to random partitions, polls once more inside the transaction,
// and commits both polls' offsets with its records (10 % aborted on purpose). What one writes,
// the others read, so the dependency graph has edges every way; a read_committed consumer reads
// beside them.
func txnReadBase(name, description string) Scenario {
	s := base(name, description, "Jepsen's Redpanda and Bufstream analyses (G1c), KIP-98, KIP-447")
	s.Tags = []Tag{TagTransactions}
	s.Topics = []Topic{{Name: "txr", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2}}
	s.Client.Transactions = Transactions{AbortProbability: 0.1}
	s.Workload = Workload{
		Processors: Processors{Count: 3, Input: "txr", Output: "txr", Writes: 2},
		Consumers:  Consumers{ReadCommitted: 1, Topics: []string{"txr"}},
	}
	s.Expect = Expectation{Text: "At read_committed a transaction reads another's records only once that one's end is decided, " +
		"and ends after its own reads; a transaction that completed before another began ended before it. So no chain of " +
		"reads, a process's order and real time leads back where it began (G1c, G1c-process, G1c-realtime), no transaction " +
		"reads its own records before it commits (precommitted-read) and no read returns a record before its transaction's " +
		"commit was asked for (uncommitted-read). Write cycles (G0) are Kafka's to allow."}
	return s
}

func txnReadOf0() *Target { return &Target{Role: RoleLeaderOf, Topic: "txr"} }

func txnReadKill() Scenario {
	s := txnReadBase("txn-read-kill", "Transactions that read and write one topic while txr-0's leader is SIGKILLed, then the transaction coordinator.")
	s.Faults = timeline(step(15, 10, FaultKill, txnReadOf0()), Step{At: sec(35), For: sec(10), Fault: Fault{Name: FaultKill, Target: &Target{Role: RoleTxnCoordinator}}})
	return s
}

func txnReadPause() Scenario {
	s := txnReadBase("txn-read-pause", "Transactions that read and write one topic while txr-0's leader is paused (SIGSTOP), then the group coordinator.")
	s.Faults = timeline(step(15, 10, FaultPause, txnReadOf0()), Step{At: sec(35), For: sec(10), Fault: Fault{Name: FaultPause, Target: &Target{Role: RoleGroupCoordinator}}})
	return s
}

func txnReadIsolate() Scenario {
	s := txnReadBase("txn-read-isolate", "Transactions that read and write one topic while txr-0's leader is cut off from the other nodes and the clients.")
	s.Faults = timeline(step(15, 20, FaultIsolate, txnReadOf0()))
	return s
}

// txnReadRequestFaults aims request-level faults where transactions that read are most
// delicate: their ends (EndTxn), their offsets (TxnOffsetCommit) and their records (Produce),
// held, dropped or carried out with the answer lost.
func txnReadRequestFaults() Scenario {
	s := txnReadBase("txn-read-request-faults", "Transactions that read and write one topic under request faults: "+
		"EndTxn, TxnOffsetCommit and Produce held, dropped or unanswered where they go.")
	s.Client.RequestTimeout = sec(5)
	coord, group := &Target{Role: RoleTxnCoordinator}, &Target{Role: RoleGroupCoordinator}
	req := func(name FaultName, t *Target, api string) Fault {
		return Fault{Name: name, Target: t, Params: Params{API: api, Nth: 1}}
	}
	s.Faults = Schedule{Kind: SchedulePeriodic, Periodic: &Periodic{
		Interval: sec(12), Hold: sec(6), Start: sec(10), Quiet: 0.2,
		Set: []Fault{
			req(FaultHoldRequest, coord, "EndTxn"),
			req(FaultDropResponse, coord, "EndTxn"),
			req(FaultHoldRequest, group, "TxnOffsetCommit"),
			req(FaultDropRequest, group, "TxnOffsetCommit"),
			req(FaultHoldRequest, txnReadOf0(), "Produce"),
			req(FaultDropResponse, txnReadOf0(), "Produce"),
		},
	}}
	s.Duration = sec(75)
	return s
}

// txnReadUncommitted is the control: the same transactions read at read_uncommitted, where a
// transaction's poll inside it returns records of transactions still open, its own among them.
func txnReadUncommitted() Scenario {
	s := txnReadBase("txn-read-uncommitted", "The control: transactions that read and write one topic at read_uncommitted, no fault.")
	s.Workload.Processors.Isolation = kafkaconf.ReadUncommitted
	s.Expect = Expectation{
		Text: "read_uncommitted shows records of open transactions: a transaction's poll inside it returns what it " +
			"and others are writing, before their ends (precommitted-read, uncommitted-read), and reads may form cycles " +
			"(G1c); all of it is what that level permits, so the run passes.",
		Likely: []guarantee.Anomaly{guarantee.PrecommittedRead, guarantee.UncommittedRead},
		Provoke: "each transaction polls once more after its sends, at read_uncommitted: records of its own open " +
			"transaction on the partitions its member owns, and of the other members' open transactions.",
	}
	return s
}

// txnReadNoRewind is the control of where a member resumes: the processors skip their rewind
// after an aborted transaction, as an application that forgets KAFKA-17582 does, so each one's
// next transaction reads on past the aborted inputs and commits their offsets unprocessed.
func txnReadNoRewind() Scenario {
	s := txnReadBase("txn-read-no-rewind", "The control of where a consumer resumes: transactions that read and write one topic, "+
		"whose processors do not rewind after an abort, no fault.")
	s.Workload.Processors.SkipRewind = true
	s.Requires = []kafkaconf.Capability{kafkaconf.CapPositionKept}
	s.Expect = Expectation{
		Verdict: results.Fail,
		Text: "After a transaction that aborted, a processor must return to its group's committed offsets: Kafka's consumer " +
			"does not rewind by itself (KAFKA-17582), so one that skips the seek reads on past the aborted inputs, and its " +
			"next transaction commits their offsets without having processed them. Every such resume is skipped-ahead, " +
			"forbidden: the run fails.",
	}
	return s
}

// exploreRequestFaults looks for what is not known yet: the read-process-write and
// transactional workloads of the eos scenarios under request-level faults drawn at random from
// the periodic set, each aimed where that request goes: EndTxn and AddPartitionsToTxn at the
// transaction coordinator, TxnOffsetCommit at the group coordinator, Produce at a partition
// leader (of eos-out's partition 0, which the processors' transactions write), held (released
// late), dropped, or carried out with the answer lost, with a coordinator kill among them.
func exploreRequestFaults() Scenario {
	s := eosBase("explore-request-faults", "Read-process-write and transactions under request-level faults drawn at random: "+
		"EndTxn, AddPartitionsToTxn, TxnOffsetCommit and Produce held, dropped or unanswered where they go, and coordinator kills.", "KIP-890, KIP-447")
	s.Tags = []Tag{TagExplore, TagTransactions, TagSlow}
	s.Client.RequestTimeout = sec(5)
	coord, group := &Target{Role: RoleTxnCoordinator}, &Target{Role: RoleGroupCoordinator}
	outLeader := &Target{Role: RoleLeaderOf, Topic: "eos-out"}
	req := func(name FaultName, t *Target, api string) Fault {
		return Fault{Name: name, Target: t, Params: Params{API: api, Nth: 1}}
	}
	s.Faults = Schedule{Kind: SchedulePeriodic, Periodic: &Periodic{
		Interval: sec(15), Hold: sec(8), Start: sec(10), Quiet: 0.2,
		Set: []Fault{
			req(FaultHoldRequest, coord, "EndTxn"),
			req(FaultDropRequest, coord, "EndTxn"),
			req(FaultDropResponse, coord, "EndTxn"),
			req(FaultHoldRequest, coord, "AddPartitionsToTxn"),
			req(FaultHoldRequest, group, "TxnOffsetCommit"),
			req(FaultDropRequest, group, "TxnOffsetCommit"),
			req(FaultHoldRequest, outLeader, "Produce"),
			req(FaultDropRequest, outLeader, "Produce"),
			req(FaultDropResponse, outLeader, "Produce"),
			{Name: FaultKill, Target: coord},
		},
	}}
	s.Duration = sec(300)
	s.Expect.Text = "Whatever request is held or lost, and however late a held one arrives, exactly-once holds: every " +
		"committed input record yields its output once in the committed output, read_committed readers see no aborted " +
		"record and every committed transaction whole. A client on transaction protocol v1 that retries a timed-out EndTxn " +
		"at the same epoch is open to KAFKA-17754 (see regress-kafka-17754)."
	return s
}

// everyFault is one fault of each class Verity has, aimed at topic's partition 0 and at the
// coordinators: process (kill, pause, power loss), network (isolation, a client cut, a one-way
// cut), toxic (latency, resets), request-level (EndTxn, Produce and TxnOffsetCommit held,
// dropped or unanswered) and disk (EIO on the log and on the metadata log's fsync, a full
// follower disk, a slow fsync). A periodic schedule draws one at a time, so that each stays
// within what min.insync.replicas=2 promises to survive.
func everyFault(topic string) []Fault {
	leader := &Target{Role: RoleLeaderOf, Topic: topic}
	follower := &Target{Role: RoleFollowerOf, Topic: topic}
	coord, group := &Target{Role: RoleTxnCoordinator}, &Target{Role: RoleGroupCoordinator}
	req := func(name FaultName, t *Target, api string) Fault {
		return Fault{Name: name, Target: t, Params: Params{API: api, Nth: 1}}
	}
	return []Fault{
		{Name: FaultKill, Target: leader},
		{Name: FaultKill, Target: coord},
		{Name: FaultPause, Target: leader},
		{Name: FaultPowerLoss, Target: leader},
		{Name: FaultPowerLoss, Target: coord},
		{Name: FaultIsolate, Target: leader},
		{Name: FaultClientCut, Target: leader},
		{Name: FaultOneWayCut, Target: follower, Params: Params{To: leader}},
		{Name: FaultLatency, Target: leader, Params: Params{Links: LinksNode, Delay: Duration(300 * time.Millisecond), Jitter: Duration(50 * time.Millisecond)}},
		{Name: FaultResetPeer, Target: leader},
		req(FaultHoldRequest, coord, "EndTxn"),
		req(FaultDropResponse, coord, "EndTxn"),
		req(FaultHoldRequest, leader, "Produce"),
		req(FaultDropResponse, leader, "Produce"),
		req(FaultDropRequest, group, "TxnOffsetCommit"),
		{Name: FaultDiskError, Target: leader, Params: Params{Path: DiskLog}},
		{Name: FaultDiskError, Target: &Target{Role: RoleController}, Params: Params{Path: DiskMetadata, Op: "fsync"}},
		{Name: FaultDiskFull, Target: follower, Params: Params{Path: DiskLog}},
		{Name: FaultSlowDisk, Target: leader, Params: Params{Path: DiskAll, Delay: sec(0.5)}},
	}
}

// exploreEveryFault is the long search: read-process-write and transactions under a fault of
// every class, drawn at random per seed, on nodes on the lazy filesystem.
func exploreEveryFault() Scenario {
	s := eosBase("explore-every-fault", "Read-process-write and transactions under a fault of every class drawn at random, one at a time: "+
		"process, network, toxic, request-level, power and disk.", "KIP-98, KIP-447, KIP-890, KIP-112")
	s.Tags = []Tag{TagExplore, TagTransactions, TagPowerLoss, TagDisk, TagSlow}
	s.Client.RequestTimeout = sec(5)
	s.Faults = Schedule{Kind: SchedulePeriodic, Periodic: &Periodic{Interval: sec(20), Hold: sec(10), Start: sec(10), Quiet: 0.15,
		Set: everyFault("eos-out")}}
	s.Duration = sec(300)
	s.Expect.Text = "Each fault hits one node, one link set or one request at a time, within what three replicas and " +
		"min.insync.replicas=2 survive: no acknowledged write is lost, exactly-once holds (every committed input record yields " +
		"its output once in the committed output), read_committed readers see no aborted record and every committed " +
		"transaction whole, and nothing the quorum committed is lost."
	return s
}

// sinkEveryFault is everyFault without what needs a transactional producer (the transaction
// coordinator, its requests), with the group coordinator killed and the sinks' store cut and
// crashed instead.
func sinkEveryFault(topic string) []Fault {
	var out []Fault
	for _, f := range everyFault(topic) {
		if f.Target.Role == RoleTxnCoordinator || slices.Contains([]string{"EndTxn", "TxnOffsetCommit"}, f.Params.API) {
			continue
		}
		out = append(out, f)
	}
	return append(out, Fault{Name: FaultKill, Target: &Target{Role: RoleGroupCoordinator}},
		Fault{Name: FaultSinkCut, Params: Params{Service: ServicePostgres}},
		Fault{Name: FaultServiceKill, Params: Params{Service: ServicePostgres}})
}

// exploreSinkEveryFault is the search over sinks: members that apply each input to PostgreSQL
// with its offset in the same transaction (the axis --sink picks another mode; the store's
// faults follow it), crashed between effect and commit, under a fault of every class.
func exploreSinkEveryFault() Scenario {
	s := sinkScenario(sink.OffsetsInDB)
	s.Name = "explore-sink-every-fault"
	s.Description = "Sinks (offsets in the database; --sink for another mode) crashed between effect and commit, under a fault of " +
		"every class drawn at random, one at a time: process, network, toxic, request-level, power, disk and the store's."
	s.Tags = []Tag{TagExplore, TagSinks, TagPowerLoss, TagDisk, TagSlow}
	s.Client.RequestTimeout = sec(5)
	s.Faults = Schedule{Kind: SchedulePeriodic, Periodic: &Periodic{Interval: sec(20), Hold: sec(10), Start: sec(10), Quiet: 0.15,
		Set: sinkEveryFault(DefaultTopic)}}
	s.Duration = sec(300)
	s.Expect.Text += " Each fault hits one node, one link set, one request or the store at a time, within what three replicas and " +
		"min.insync.replicas=2 survive."
	return s
}

// exploreTxnReadEveryFault is the same search over transactions that read what the others
// write, where a dependency cycle would show.
func exploreTxnReadEveryFault() Scenario {
	s := txnReadBase("explore-txn-read-every-fault", "Transactions that read and write one topic under a fault of every class drawn at random, "+
		"one at a time: process, network, toxic, request-level, power and disk.")
	s.Tags = []Tag{TagExplore, TagTransactions, TagPowerLoss, TagDisk, TagSlow}
	s.Client.RequestTimeout = sec(5)
	s.Faults = Schedule{Kind: SchedulePeriodic, Periodic: &Periodic{Interval: sec(20), Hold: sec(10), Start: sec(10), Quiet: 0.15,
		Set: everyFault("txr")}}
	s.Duration = sec(300)
	s.Expect.Text += " Each fault hits one node, one link set or one request at a time, within what min.insync.replicas=2 survives."
	return s
}

// upgradeEOS upgrades the cluster from Kafka 4.2.2 to 4.3.1 under the eos workloads, one node
// at a time, then finalizes metadata.version: what an operator does, and what clients live
// through.
func upgradeEOS() Scenario {
	s := eosBase("upgrade-eos", "Read-process-write and transactions while every node is upgraded from Kafka 4.2.2 to 4.3.1 in turn, "+
		"then metadata.version finalized.", "Kafka's upgrade notes")
	s.Tags = []Tag{TagUpgrade, TagTransactions, TagSlow}
	s.Kafka.Version = "4.2.2"
	s.Faults = timeline(Step{At: sec(15), Fault: Fault{Name: FaultRollingUpgrade, Params: Params{Version: "4.3.1"}}})
	s.Duration = sec(150)
	s.Expect.Text = "A rolling upgrade stops each node cleanly (its leaderships move first) and starts it on the new release with " +
		"its data; transactions, their coordinators and the consumer group move with them, and exactly-once holds: no " +
		"committed input is missing from or repeated in the committed output, read_committed readers see no aborted " +
		"record, and no acknowledged write is lost, through the upgrade and the metadata.version finalization."
	return s
}

func eosRollingBounce() Scenario {
	s := eosBase("eos-rolling-bounce", "Read-process-write and transactions while every broker is hard-bounced in turn.", "Kafka's transactions_test")
	s.Tags = []Tag{TagTransactions, TagSlow}
	s.Faults = timeline(Step{At: sec(15), Fault: Fault{Name: FaultRollingBounceHard}})
	s.Duration = sec(120)
	s.Expect.Text = "As in Kafka's own transactions_test: with every broker SIGKILLed and restarted in turn, " +
		"coordinators, group coordinators and partition leaders all move, and exactly-once still holds: no committed " +
		"input is missing from or repeated in the committed output, and read_committed readers see no aborted record."
	return s
}

func groupRebalance() Scenario {
	s := base("group-rebalance", "A consumer group of 3 that commits after processing, its members crashed one at a time.", "000 §16.3–16.4")
	s.Tags = []Tag{TagConsumers}
	s.Workload = Workload{
		Producers: []ProducerGroup{{Count: 2, Topic: DefaultTopic}},
		Group:     Group{Count: 3, Name: DefaultGroup, Topics: []string{DefaultTopic}, RestartEvery: sec(10)},
	}
	s.Expect = Expectation{
		Text: "At-least-once consumption: offsets are committed after processing, so a member that crashes leaves its " +
			"partitions to others from the last committed offset; records after it are read again (not an anomaly), " +
			"but none is skipped, and within one member's assignment positions only move forward.",
	}
	return s
}

// shareCoordinator0 is the share coordinator of the run's share group for p0 of the default
// topic: the leader of the __share_group_state partition holding that share partition's state.
func shareCoordinator0() *Target { return &Target{Role: RoleShareCoordinator, Topic: DefaultTopic} }

// shareScenario is a share group of 3 members on the default topic (docs/share-groups.md):
// acknowledgements 70 % accept, 25 % release, 5 % reject; each member crashed about every 12 s
// holding what it acquired; a 15 s lock (the brokers' least) and a delivery limit of 3 (set on
// the brokers: the group config exists from Kafka 4.3 only), so that locks expire and records
// are archived within a run; a share session timeout of 10 s (the brokers' least is lowered
// from 45 s), so that a crashed member's partitions go to the others within a run too.
func shareScenario(name, description string) Scenario {
	s := base(name, description, "KIP-932")
	s.Tags = []Tag{TagQueues}
	s.Requires = []kafkaconf.Capability{kafkaconf.CapShareGroups}
	s.Client.Name = kafkaconf.FranzGo
	s.Broker = map[string]string{"group.share.delivery.count.limit": "3",
		"group.share.min.session.timeout.ms": "6000", "group.share.session.timeout.ms": "10000"}
	s.Workload = Workload{
		Producers: []ProducerGroup{{Count: 2, Topic: DefaultTopic, Rate: 40}},
		Share: Share{Members: 3, Name: DefaultShare, Topics: []string{DefaultTopic}, Mix: ShareMix{Accept: 70, Release: 25, Reject: 5},
			CrashEvery: sec(12), LockDuration: sec(15)},
	}
	return s
}

// shareExpect is what every share scenario promises (guarantees.md, Share groups), and the
// fault-specific words. A double acquisition across a fault is permitted finding by finding (the
// fault must overlap its ops), so no scenario claims it likely.
func shareExpect(provoke, why string) Expectation {
	return Expectation{
		Text: "A share group delivers every record until it is accepted, rejected or archived at the delivery limit, " +
			"never skips one (share-lost), never delivers an accepted or rejected record again (share-redelivered), and " +
			"never counts past the limit. " + why,
		Provoke: provoke,
	}
}

func shareBaseline() Scenario {
	s := shareScenario("share-baseline", "A share group of 3 whose members crash holding records; no broker fault.")
	s.Expect = shareExpect("Each member crashes about every 12 s right after a poll; the broker releases what it held as its "+
		"connection closes, and another member acquires it with its count raised.",
		"With no fault, no record is held by two members at once while its lock is valid, and delivery counts only rise: "+
			"every share family is forbidden.")
	return s
}

func shareLeaderKill() Scenario {
	s := shareScenario("share-leader-kill", "A share group while p0's leader, the share-partition leader, is SIGKILLed.")
	s.Faults = timeline(step(20, 15, FaultKill, leaderOf0()))
	s.Expect = shareExpect("At 20 s p0's leader, which keeps p0's acquisition locks and in-flight delivery counts in memory, "+
		"is SIGKILLed for 15 s; a follower takes over and rebuilds the share partition from __share_group_state.",
		"Acquisitions are not persisted, so the new leader hands p0's held records out again at once, with a count that "+
			"may repeat: a double acquisition and a repeated count across the kill are permitted.")
	return s
}

func shareLeaderPause() Scenario {
	s := shareScenario("share-leader-pause", "A share group while p0's leader is paused (SIGSTOP), then resumed.")
	s.Faults = timeline(step(20, 15, FaultPause, leaderOf0()))
	s.Expect = shareExpect("At 20 s p0's leader is paused for 15 s, longer than the broker session timeout: the controller "+
		"moves leadership away, and the paused leader comes back as a follower holding stale locks.",
		"The resumed broker must not answer acknowledgements for a share partition it no longer leads as applied: an "+
			"accept it confirmed must stay accepted.")
	return s
}

func shareCoordinatorKill() Scenario {
	s := shareScenario("share-coordinator-kill", "A share group while the share coordinator of p0's state is SIGKILLed.")
	s.Faults = timeline(step(20, 15, FaultKill, shareCoordinator0()))
	s.Expect = shareExpect("At 20 s the leader of the __share_group_state partition that holds p0's state (the share "+
		"coordinator) is SIGKILLed for 15 s; acknowledgements wait for, or fail on, the state write, and another "+
		"replica of __share_group_state takes over.",
		"An acknowledgement answered ok was written to __share_group_state with acks=all before the answer, so the new "+
			"coordinator has it: its record is not delivered again.")
	return s
}

func shareCoordinatorPause() Scenario {
	s := shareScenario("share-coordinator-pause", "A share group while the share coordinator of p0's state is paused.")
	s.Faults = timeline(step(20, 15, FaultPause, shareCoordinator0()))
	s.Expect = shareExpect("At 20 s the share coordinator of p0's state is paused for 15 s: state writes time out "+
		"(their acknowledgements' outcome is unknown) until another replica leads __share_group_state.",
		"A state write that timed out may still land: its acknowledgement is unknown, never a failure the record can be "+
			"judged by.")
	return s
}

func sharePowerLoss() Scenario {
	s := shareScenario("share-power-loss", "A share group while the share coordinator of p0's state, then p0's leader, lose power.")
	s.Tags = append(s.Tags, TagPowerLoss)
	s.Topology.PowerLoss = true
	s.Faults = timeline(step(20, 10, FaultPowerLoss, shareCoordinator0()), step(40, 10, FaultPowerLoss, leaderOf0()))
	s.Expect = shareExpect("At 20 s the share coordinator of p0's state loses power for 10 s, at 40 s p0's leader: "+
		"SIGKILL, and the lazy filesystem drops every write no fsync made durable, on one node at a time.",
		"One node's power loss leaves __share_group_state (replication factor 3, min ISR 2) and p0 on the others' page "+
			"caches, so the group's state survives it: an accepted record is not delivered again. Only a power cut of "+
			"two or more nodes at once (none here) would permit redelivery and counts that go back.")
	return s
}

func shareMembersCut() Scenario {
	s := shareScenario("share-members-cut", "A share group whose members are cut off from every broker while they hold locks.")
	s.Faults = timeline(step(20, 20, FaultClientCut, replicasOf0()))
	s.Expect = shareExpect("At 20 s every client is cut off from every broker (the replicas of p0 are all three) for 20 s, "+
		"longer than the 15 s lock: the members hold records they can neither acknowledge nor renew.",
		"The records come back once their locks end or the members' connections close; a member's acknowledgement of a "+
			"record whose lock ended must fail (INVALID_RECORD_STATE), not be taken.")
	return s
}

func shareCoordinatorCut() Scenario {
	s := shareScenario("share-coordinator-cut", "A share group while the share coordinator of p0's state is cut off from the other brokers.")
	s.Faults = timeline(step(20, 20, FaultIsolate, shareCoordinator0()))
	s.Expect = shareExpect("At 20 s the share coordinator of p0's state is cut off from the other brokers for 20 s "+
		"(clients still reach it): p0's leader, when it is another broker, cannot reach it to persist state, and the "+
		"coordinator cannot replicate the state it writes to min ISR 2 of __share_group_state. A cut between two roles "+
		"would be empty whenever one broker holds both; the isolation is never empty.",
		"An acknowledgement whose state could not be persisted is answered with an error (its outcome unknown), and the "+
			"record stays the member's until its lock ends; nothing the group persisted is lost.")
	return s
}

// shareCountForgotten provokes the known issue share-count-forgotten on purpose: three
// members, each crashed about every 6 s holding what it acquired, while the share coordinator
// of each partition's state in turn is SIGKILLed for 20 s, twice round. A crash that leaves a
// broker with no member of the group makes it drop the group's share partitions at once, while
// the release of the crashed member's records is refused by the dead coordinator and waits out
// its back-off (about 2, 4 and 8 s); once the controller fences the dead broker (about 9 s)
// another replica is the coordinator, and the next member's fetch makes the share partitions
// again from the state it holds, without the release. A coordinator on its partition's own
// leader's node makes that kill a leader kill (permitted), so the kills cover the partitions in
// turn; a crash must fall while a coordinator is down, which about one kill in three sees, so
// there are six.
func shareCountForgotten() Scenario {
	s := shareScenario("share-count-forgotten", "A share group whose members crash holding records while the share "+
		"coordinators are killed in turn: their records come back with the same delivery count, the leader unchanged.")
	s.Tags = append(s.Tags, TagChance, TagSlow)
	s.Workload.Share.CrashEvery = sec(6)
	var steps []Step
	for k := range 6 {
		steps = append(steps, step(float64(15+30*k), 20, FaultKill, &Target{Role: RoleShareCoordinator, Topic: DefaultTopic, Partition: int32(k % 3)}))
	}
	s.Faults = timeline(steps...)
	s.Duration = sec(190)
	s.Expect = Expectation{Verdict: results.Fail,
		Text: "Only a crash or change of the share-partition leader may lose the count of an acquisition that was not " +
			"persisted (KIP-932). Kafka drops a group's share partitions when its last member on a broker disconnects, " +
			"while the release of that member's records is still being written, and makes them again from " +
			"__share_group_state at the next fetch: the records come back at the count before their last delivery, the " +
			"leader unchanged — share-count-regressed, forbidden, and explained by the known issue share-count-forgotten."}
	return s
}

// sinkScenario is a sink of mode m (two members of one group, each crashed about every 6 s
// right after a side effect, before its offset commit) under its store's link cut, a broker
// kill and, for PostgreSQL, a database crash.
func sinkScenario(m sink.Mode) Scenario {
	info, _ := m.Info()
	s := base("sink-"+string(m), "A sink in mode "+string(m)+" ("+info.About+"), crashed between side effect and commit, "+
		"its store's link cut, a leader killed.", "002; 000 §1.7, §15.4–15.6")
	s.Tags = []Tag{TagSinks}
	s.Workload = Workload{
		Producers: []ProducerGroup{{Count: 1, Topic: DefaultTopic, Rate: 60}},
		Sinks:     []Sink{{Name: "sink", Mode: m, Count: 2, Topic: DefaultTopic, CrashEvery: sec(6)}},
	}
	service := serviceOf(m)
	steps := []Step{
		{At: sec(12), For: sec(6), Fault: Fault{Name: FaultSinkCut, Params: Params{Service: service}}},
		step(25, 10, FaultKill, leaderOf0()),
	}
	if info.Store == sink.Postgres {
		// The ledger keeps its entries in memory: killing it would lose effects by design.
		steps = append(steps, Step{At: sec(42), For: sec(5), Fault: Fault{Name: FaultServiceKill, Params: Params{Service: service}}})
	}
	s.Faults = timeline(steps...)
	s.Expect.Text = "Kafka's exactly-once ends at the cluster. A sink that does its side effect and then commits its " +
		"offset applies an input again when it crashes (or loses an answer) between the two; a sink that makes the " +
		"side effect idempotent (a unique key, an inbox, the offset in the same transaction, an idempotency key) " +
		"applies each input once. No input below the committed position may lack its effect, in any mode."
	if !info.Dedupes {
		s.Expect.Likely = []guarantee.Anomaly{guarantee.EffectDuplicate}
		s.Expect.Provoke = "Each member crashes about every 6 s right after a side effect and before committing its " +
			"offset; the member that takes the partition over starts from the last committed offset and applies that " +
			"input again."
	}
	return s
}

// sinkOutbox is the outbox pattern end to end: the sink writes each input's business row and
// outbox row in one transaction, its relay publishes the outbox (crashing between a publish and
// its mark), and a downstream sink de-duplicates the outbox topic by event id.
func sinkOutbox() Scenario {
	s := sinkScenario(sink.Outbox)
	s.Workload.Sinks[0].Outbox = "sink-outbox"
	s.Workload.Sinks = append(s.Workload.Sinks, Sink{Name: "downstream", Mode: sink.UniqueKey, Count: 1, Topic: "sink-outbox"})
	s.Expect.Likely = []guarantee.Anomaly{guarantee.OutboxDuplicate}
	s.Expect.Text += " The outbox pattern: every committed business row reaches the outbox topic (outbox-lost is " +
		"forbidden), perhaps more than once (outbox-duplicate is permitted), and the downstream sink, keyed by event id, " +
		"applies each event once."
	s.Expect.Provoke = "The relay crashes about every 6 s after Kafka acknowledged a publish and before the row is " +
		"marked sent; the next relay publishes the row again under a new producer id."
	return s
}

func sinkNaive() Scenario       { return sinkScenario(sink.Naive) }
func sinkUniqueKey() Scenario   { return sinkScenario(sink.UniqueKey) }
func sinkOffsetsInDB() Scenario { return sinkScenario(sink.OffsetsInDB) }
func sinkInbox() Scenario       { return sinkScenario(sink.Inbox) }
func sinkHTTP() Scenario        { return sinkScenario(sink.HTTP) }
func sinkHTTPKeyed() Scenario   { return sinkScenario(sink.HTTPKeyed) }

// txnRegression is s with the shape of the transaction regressions: one franz-go transactional
// producer over two topics of the given partitions, a read_committed and a read_uncommitted
// consumer on them, and a request timeout short enough for a client to give up on a request
// the network holds or drops well within a fault.
func txnRegression(s Scenario, partitions int32) Scenario {
	s.Topics = []Topic{
		{Name: "txn", Partitions: partitions, ReplicationFactor: 3, MinInsyncReplicas: 2},
		{Name: "txn-b", Partitions: partitions, ReplicationFactor: 3, MinInsyncReplicas: 2},
	}
	s.Client.Name = kafkaconf.FranzGo
	s.Client.RequestTimeout = sec(3)
	s.Workload = Workload{
		Transactional: TxnProducers{Count: 1, Topics: []string{"txn", "txn-b"}},
		Consumers:     Consumers{ReadCommitted: 1, ReadUncommitted: 1, Topics: []string{"txn", "txn-b"}},
	}
	return s
}

// regressFranzEndTxnUnconfirmed replays the franz-go bug fixed in v1.21.6 (kgo commit 6ecd2f9f):
// an EndTxn(commit) whose outcome the client never learns. v1.21.5 retried the abort without
// sending anything, so the client began its next transaction at the same producer epoch and, on
// transaction protocol v2, its records joined the still-open transaction: the next commit ended
// both. v1.21.6 reloads the producer ID instead, which fences the open transaction.
func regressFranzEndTxnUnconfirmed() Scenario {
	s := txnRegression(base("regress-franz-endtxn-unconfirmed", "Every EndTxn to the transaction coordinator dropped for 40 s at a time, so that "+
		"commits end unconfirmed: franz-go v1.21.5's next transaction joins the unconfirmed one, v1.21.6's does not.",
		"franz-go v1.21.6 changelog (6ecd2f9f), KIP-890"), 2)
	s.Tags = []Tag{TagRegression, TagTransactions, TagSlow}
	s.Client.Transactions = Transactions{AbortProbability: 0.2}
	// A window outlasts the 30 s the workload gives EndTransaction, so a commit sent early in it
	// ends unconfirmed while the coordinator, which aborts a transaction only some seconds past
	// its 30 s timeout, still holds it open for the next one to join.
	s.Faults = Schedule{Kind: SchedulePeriodic, Periodic: &Periodic{
		Interval: sec(50), Hold: sec(40), Start: sec(10), Quiet: 0.1,
		Set: []Fault{{Name: FaultDropRequest, Target: &Target{Role: RoleTxnCoordinator}, Params: Params{API: "EndTxn", Nth: 0}}},
	}}
	s.Duration = sec(150)
	s.Regression = &Regression{Bug: "franz-go v1.21.6 (6ecd2f9f), KIP-890", Knob: "client", Bad: "franz-go@v1.21.5", Fixed: "franz-go@v1.21.6",
		Shows: []guarantee.Anomaly{guarantee.MergedTransaction}}
	s.Expect = Expectation{Text: "A commit whose EndTxn never reaches the coordinator ends unknown (info). franz-go documents " +
		"retrying it with TryAbort; from v1.21.6 that reloads the producer ID, which bumps the epoch and aborts the open " +
		"transaction, so a marker ends it before the next one writes. v1.21.5 (the regression's bad side) sent nothing: the next " +
		"transaction's records joined the open one at the same epoch and its commit ended both — merged-transaction, " +
		"forbidden: no marker between the two in a partition both wrote."}
	return s
}

// regressSaramaStableOffsets replays the sarama bug fixed in v1.61.1: its group members fetched
// their starting offsets without KIP-447's require_stable, so a member that took over partitions
// while a transaction's offset commit still waited for its marker got the offsets from before
// that transaction and processed its inputs again.
func regressSaramaStableOffsets() Scenario {
	s := base("regress-sarama-stable-offsets", "Two sarama read-process-write processors, each crashed right after a commit "+
		"while the transaction markers to the group coordinator are held: v1.61.0's member that takes over the partitions "+
		"fetches offsets from before the commit, v1.61.1's waits for them to be stable.", "sarama v1.61.1 (offset_manager.go), KIP-447")
	s.Tags = []Tag{TagRegression, TagTransactions, TagSlow}
	s.Topics = []Topic{
		{Name: "eos-in", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2},
		{Name: "eos-out", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2},
	}
	s.Workload = Workload{
		Producers:  []ProducerGroup{{Count: 1, Topic: "eos-in", Rate: 50}},
		Processors: Processors{Count: 2, Input: "eos-in", Output: "eos-out", CrashEvery: sec(12), CrashAfterCommit: true},
		Consumers:  Consumers{ReadCommitted: 1, Topics: []string{"eos-out"}},
	}
	// Every WriteTxnMarkers into or out of the group coordinator waits 8 s, so that a commit's
	// offsets stay pending while the crashed member's partitions move to the other one.
	s.Faults = timeline(Step{At: sec(10), For: sec(130), Fault: Fault{Name: FaultHoldRequest, Target: &Target{Role: RoleGroupCoordinator},
		Params: Params{API: "WriteTxnMarkers", Nth: 0, Delay: sec(8), Links: LinksNode}}})
	s.Duration = sec(150)
	s.Regression = &Regression{Bug: "sarama v1.61.1, KIP-447", Knob: "client", Bad: "sarama@v1.61.0", Fixed: "sarama@v1.61.1",
		Shows: []guarantee.Anomaly{guarantee.EOSDuplicate}}
	s.Expect = Expectation{Text: "A read_committed group member asks for stable offsets (KIP-447): while a transaction's offset " +
		"commit waits for its marker the coordinator answers UNSTABLE_OFFSET_COMMIT and the member retries, so the member " +
		"that takes over a crashed one's partitions starts after its last committed transaction and every committed input " +
		"yields its output once. sarama v1.61.0 (the regression's bad side) did not ask: it starts from the offsets before " +
		"that transaction and writes their outputs again — eos-duplicate, forbidden."}
	return s
}

// regressKafka20321 replays the Java client bug fixed in 4.3.0 (KAFKA-20321): a KIP-848
// consumer whose group dropped it (a poll later than max.poll.interval.ms) ran its
// onPartitionsLost callback without first stopping the fetches of the lost partitions, so the
// poll that ran the callback could still return records of them, which their new owner reads
// too.
func regressKafka20321() Scenario {
	s := base("regress-kafka-20321", "Three KIP-848 group members of Kafka's Java client, each stalling past max.poll.interval.ms "+
		"about every 12 s: 4.2.1's poll that tells a member its partitions are lost still returns records of them, 4.3.0's does not.",
		"KAFKA-20321 (apache/kafka#21781), KIP-848")
	s.Tags = []Tag{TagRegression, TagConsumers}
	s.Topics = []Topic{{Name: DefaultTopic, Partitions: 6, ReplicationFactor: 3, MinInsyncReplicas: 2}}
	s.Client.Name, s.Client.GroupProtocol = kafkaconf.Java, kafkaconf.GroupConsumer
	s.Workload = Workload{
		Producers: []ProducerGroup{{Count: 2, Topic: DefaultTopic}, {Count: 1, Async: true, Topic: DefaultTopic}},
		Group:     Group{Count: 3, Name: DefaultGroup, Topics: []string{DefaultTopic}, StallEvery: sec(12), MaxPollInterval: sec(3)},
	}
	s.Duration = sec(60)
	s.Regression = &Regression{Bug: "KAFKA-20321", Knob: "client", Bad: "java@4.2.1", Fixed: "java@4.3.0",
		Shows: []guarantee.Anomaly{guarantee.PollUnowned}}
	s.Expect = Expectation{Text: "A group member that does not poll within max.poll.interval.ms leaves its group; its next poll " +
		"runs onPartitionsLost and, from then until the partitions are assigned again, returns no record of them, since " +
		"another member now owns them. Kafka's Java client 4.3.0 pauses the lost partitions' fetches before the callback; " +
		"4.2.1 (the regression's bad side) did not, and the same poll returned records it had fetched before — " +
		"poll-unowned, forbidden. Re-reading from the committed offsets after the member rejoins is at-least-once, no anomaly."}
	return s
}

// regressShareStaleStateWrite replays a share-group state write that lands after newer ones:
// share-partition leaders' WriteShareGroupState to share coordinators on other brokers are
// held on the links between brokers from 10 s to 68 s. A leader's persister gives up on a held
// write after its request timeout (30 s), sends it again on a new connection, and writes newer
// state. At 63 s every client connection is reset until the end, so that the group's members
// leave every broker before the held, older writes reach the coordinators at 68 s: nothing
// writes after them. They carry the partition's leader and state epochs, which the coordinator
// fences only when smaller, and before 4.4.0 it takes a write's start offset as given: the
// group's start offset goes back, and the drain, whose fetches rebuild the share partitions
// from the state, is delivered again records whose accept was answered ok. 4.4.0's coordinator
// keeps the larger start offset (apache/kafka PR 23074).
// docs/evidence/kafka-share-start-offset-rollback tells the same defect as Verity first met it,
// under power loss.
func regressShareStaleStateWrite() Scenario {
	s := shareScenario("regress-share-stale-state-write", "Share-group state writes held on the links between brokers "+
		"and let through after newer ones, once the members have left: 4.3.1's coordinator moves the group's start offset back, 4.4.0's does not.")
	s.Source = "KIP-932; apache/kafka PR 23074 (no JIRA)"
	// Chance: the late writes take back only what the members had answered ok after the
	// persisters resent, and under load some runs have too little of that.
	s.Tags = []Tag{TagRegression, TagQueues, TagChance}
	s.Kafka.Version = "4.3.1"
	s.Workload.Share.Members, s.Workload.Share.CrashEvery = 2, 0
	// Every link between brokers (those of p0's leader and those of one of its followers): a
	// leader's writes to a coordinator on its own node take no link, and six partitions all
	// keep their state on their own leader's node only about one run in 700 ((1/3)^6).
	s.Topics[0].Partitions = 6
	hold := func(t *Target) Step {
		return Step{At: sec(10), For: sec(58), Fault: Fault{Name: FaultHoldRequest, Target: t,
			Params: Params{Links: LinksNode, API: "WriteShareGroupState", Nth: 1}}}
	}
	// The persisters send the held writes again at about 40 s; the members' acknowledgements
	// answered ok from then on, until they leave at 63 s, are what the late writes take back.
	// Resetting the clients' connections ends the members' share sessions on every broker,
	// which drops the group's share partitions there; the members cannot come back before
	// the end, so no write follows the held ones, which land at 68 s.
	leave := Step{At: sec(63), For: sec(12), Fault: Fault{Name: FaultResetPeer, Target: replicasOf0(), Params: Params{Links: LinksClient}}}
	s.Faults = timeline(hold(leaderOf0()), hold(followerOf0()), leave)
	s.Duration = sec(75)
	s.Regression = &Regression{Bug: "apache/kafka PR 23074, KIP-932", Knob: "kafka-version", Bad: "4.3.1", Fixed: "4.4.0",
		Shows: []guarantee.Anomaly{guarantee.ShareRedelivered}}
	s.Expect = Expectation{Text: "An acknowledgement is answered only once the share coordinator has written it to " +
		"__share_group_state, and an accepted or rejected record is not delivered again (KIP-932). A state write that " +
		"reaches the coordinator after newer ones must not take the group's state back: Kafka 4.4.0's coordinator keeps the " +
		"larger start offset. 4.3.1's (the regression's bad side; 4.2.2 too) takes the late write's, and the drain is " +
		"delivered records whose accept was answered ok again — share-redelivered, forbidden."}
	return s
}

// regressKIP890HangingTxn replays the hanging transaction KIP-890 part 1 closed: a transactional
// record from a client that never added its partition to the transaction (a late or buggy
// produce) is appended, the coordinator knows nothing of it, and no marker ever ends it, so the
// partition's last stable offset stays below it for good. Verification (the leader asks the
// coordinator before appending) refuses it.
func regressKIP890HangingTxn() Scenario {
	s := txnRegression(base("regress-kip890-hanging-txn", "A transactional record written to txn-0 without AddPartitionsToTxn: "+
		"it hangs the partition's last stable offset without transaction.partition.verification.enable, and is refused with it.",
		"KIP-890 part 1"), 2)
	s.Tags = []Tag{TagRegression, TagTransactions}
	s.Client.Name, s.Client.RequestTimeout = kafkaconf.DefaultClient, 0
	s.Client.Transactions = Transactions{AbortProbability: 0.2}
	s.Faults = timeline(Step{At: sec(20), Fault: Fault{Name: FaultStrayTxnProduce, Target: &Target{Role: RoleLeaderOf, Topic: "txn"}}})
	s.Duration = sec(60)
	s.Regression = &Regression{Bug: "KIP-890 part 1", Knob: "verification", Bad: "false", Fixed: "true",
		Shows: []guarantee.Anomaly{guarantee.HangingTransaction}}
	s.Expect = Expectation{Text: "With transaction.partition.verification.enable (the default since Kafka 3.6) the leader asks the " +
		"transaction coordinator whether the partition is in the producer's transaction and refuses the stray record; the " +
		"transactions around it commit and abort as usual and read_committed readers reach the high watermark. Without it " +
		"(--verification=false, the regression's bad side) the record is appended, no marker ever ends it, and the last " +
		"stable offset of txn-0 stays below it: hanging-transaction, forbidden."}
	return s
}

// regressKafka17754 replays KAFKA-17754: an EndTxn held in the network past its client's
// timeout, which the client retries and completes, then released while a later transaction of
// the same producer is open. Under transaction protocol v1 the producer keeps one epoch for its
// session, so the coordinator takes the stale EndTxn for the open transaction and commits (or
// aborts) it early: records of a transaction the client then aborts become visible to
// read_committed readers, and a transaction is cut in two. Protocol v2 (KIP-890 part 2, the
// default of franz-go on a 4.x cluster) bumps the epoch at every EndTxn, and the stale request
// is fenced. The bad side is sarama, which speaks v1 only and retries a timed-out EndTxn at the
// same epoch; franz-go capped to v1 (--txn-protocol v1, or --transaction-version 1) mostly
// escapes it on its own, since from v1.21.6 it bumps the epoch (InitProducerID) after an EndTxn
// whose outcome it did not learn.
func regressKafka17754() Scenario {
	s := txnRegression(base("regress-kafka-17754", "An EndTxn(commit) held past its client's timeout, then let through just ahead of the "+
		"producer's next abort, while that transaction is open: clean on transaction protocol v2 (franz-go), the aborted "+
		"transaction committed on v1 (sarama).", "KAFKA-17754, KIP-890"), 3)
	s.Tags = []Tag{TagRegression, TagTransactions, TagSlow}
	// The short request timeout (txnRegression) lets the client give up on the held commit,
	// retry it and go on. The held commit is let through when the client's next EndTxn(abort)
	// comes, which waits a second behind it: the late commit meets a transaction that is open
	// and meant to be aborted, whatever the seed (released at a heal instead, it met one only
	// when the heal fell inside a transaction, so a run could miss the bug). Half the
	// transactions abort, so the abort comes soon after the retry.
	s.Client.Transactions = Transactions{AbortProbability: 0.5}
	s.Workload.Producers = []ProducerGroup{{Count: 1, Topic: "txn", Rate: 20}}
	s.Faults = Schedule{Kind: SchedulePeriodic, Periodic: &Periodic{
		Interval: sec(20), Hold: sec(18), Start: sec(10), Quiet: 0.1,
		Set: []Fault{{Name: FaultHoldRequest, Target: &Target{Role: RoleTxnCoordinator},
			Params: Params{API: "EndTxn(commit)", Nth: 1, Until: "EndTxn(abort)", Delay: sec(1)}}},
	}}
	s.Duration = sec(180)
	s.Regression = &Regression{Bug: "KAFKA-17754, KIP-890", Knob: "client", Bad: string(kafkaconf.Sarama), Fixed: string(kafkaconf.FranzGo),
		Shows: []guarantee.Anomaly{guarantee.AbortedRead, guarantee.PartialTransaction}}
	s.Expect = Expectation{Text: "Transaction protocol v2 bumps the producer epoch at every EndTxn, " +
		"so an EndTxn that arrives after its transaction ended is fenced: read_committed readers see no record of an " +
		"aborted transaction and every committed transaction whole. On protocol v1 with a client that retries a timed-out " +
		"EndTxn at the same epoch (--client sarama, the regression's bad side) the stale EndTxn carries the open " +
		"transaction's epoch and ends it early: aborted-read and partial-transaction, forbidden (KAFKA-17754, fixed by " +
		"KIP-890 part 2)."}
	return s
}
