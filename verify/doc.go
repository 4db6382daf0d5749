// Package verify checks a Verity history (docs/history.md) for the anomalies of
// docs/guarantees.md and judges each against what Kafka documents for the settings the history's
// header states (package guarantee, settings resolved by package kafkaconf). The verdict and
// statistics go to results.json (package results, docs/results.md).
//
// # How it works
//
// A Checker reads the history once, in file order, and keeps compact state — never the ops:
// an integer id and 64 bytes (a cache line) per record value, each partition's log as inferred
// from every offset that acknowledgements, polls and final reads report (8 bytes per offset, in
// pages keyed by offset, so that a log may start anywhere from 0 to 2^63), and the outcome of
// each transaction. Memory grows with the number of records, not with the file.
//
// Checking is one goroutine's work, in file order; around it, CheckFile has the history decoded
// ahead on the other cores (history.Reader.ReadAhead), and Results runs the searches that need
// no earlier finding — the dependency graph's cycles, merged transactions — on goroutines of
// their own beside the checks before them, reporting their findings at their place in the order.
//
// One checker per anomaly family, each in its own file; each finding carries the op indices
// ("i") that prove it:
//
//	lost-write, lost-observed       lost.go (observed-and-changed: ingest.go)
//	duplicate, inconsistent-offset  ingest.go (place, conflict), while the ops stream past
//	reorder                         reorder.go
//	aborted-read                    aborted.go
//	partial-transaction, zombie     txn.go
//	eos-missing, eos-duplicate      eos.go
//	nonmonotonic-poll, poll-skip    poll.go
//	unexpected-ack                  isr.go
//	metadata-lost                   metadata.go
//
// Log order is judged on known records, not on offset arithmetic: transaction markers take
// offsets, so a consumer that jumps from offset 4 to 6 skipped something only if some reader
// saw a record at 5 that its isolation level shows. A send whose outcome was unknown (info, or
// never completed) counts as written only once a read shows it, and is never lost.
//
// # What the checker relies on (docs/history.md has the whole format)
//
//   - Completions: one with "of" must name an invoke of its own process still awaiting its
//     completion. Any other (none with that i, another process's, one already completed) is a
//     malformed history: Feed, Check and CheckFile fail with a *MalformedError naming its line.
//   - ISR observations: events with f "isr" (any process, usually the nemesis; any type) and
//     value {"topic","partition","isr":[ids],"min_isr":n,"replicas":[ids],"leader":id,
//     "leader_epoch":e} ("min_isr" optional: the topic's configured value; "replicas" optional:
//     the partition's replica set, sorted broker ids; "leader" and "leader_epoch" optional).
//     unexpected-ack is checked only where they exist, metadata-lost where they carry a leader
//     epoch; faults are scoped by "replicas" (below).
//   - A consumer's positions are forgotten at any op of its process other than send, txn,
//     poll, final-read and rpw — assign, subscribe, a rebalance or seek note, crash — and after
//     an rpw that failed or whose outcome is unknown (the processor seeks back). Rebalances
//     must therefore appear in the history as ops of the consumer's process.
//   - rpw inputs are reads at the config's "isolation" (default read_committed).
//   - A transactional instance takes its transactional.id with its first op naming it: a txn
//     or rpw (its initTransactions came before), or an ok op of another f, such as "init",
//     whose value has "txn_id". A "crash" op of a process makes its next op a new instance.
//     Only transactions a fenced instance began after that point are judged as zombies, since
//     one already under way may have committed before the fence.
//   - Nemesis faults are invoke/completion pairs of process "nemesis" without "of", the
//     completion carrying the invoke's value. A fault counts at its completion, if that is ok
//     or info (it may have happened in part) — never at its invoke, never when fail, never for
//     being named in the config's "faults" (the schedule). Disk loss (disk-loss, wipe,
//     wipe-disk, lose-disk, …) and forced unclean elections change what the guarantee table
//     permits (guarantee.FaultKind lists the spellings), for the partitions they touched: a
//     disk loss on the value's "nodes" touches the partitions with a replica among them (all
//     partitions when it names none), and the lost disks compared with min ISR are counted
//     among each partition's replicas; an unclean-election naming "topic" and "partition"
//     touches that partition, one naming "nodes" those with a replica among them, one naming
//     neither every partition. A partition no ISR observation gave "replicas" for is touched
//     by every disk loss and node-scoped election. results' "faults" lists the kinds that took
//     effect.
//   - Final reads: a read_uncommitted scan covers every offset from its "from" on (it ran to
//     the high watermark, so an acknowledged offset past its end was truncated); a
//     read_committed scan covers only [from, end) (it stops at the LSO). A record past a
//     read_committed scan's end is judged by the read_uncommitted scan, or not at all: a
//     committed transaction's records that no read_committed scan reached make the verdict
//     unknown, naming the partition. Transactions need a read_committed final read of the
//     partitions they wrote for the verdict to be pass.
//   - A transaction whose intent is "abort" never commits, whatever its completion (ok, info,
//     or none): a read_committed read of its records is an aborted-read.
//   - Record values "P-N" (process P's Nth record, as the workloads write them) are stored as
//     numbers; any other string works too, at the cost of keeping it.
package verify
