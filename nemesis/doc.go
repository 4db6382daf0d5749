// Package nemesis breaks a running cluster on purpose and records what it did: faults as
// values, targets resolved from the live cluster, schedules drawn from the run's seed, and
// every fault and heal as a nemesis event in the history.
//
// # Faults
//
// A Fault says whether it can run on a cluster (Available), puts itself in place (Inject) and
// undoes itself (Heal). Fault values hold no state; what a heal needs comes back from Inject
// inside an Injection, so one value may be injected repeatedly and several at once.
//
//	process   Kill (SIGKILL, then start), Stop (SIGTERM, then start), Pause (freeze, then
//	          resume), RollingBounce (every broker in turn, clean or hard, the next only once
//	          the cluster is healthy), DiskLoss (kill, wipe the data directory, start empty)
//	network   Isolate, Split (random minority | majority), Bridge (two halves that both reach
//	          one middle node), LeaderCut (a partition's leader cut from its followers while
//	          clients still reach it), OneWayCut (connections From opens to To), ClientCut
//	toxics    Latency, Bandwidth, Timeout, ResetPeer, SlowClose, LimitData on a LinkSet
//	ack loss  AckLoss: requests reach the broker, its answers never reach the client
//	other     Compound (several at once, healed in reverse), None
//
// The catalogue that scenarios, the CLI and the matrix use — the names, the targets and params
// each fault takes, and how each becomes one of these values — is scenarios.FaultSpecs.
//
// Cuts are black holes by default (a timeout toxic on both streams: bytes vanish, connections
// stay open, peers wait for their timeouts, as in a real partition); harness.CutRefuse makes a
// cut refuse connections at once. Every cut event records which ("cut"). Two faults may cut the
// same link: the nemesis counts the cutters of each link and heals a link only when its last
// cutter heals.
//
// # Targets
//
// Targets (Target, LinkSet) are resolved when the fault is injected, from the cluster as it is
// then: the leader of a partition, a follower of it, the active controller, the transaction
// coordinator of a transactional.id, the group coordinator of a group, the share coordinator of
// a share partition, a random broker, minority or majority. Random choices come from a
// math/rand/v2 PCG source seeded with the nemesis seed and the injection's number (or the plan
// step's index), never from a global source: the same seed on the same cluster state makes the
// same choices.
//
// The active controller comes from the DescribeQuorum API (key 55), which sarama does not
// implement: KafkaLocator writes the request by hand (quorum.go) and sends it to every
// reachable broker, which forwards it to the quorum; the answer with the highest epoch wins.
// The Metadata API will not do: under KRaft its controller id is a random live broker. When
// no broker answers, the locator reads the controllers' logs instead (the "Completed
// transition to Leader" line with the highest epoch, unless a later epoch shows an election
// under way). The integration test checks that both agree after a controller is killed.
// Coordinators come from FindCoordinator (sarama's client), which returns the leader of the
// transactional.id's __transaction_state partition, or the group's __consumer_offsets one.
// A share partition's share coordinator (KIP-932) is computed instead (share.go), since sarama
// cannot send FindCoordinator v6 with key type SHARE: the key "group:topicId:partition" hashed
// as the brokers do (Java's String.hashCode, Utils.abs, modulo the partition count of
// __share_group_state), then that partition's leader from Metadata; the integration test checks
// that FindCoordinator(SHARE) agrees. The state topic exists only once a share group has
// initialised state, and the target does not resolve before (ErrNoShareState).
//
// # Recording
//
// The nemesis writes the history only through a Recorder (Invoke and Complete: a
// *history.Writer, or the workloads' recorder). Each action is an invoke/ok pair of process
// "nemesis" around the moment it takes effect; f is the action (kill, stop, pause, disk-loss,
// isolate, split, bridge, leader-cut, one-way-cut, client-cut, latency, bandwidth, timeout,
// reset-peer, slow-close, limit-data, ack-loss; start, resume and heal for heals; heal-all and
// healthy at the end of a run), and the value names the concrete targets (Targets: "nodes",
// "links" as [["1","2"]] or [["client","2"]], "toxic", plus "cut", "role" and "fault"). An
// action that fails completes as info: part of it may have happened. A disk loss is recorded
// under f "disk-loss", the name verify counts lost disks by.
//
// WatchISR samples every partition's ISR and records "isr" observations (verify's
// unexpected-ack and metadata-lost read them): at first sight, on every change of ISR, leader
// or leader epoch, and at every sample while a partition is below min.insync.replicas.
//
// # Schedules and the end of a run
//
// A Schedule turns the run's seed and length into a Plan: Timeline (fixed: "at 10 s do X for
// 15 s"), Random (one draw per interval from a set, a quiet share of the intervals left alone,
// each fault held for Hold) and NoFaults. Nemesis.Run carries a plan out with timers. Every run
// ends with Recover: the faults still in place are healed, then heal-all (harness Restore),
// then a bounded wait for a healthy cluster (every node running, every broker registered and
// answering clients, every ISR full). A Recovery that is not Healthy gives the reason to put in
// the results' unknown_reasons, so that the verdict cannot be pass.
package nemesis
