// Package verify checks a Verity history (shared/design/history.md) for the anomalies of
// shared/design/guarantees.md and judges each against what Kafka documents for the run's
// configuration (package guarantee). The verdict and statistics go to results.json (package
// results).
//
// # How it works
//
// A Checker reads the history once, in file order, and keeps compact state — never the ops:
// an integer id and ~56 bytes per record value, each partition's log as inferred from every
// offset that acknowledgements, polls and final reads report (8 bytes per offset), and the
// outcome of each transaction. Memory grows with the number of records, not with the file.
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
//
// Log order is judged on known records, not on offset arithmetic: transaction markers take
// offsets, so a consumer that jumps from offset 4 to 6 skipped something only if some reader
// saw a record at 5 that its isolation level shows. A send whose outcome was unknown (info, or
// never completed) counts as written only once a read shows it, and is never lost.
//
// # What the checker relies on beyond history.md
//
//   - ISR observations: events with f "isr" (any process, usually the nemesis; any type) and
//     value {"topic","partition","isr":[ids],"min_isr":n} ("min_isr" optional: the topic's
//     configured value). unexpected-ack is checked only where they exist.
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
//   - Nemesis faults named disk-loss (or wipe, wipe-disk, lose-disk, …) count the nodes in
//     their value's "nodes"; unclean-election marks a forced unclean election. Both change
//     what the guarantee table permits (guarantee.FaultKind lists the spellings).
//   - Final reads: a read_uncommitted scan covers every offset from its "from" on (it ran to
//     the high watermark, so an acknowledged offset past its end was truncated); a
//     read_committed scan covers only [from, end) (it stops at the LSO). Transactions need a
//     read_committed final read of the partitions they wrote for the verdict to be pass.
//   - Record values "P-N" (process P's Nth record, as the workloads write them) are stored as
//     numbers; any other string works too, at the cost of keeping it.
package verify
