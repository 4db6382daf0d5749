// Package workloads runs the workload roles (producers, transactions, processors, consumers,
// sinks) on the run's Kafka client against a cluster, and records every operation they perform
// into a history (package history, format in docs/history.md). The clients sit behind the seam in
// package kclient, one folder each (kclient/sarama, kclient/franz). It decides
// nothing about correctness: what an op's outcome was (ok, fail, info) is all it states, and the
// checker (package verify, which this package never imports) judges the history.
//
// # Workloads
//
// Each workload runs as one or more history processes, each with its own random source derived
// from the run's seed (NewRand), so that one seed makes the same choices in every run:
//
//   - RunProducer: a plain producer (acks 0/1/all, idempotence, in-flight, retries, timeouts,
//     batching, compression, partition choice), one send at a time or many in flight (async),
//     optionally re-sending a value after an unknown or failed outcome (application resend).
//     Each client opens its producers behind kclient.Producer (kclient/sarama/producer.go,
//     kclient/franz/producer.go); the recording is the role's. Outcomes come from the client's
//     table, kclient/sarama.SendTable or kclient/franz.SendTable, the one place per client that
//     says which errors prove a record was not written.
//   - RunTxnProducer: transactions of 1..k records over at least two topics, committed or
//     aborted as the seed says; a fenced or broken instance is replaced (a crash op, then a new
//     instance with the same transactional.id); zombie mode makes a second instance take the id
//     in the middle of a transaction. Each client opens its instances behind kclient.Txn
//     (kclient/sarama/txn.go, kclient/franz/txn.go); the recording, zombies and restarts are
//     the role's.
//   - RunProcessor: read-process-write in a consumer group at read_committed, with the offsets
//     committed in the transaction (KIP-447 group metadata) and a rewind to the committed
//     offsets after every transaction that did not commit (sarama: a new group session;
//     franz-go's GroupTransactSession rewinds by itself, and after an unknown outcome the
//     instance is replaced). Each client opens its members behind kclient.Member
//     (kclient/<client>/member.go); the batching, recording and crashes are the role's.
//   - RunConsumer: assign or subscribe, either isolation level, every poll recorded with its
//     records in the order returned, rebalances recorded as assign ops, a log truncated under
//     the consumer's position (reported by clients that validate it, KIP-320) as a data-loss op.
//     Each client opens its consumers behind kclient.Consumer (kclient/<client>/consumer.go);
//     the recording is the role's.
//   - FinalRead: after the faults healed, every partition scanned from its earliest offset to its
//     high watermark (read_uncommitted) or last stable offset (read_committed), in final-read ops
//     of at most ChunkRecords records; a scan that cannot finish is recorded as incomplete.
//   - Run: a Spec's mix of workloads (and an optional nemesis) against a cluster for a duration,
//     then the final reads, all into one history.jsonl.
//
// # Ops that history.md leaves open
//
//   - Rebalances are assign ops of the consumer's process, value {"group", "generation",
//     "member", "partitions": {topic: [p…]}, "topics", "isolation", "rebalance": true}; a manual
//     assignment is an assign op without "rebalance"; joining a group is a subscribe op
//     {"topics", "group", "isolation"}.
//   - A data-loss op {"topic", "partition", "offset", "epoch", "reset_to", "reset_epoch"} of a
//     consumer's process notes that its client found the log truncated under its position and
//     resumes at reset_to (franz-go's ErrDataLoss; sarama does not validate positions).
//   - A crash op (history.Crash: {"reason", "txn_id"?, "sink"?, "relay"?}; invoke, then ok once
//     the process may go on) separates two instances of one process; a processor's or consumer's next op is the new instance's.
//   - Final reads run in processes numbered after the configured clients; a zombie's usurper,
//     started during the run, takes the next free process number.
package workloads
