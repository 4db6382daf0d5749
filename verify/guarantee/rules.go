package guarantee

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
)

// Anomaly is the name of an anomaly family, as docs/guarantees.md spells it.
type Anomaly string

// The anomaly families the checker reports.
const (
	LostWrite          Anomaly = "lost-write"
	LostObserved       Anomaly = "lost-observed"
	Duplicate          Anomaly = "duplicate"
	Reorder            Anomaly = "reorder"
	InconsistentOffset Anomaly = "inconsistent-offset"
	AbortedRead        Anomaly = "aborted-read"
	PartialTransaction Anomaly = "partial-transaction"
	ZombieWrite        Anomaly = "zombie-write"
	MergedTransaction  Anomaly = "merged-transaction"
	HangingTransaction Anomaly = "hanging-transaction"
	EOSMissing         Anomaly = "eos-missing"
	EOSDuplicate       Anomaly = "eos-duplicate"
	NonmonotonicPoll   Anomaly = "nonmonotonic-poll"
	PollSkip           Anomaly = "poll-skip"
	PollUnowned        Anomaly = "poll-unowned"
	// Where a group member resumes a partition, against its group's committed offset.
	ResumeSkippedAhead   Anomaly = "resume-skipped-ahead"
	ResumeRewoundFurther Anomaly = "resume-rewound-further"
	UnexpectedAck        Anomaly = "unexpected-ack"
	MetadataLost         Anomaly = "metadata-lost"
	EffectDuplicate      Anomaly = "effect-duplicate"
	EffectMissing        Anomaly = "effect-missing"
	OutboxLost           Anomaly = "outbox-lost"
	OutboxDuplicate      Anomaly = "outbox-duplicate"
	// Share groups (KIP-932): deliveries and acknowledgements of a share group's records.
	ShareLost           Anomaly = "share-lost"
	ShareRedelivered    Anomaly = "share-redelivered"
	ShareDoubleAcquire  Anomaly = "share-double-acquire"
	ShareOverDelivered  Anomaly = "share-over-delivered"
	ShareCountRegressed Anomaly = "share-count-regressed"

	// Transactions that read (a txn op's reads, an rpw's inputs): the dependency graph.
	G0               Anomaly = "G0"
	G1c              Anomaly = "G1c"
	G1cProcess       Anomaly = "G1c-process"
	G1cRealtime      Anomaly = "G1c-realtime"
	PrecommittedRead Anomaly = "precommitted-read"
	UncommittedRead  Anomaly = "uncommitted-read"
	FutureRead       Anomaly = "future-read"
	PhantomRead      Anomaly = "phantom-read"
)

// Anomalies lists every family in report order.
func Anomalies() []Anomaly {
	return []Anomaly{LostWrite, LostObserved, Duplicate, Reorder, InconsistentOffset, AbortedRead,
		PartialTransaction, ZombieWrite, MergedTransaction, HangingTransaction, EOSMissing, EOSDuplicate,
		G1c, G1cProcess, G1cRealtime, PrecommittedRead, UncommittedRead, FutureRead, PhantomRead, G0,
		NonmonotonicPoll, PollSkip, PollUnowned, ResumeSkippedAhead, ResumeRewoundFurther, UnexpectedAck, MetadataLost,
		EffectDuplicate, EffectMissing, OutboxLost, OutboxDuplicate,
		ShareLost, ShareRedelivered, ShareDoubleAcquire, ShareOverDelivered, ShareCountRegressed}
}

// OfShareGroups reports whether a is about a share group's deliveries (judged by what the run
// did to the group's state, not by a producer's settings).
func (a Anomaly) OfShareGroups() bool {
	switch a {
	case ShareLost, ShareRedelivered, ShareDoubleAcquire, ShareOverDelivered, ShareCountRegressed:
		return true
	}
	return false
}

// OfSinks reports whether a is about a sink's side effects outside Kafka (judged by the sink's
// mode, not by a producer's settings).
func (a Anomaly) OfSinks() bool {
	return a == EffectDuplicate || a == EffectMissing || a == OutboxLost || a == OutboxDuplicate
}

// ParseAnomaly reads an anomaly family's name.
func ParseAnomaly(s string) (Anomaly, error) {
	a := Anomaly(strings.TrimSpace(s))
	if slices.Contains(Anomalies(), a) {
		return a, nil
	}
	names := make([]string, 0, len(Anomalies()))
	for _, n := range Anomalies() {
		names = append(names, string(n))
	}
	return "", fmt.Errorf("anomaly %q: want one of %s", s, strings.Join(names, ", "))
}

// Join writes anomaly names as a comma-separated list.
func Join(as []Anomaly) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// UnmarshalText reads what ParseAnomaly reads, so that a scenario file cannot name an anomaly
// the checker does not report.
func (a *Anomaly) UnmarshalText(b []byte) error {
	v, err := ParseAnomaly(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Judgement is what the table says of an anomaly under a configuration.
type Judgement int

const (
	// Unknown: no documented guarantee covers the configuration; the verdict cannot be pass.
	Unknown Judgement = iota
	// Permitted: the documents allow it; it is counted and reported, and does not fail the run.
	Permitted
	// Forbidden: the documents rule it out; one occurrence fails the run.
	Forbidden
)

func (j Judgement) String() string {
	switch j {
	case Permitted:
		return "permitted"
	case Forbidden:
		return "forbidden"
	}
	return "unknown"
}

// MarshalText writes j as String does: results.json's "judgement".
func (j Judgement) MarshalText() ([]byte, error) { return []byte(j.String()), nil }

// UnmarshalText reads "permitted", "forbidden" or "unknown".
func (j *Judgement) UnmarshalText(b []byte) error {
	for _, v := range []Judgement{Unknown, Permitted, Forbidden} {
		if string(b) == v.String() {
			*j = v
			return nil
		}
	}
	return fmt.Errorf("judgement %q: want permitted, forbidden or unknown", b)
}

// Severity orders judgements for reporting: forbidden first, then unknown, then permitted.
func (j Judgement) Severity() int {
	switch j {
	case Forbidden:
		return 0
	case Unknown:
		return 1
	}
	return 2
}

// Worst is the most severe of the judgements (Permitted for none).
func Worst(js ...Judgement) Judgement {
	w := Permitted
	for _, j := range js {
		if j.Severity() < w.Severity() {
			w = j
		}
	}
	return w
}

// Writer kinds: the op that wrote a record.
const (
	WriterSend = "send"
	WriterTxn  = "txn"
	WriterRPW  = "rpw"
)

// Facts are the circumstances of one finding: the settings of the producer that wrote the
// record concerned, of its topic, the faults of the run, and the reader's isolation.
type Facts struct {
	// HasWriter is false when no op in the history wrote the record; Producer is then zero.
	HasWriter  bool
	Producer   kafkaconf.Resolved
	WriterKind string // WriterSend, WriterTxn or WriterRPW
	// Resent: the value was written by more than one op (an application resend, a new
	// producer instance sending it again, or a transaction retried with the same payload).
	Resent    bool
	Topic     kafkaconf.ResolvedTopic
	Faults    Faults
	Isolation kafkaconf.Isolation // the reader's isolation level, where a reader is concerned
	// Client is the client that ran (the history header's), TxnProtocol the transaction
	// protocol its transactional producers spoke; empty when the header does not say.
	Client      kafkaconf.ClientName
	TxnProtocol kafkaconf.TxnProtocol
	// Sink is the mode of the sink whose side effects a finding is about; empty otherwise.
	Sink sink.Mode
	// Disturbed: a fault took effect, or the partition's leader changed, while the ops of a
	// share group finding ran. LeaderLost: of those, the partition's leader changed, or a fault
	// acted on the process of the node that led it (its memory of acquisitions may be gone).
	// HolderLeft: the member that held the earlier of the finding's deliveries crashed before
	// the later one.
	Disturbed, LeaderLost, HolderLeft bool
}

// Rule is one row of the guarantee table: when Match holds for a finding's Facts, the anomaly
// is judged Judgement, for the reason Why.
type Rule struct {
	Anomaly   Anomaly
	When      string // the condition in words, for listings
	Match     func(Facts) bool
	Judgement Judgement
	// Why may name settings in braces — {acks} {idempotence} {in_flight} {retries} {rf}
	// {min_isr} {unclean} {isolation} {disk_nodes} {power_nodes} {flush} {controllers} {ctl_power} {ctl_disk} {producer_conflict} {topic_conflict} —
	// which Explain fills in from the Facts.
	Why string
}

// Decision is the table's answer for one finding.
type Decision struct {
	Judgement Judgement
	Why       string
	Rule      int // index into Rules(); -1 when no row matched
	// Known is the known issue that explains a forbidden finding (KnownIssues); "" for none.
	Known KnownIssue
}

// Predicates the rows share. Each says why it is what it is, since the table is the place a
// reader goes to learn what Kafka promises.
func always(Facts) bool             { return true }
func noWriter(f Facts) bool         { return !f.HasWriter }
func producerConflict(f Facts) bool { return f.HasWriter && f.Producer.Conflict != "" }
func topicConflict(f Facts) bool    { return f.Topic.Conflict != "" }
func acks(a kafkaconf.Acks) func(Facts) bool {
	return func(f Facts) bool { return f.Producer.Acks == a }
}
func weakAcks(f Facts) bool        { return f.HasWriter && f.Producer.Acks != kafkaconf.AcksAll }
func idempotent(f Facts) bool      { return f.Producer.Idempotent }
func inFlightOne(f Facts) bool     { return f.Producer.MaxInFlight == 1 }
func retries(f Facts) bool         { return f.Producer.Retries > 0 }
func resent(f Facts) bool          { return f.Resent }
func failedSend(f Facts) bool      { return f.WriterKind == WriterSend }
func readUncommitted(f Facts) bool { return f.Isolation == kafkaconf.ReadUncommitted }

// truncation: an out-of-sync replica may lead (configured, or forced by the nemesis), and the
// log is then cut back to what that replica had.
func truncation(f Facts) bool { return f.Topic.Unclean || f.Faults.UncleanElection }

// diskBeyond: a disk loss that the configuration does not promise to survive — a single copy,
// an ISR allowed to shrink to the leader alone, or as many lost disks as min.insync.replicas.
func diskBeyond(f Facts) bool {
	return f.Faults.DiskLoss() && (f.Topic.RF == 1 || f.Topic.MinISR == 1 || f.Faults.diskNodes() >= f.Topic.MinISR)
}

// powerBeyond: a power loss that the configuration does not promise to survive. Kafka does not
// fsync per append by default (flush.messages), so what the replicas that lost power had
// acknowledged may have been only in their page caches; it survives only on replicas that kept
// their power, and min.insync.replicas is the fewest copies an acknowledgement promises. With
// flush.messages=1 every replica fsyncs an append before it acknowledges it or fetches again,
// so no power loss is beyond the guarantee.
func powerBeyond(f Facts) bool {
	return f.Faults.PowerLoss() && !f.Topic.FlushEach() &&
		(f.Topic.RF == 1 || f.Topic.MinISR == 1 || f.Faults.powerNodes() >= f.Topic.MinISR)
}

// lossBeyond: records below the high watermark may be gone from every replica that could lead.
func lossBeyond(f Facts) bool { return diskBeyond(f) || powerBeyond(f) }

func diskLoss(f Facts) bool     { return f.Faults.DiskLoss() }
func minISROne(f Facts) bool    { return f.Topic.MinISR == 1 || f.Topic.RF == 1 }
func diskWeakAcks(f Facts) bool { return f.Faults.DiskLoss() && weakAcks(f) }
func truncOrDisk(f Facts) bool  { return truncation(f) || lossBeyond(f) }

// offsetsLoss: a disk or power loss anywhere in the run, which may have reached the replicas of
// the group's __consumer_offsets partition.
func offsetsLoss(f Facts) bool {
	return slices.Contains(f.Faults.Kinds, FaultDiskLoss) || slices.Contains(f.Faults.Kinds, FaultPowerLoss)
}

func sinkModeUnknown(f Facts) bool { _, ok := f.Sink.Info(); return !ok }

// disturbed: something that releases a share group's locks (or loses the in-memory state of its
// acquired records) happened while the finding's ops ran.
func disturbed(f Facts) bool { return f.Disturbed }

// leaderLost: the share-partition leader, which alone keeps the counts of acquisitions (they are
// not persisted), changed or was crashed while the finding's ops ran.
func leaderLost(f Facts) bool { return f.LeaderLost }

func sinkDedupes(f Facts) bool { in, _ := f.Sink.Info(); return in.Dedupes }

// stateLoss: a loss that Kafka's defaults for __share_group_state (replication factor 3, min ISR
// 2, no fsync per append) do not promise to survive: a disk lost anywhere (the history does not
// name that topic's replicas), or a power cut of 2 or more brokers at once. A single broker's
// power cut leaves every write acknowledged with acks=all on another replica's page cache.
func stateLoss(f Facts) bool {
	return f.Faults.DiskLoss() || (f.Faults.PowerLoss() && f.Faults.powerNodes() >= shareStateMinISR)
}

// shareStateMinISR is share.coordinator.state.topic.min.isr's default.
const shareStateMinISR = 2

// Controllers whose committed metadata may be gone: a majority lost the power (what Raft fsynced
// survives, but no document promises that) or their disks (the committed log itself is gone), or a
// minority lost their disks (a voter that comes back empty in a static quorum can vote as if it
// had the log it lost, KIP-853).
func quorumPowerLoss(f Facts) bool    { return f.Faults.quorumLoss(f.Faults.ControllerPowerLoss) }
func controllersUnknown(f Facts) bool { return f.Faults.controllersUnknown() }
func quorumDiskLoss(f Facts) bool     { return f.Faults.quorumLoss(f.Faults.ControllerDiskLoss) }
func controllerDiskLoss(f Facts) bool {
	return f.Faults.ControllerDiskLoss != 0
}

func and(a, b func(Facts) bool) func(Facts) bool {
	return func(f Facts) bool { return a(f) && b(f) }
}

const (
	whyProducerConflict = "producer settings no documented guarantee covers: {producer_conflict}"
	whyTopicConflict    = "topic settings no documented guarantee covers: {topic_conflict}"
	whyNoWriter         = "no op in the history wrote this value, so the producer settings that judge it are unknown"
	whyTruncation       = "unclean.leader.election.enable={unclean} or a forced unclean election: an out-of-sync replica may become leader and the log is truncated to it"
	whyDiskBeyond       = "disk loss on {disk_nodes} broker(s) with replication.factor={rf}, min.insync.replicas={min_isr}: beyond the documented guarantee, records below the high watermark may have lived only on the lost disk"
	whyPowerBeyond      = "power loss on {power_nodes} replica(s) at once with replication.factor={rf}, min.insync.replicas={min_isr}, flush.messages={flush}: Kafka acknowledges before any fsync, so records below the high watermark may have lived only in the page caches that were lost; beyond the documented guarantee"
)

// Table is the guarantee table (docs/guarantees.md). Rows are tried in order; the
// first whose Match holds decides. Every family ends in a catch-all row, so "no row matched"
// only happens for a name the table does not know.
type Table []Rule

// Rules returns the guarantee table. Each call builds a fresh copy, so callers may keep or
// change theirs.
func Rules() Table {
	return Table{
		// Durability of acknowledged writes.
		{LostWrite, "no writer", noWriter, Unknown, whyNoWriter},
		{LostWrite, "producer settings conflict", producerConflict, Unknown, whyProducerConflict},
		{LostWrite, "acks=0", acks(kafkaconf.AcksNone), Permitted, "acks=0: the producer does not wait for the broker, so nothing is acknowledged and loss is permitted"},
		{LostWrite, "acks=1", acks(kafkaconf.AcksLeader), Permitted, "acks=1: the leader acknowledges before followers copy the record; loss of acknowledged writes is permitted when the leader fails"},
		{LostWrite, "topic settings conflict", topicConflict, Unknown, whyTopicConflict},
		{LostWrite, "unclean election possible", truncation, Permitted, whyTruncation + "; loss permitted"},
		{LostWrite, "power loss beyond the guarantee", powerBeyond, Permitted, whyPowerBeyond + "; loss permitted"},
		{LostWrite, "RF=1 and disk loss", and(diskLoss, func(f Facts) bool { return f.Topic.RF == 1 }), Permitted, "replication.factor=1 with disk loss: the only copy was lost; loss permitted"},
		{LostWrite, "min ISR 1 and disk loss", and(diskLoss, minISROne), Permitted, "acks=all, min.insync.replicas=1 with disk loss: the ISR may shrink to the leader alone and still acknowledge, and that leader's disk was lost; loss permitted"},
		{LostWrite, "disk loss on min ISR brokers", diskBeyond, Permitted, "acks=all, min.insync.replicas={min_isr} with disk loss on {disk_nodes} brokers: beyond the documented guarantee; loss permitted"},
		{LostWrite, "min ISR 1, no disk loss", minISROne, Forbidden, "acks=all, replication.factor={rf}, min.insync.replicas={min_isr}, unclean=false, no disk lost: an acknowledged write is on the leader's disk and no out-of-sync replica may lead, so it must survive broker failures"},
		{LostWrite, "acks=all, min ISR >= 2", always, Forbidden, "acks=all, min.insync.replicas={min_isr}, unclean=false: an acknowledged write is on every ISR member (at least {min_isr}) and must survive one broker loss, a power loss of fewer than {min_isr} replicas (one that lost what it had not fsynced restarts out of the ISR), and with flush.messages=1 (every append fsynced) a power loss of them all"},

		{LostObserved, "topic settings conflict", topicConflict, Unknown, whyTopicConflict},
		{LostObserved, "unclean election possible", truncation, Permitted, whyTruncation + ", so even a record a consumer saw may be cut"},
		{LostObserved, "disk loss beyond the guarantee", diskBeyond, Permitted, whyDiskBeyond},
		{LostObserved, "power loss beyond the guarantee", powerBeyond, Permitted, whyPowerBeyond},
		{LostObserved, "disk loss, writer acks<all", diskWeakAcks, Permitted, "acks={acks} with disk loss: an acks<all write is accepted while the ISR is the leader alone, and a consumer can see it there before the leader's disk is lost"},
		{LostObserved, "otherwise", always, Forbidden, "a record a consumer observed was below the high watermark, on every ISR member; without an unclean election or disk loss beyond the guarantee it must not disappear or change at its offset"},

		// Duplicates and order.
		{Duplicate, "value sent again by the application", resent, Permitted, "the application sent this value again after a failed or unknown send: a new send is a new record in every configuration (idempotence covers the producer's own retries only)"},
		{Duplicate, "no writer", noWriter, Unknown, whyNoWriter},
		{Duplicate, "producer settings conflict", producerConflict, Unknown, whyProducerConflict},
		{Duplicate, "unclean election possible", truncation, Permitted, whyTruncation + ", dropping the broker's record of producer sequences: a retried batch that a reader saw at its first offset may be appended again"},
		{Duplicate, "disk or power loss beyond the guarantee", lossBeyond, Permitted, "the log may roll back past acknowledged records (disk or power loss beyond the guarantee), and the broker's record of producer sequences with it: a retried batch that a reader saw at its first offset may be appended again"},
		{Duplicate, "idempotent", idempotent, Forbidden, "enable.idempotence=true: the broker de-duplicates the producer's retries by producer id, epoch and sequence within one producer session, for up to 5 requests in flight (this one kept {in_flight})"},
		{Duplicate, "not idempotent, retries>0", retries, Permitted, "enable.idempotence=false, retries={retries}: when an acknowledgement is lost the producer retries and the record is appended again"},
		{Duplicate, "not idempotent, retries=0", always, Forbidden, "enable.idempotence=false, retries=0: each record is sent once, so nothing may append it twice"},

		{Reorder, "no writer", noWriter, Unknown, whyNoWriter},
		{Reorder, "producer settings conflict", producerConflict, Unknown, whyProducerConflict},
		{Reorder, "log truncation possible", truncOrDisk, Permitted, "the log may be truncated (unclean election, or disk or power loss beyond the guarantee), and the broker's record of producer sequences with it: the producer starts a new session, and a batch it sends again may land after later ones"},
		{Reorder, "idempotent", idempotent, Forbidden, "enable.idempotence=true: sequence numbers keep one producer session's batches in send order within a partition (max.in.flight={in_flight})"},
		{Reorder, "not idempotent, in-flight 1", inFlightOne, Forbidden, "enable.idempotence=false, max.in.flight.requests.per.connection=1: one request at a time cannot be overtaken"},
		{Reorder, "not idempotent, retries>0, in-flight>1", retries, Permitted, "enable.idempotence=false, retries={retries}, max.in.flight.requests.per.connection={in_flight}: a retried batch may land after a later one"},
		{Reorder, "not idempotent, retries=0", always, Forbidden, "enable.idempotence=false, retries=0: a failed batch is not retried, so acknowledged batches keep their send order"},

		{InconsistentOffset, "topic settings conflict", topicConflict, Unknown, whyTopicConflict},
		{InconsistentOffset, "unclean election possible", truncation, Permitted, whyTruncation + " and the freed offsets are reused by later records"},
		{InconsistentOffset, "writer acks<all", weakAcks, Permitted, "acks={acks}: a write acknowledged before it was replicated can be truncated on leader failover and its offset reused"},
		{InconsistentOffset, "disk loss beyond the guarantee", diskBeyond, Permitted, whyDiskBeyond + ", and their offsets reused"},
		{InconsistentOffset, "power loss beyond the guarantee", powerBeyond, Permitted, whyPowerBeyond + ", and their offsets reused"},
		{InconsistentOffset, "otherwise", always, Forbidden, "an offset holds one record for the life of the log: unless the log is truncated (unclean election, disk loss beyond the guarantee, an acks<all write lost on failover) every report of an offset names the same record"},

		// Transactions.
		{AbortedRead, "a failed plain send was read", failedSend, Forbidden, "a send that completed fail definitely did not happen: no reader may see its record"},
		{AbortedRead, "read_uncommitted reader", readUncommitted, Permitted, "isolation.level=read_uncommitted: readers may see records of aborted and open transactions"},
		{AbortedRead, "read_committed reader", always, Forbidden, "isolation.level=read_committed: records of aborted transactions stay in the log, but their abort markers hide them from read_committed readers"},

		{PartialTransaction, "log truncation possible", truncOrDisk, Permitted, "the log may be truncated (unclean election, or disk or power loss beyond the guarantee), which can cut some of a committed transaction's records and not others"},
		{PartialTransaction, "otherwise", always, Forbidden, "transactions are atomic across partitions and topics{txn_protocol}: a read_committed reader sees all records of a committed transaction or none of them"},
		{ZombieWrite, "always", always, Forbidden, "initTransactions by a new instance with the same transactional.id bumps the epoch and fences the old one{txn_protocol}: none of the old instance's later records may become visible as committed"},
		{MergedTransaction, "log truncation possible", truncOrDisk, Permitted, "the log may be truncated (unclean election, or disk or power loss beyond the guarantee), which can cut a transaction marker and let later records take its offset"},
		{MergedTransaction, "otherwise", always, Forbidden, "a transaction ends with a marker in each partition it wrote before the same transactional.id's next transaction may write there{txn_protocol}: once the client has reported a transaction over, a later one cannot decide its outcome"},
		{HangingTransaction, "always", always, Forbidden, "a transactional record belongs to a transaction its coordinator knows, which a marker ends: a produce from a client that did not add the partition is refused (transaction.partition.verification.enable, KIP-890 part 1), or the last stable offset stays below it for good and read_committed readers stop there"},
		{EOSMissing, "log truncation possible", truncOrDisk, Permitted, "the log may be truncated (unclean election, or disk or power loss beyond the guarantee), which can cut a committed output record, or the input it came from, from the log"},
		{EOSMissing, "otherwise", always, Forbidden, "exactly-once read-process-write (offsets sent in the transaction, read_committed downstream{txn_protocol}): each committed input record yields its output in the committed output"},
		{EOSDuplicate, "always", always, Forbidden, "exactly-once read-process-write{txn_protocol}: each committed input record yields its output exactly once, and group offsets move only with committed transactions{rewind}"},

		// Transactions that read: the dependency graph of what each transaction read from which.
		{G0, "always", always, Permitted, "Kafka's transactions do not isolate their writes from each other: two transactions may append to two partitions in opposite orders (a cycle of write-write edges), and nothing Kafka documents rules it out"},
		{G1c, "a read_uncommitted read on the cycle", readUncommitted, Permitted, "isolation.level=read_uncommitted: a reader sees records of open transactions, so two transactions may each read what the other wrote before either ends"},
		{G1c, "otherwise", always, Forbidden, "isolation.level=read_committed: a transaction reads another's records only once that one's end is decided (the last stable offset passed them), and ends only after its own reads, so no chain of reads can lead back to a transaction it started from{txn_protocol}"},
		{G1cProcess, "a read_uncommitted read on the cycle", readUncommitted, Permitted, "isolation.level=read_uncommitted: a reader sees records of open transactions, so what one transaction read need not come after the other's end"},
		{G1cProcess, "otherwise", always, Forbidden, "isolation.level=read_committed: a transaction reads another's records only after that one's end is decided, and a process begins its next transaction only after the previous one completed, so reads and the process's order cannot form a cycle{txn_protocol}"},
		{G1cRealtime, "a read_uncommitted read on the cycle", readUncommitted, Permitted, "isolation.level=read_uncommitted: a reader sees records of open transactions, so what one transaction read need not come after the other's end"},
		{G1cRealtime, "otherwise", always, Forbidden, "isolation.level=read_committed: a transaction reads another's records only after that one's end is decided, and a transaction that completed before another began ended before it: reads and real time cannot form a cycle{txn_protocol}"},
		{PrecommittedRead, "read_uncommitted reader", readUncommitted, Permitted, "isolation.level=read_uncommitted: the transaction's consumer sees its own producer's records while the transaction is open"},
		{PrecommittedRead, "otherwise", always, Forbidden, "isolation.level=read_committed: a transaction's own records are in an open transaction until it commits, and read_committed consumers, its own included, see none of them before"},
		{UncommittedRead, "read_uncommitted reader", readUncommitted, Permitted, "isolation.level=read_uncommitted: readers see records of open transactions"},
		{UncommittedRead, "otherwise", always, Forbidden, "isolation.level=read_committed: a consumer reads only below the last stable offset, which passes a transaction's records once its end is decided; no read can return them before the transaction's commit was even asked for"},
		{FutureRead, "always", always, Forbidden, "a consumer returns records that were written: no read can complete before any op that could have written its record began"},
		{PhantomRead, "always", always, Forbidden, "a consumer returns only records a producer wrote: a value no op of the history wrote was made up or corrupted on its way (or the history lost its writer)"},

		// Consumers.
		{NonmonotonicPoll, "log truncation possible", truncOrDisk, Permitted, "the log may be truncated (unclean election, or disk or power loss beyond the guarantee): a consumer whose position is past the new end is reset (OFFSET_OUT_OF_RANGE)"},
		{NonmonotonicPoll, "otherwise", always, Forbidden, "a consumer's position in a partition only moves forward between rebalances and seeks"},
		{PollSkip, "log truncation possible", truncOrDisk, Permitted, "the log may be truncated (unclean election, or disk or power loss beyond the guarantee): a consumer whose position is past the new end is reset (OFFSET_OUT_OF_RANGE)"},
		{PollSkip, "otherwise", always, Forbidden, "between rebalances and seeks a consumer reads, in offset order, every record its isolation level shows (offsets taken by transaction markers are not records)"},
		{PollUnowned, "always", always, Forbidden, "a consumer returns records only of the partitions assigned to it: once its rebalance listener was told a partition is revoked or lost (onPartitionsRevoked, onPartitionsLost), no poll returns a record of it until it is assigned again, for its new owner may be reading the same records"},

		{ResumeSkippedAhead, "log truncation possible", truncOrDisk, Permitted, "the log may be truncated (unclean election, or disk or power loss beyond the guarantee): a committed offset past the new end is out of range, and offsets may name other records than the group read"},
		{ResumeSkippedAhead, "committed offsets may be lost", offsetsLoss, Permitted, "a disk or power loss hit brokers: the group's committed offsets live in __consumer_offsets, whose replicas and settings the history does not give, so they may have been lost or gone back"},
		{ResumeSkippedAhead, "otherwise", always, Forbidden, "a group member starts a partition at its group's committed offset (KafkaConsumer: the committed position is the offset the consumer recovers to after a failure or a rebalance){rewind}: starting past it, the group never processes the records between"},
		{ResumeRewoundFurther, "log truncation possible", truncOrDisk, Permitted, "the log may be truncated (unclean election, or disk or power loss beyond the guarantee): a committed offset past the new end is out of range, and the consumer resets to the earliest offset"},
		{ResumeRewoundFurther, "committed offsets may be lost", offsetsLoss, Permitted, "a disk or power loss hit brokers: the group's committed offsets live in __consumer_offsets, whose replicas and settings the history does not give, so they may have been lost (the consumer then resets to the earliest offset) or gone back"},
		{ResumeRewoundFurther, "otherwise", always, Forbidden, "a group member starts a partition at its group's committed offset, not before it (KafkaConsumer: the committed position is the offset the consumer recovers to){rewind}: a committed transaction's offsets, once its commit completed, are what the next member reads from"},

		// Only acks=all writes are checked: min.insync.replicas applies to them alone.
		{UnexpectedAck, "acks=all", always, Forbidden, "acks=all: the leader must reject writes with NOT_ENOUGH_REPLICAS while the ISR has fewer than min.insync.replicas members"},

		// KRaft metadata.
		{MetadataLost, "controllers hit not known", controllersUnknown, Unknown, "a power or disk loss may have hit controllers the history does not let one count (its header names no controllers, or the loss names no nodes): whether a majority kept the committed metadata is not known"},
		{MetadataLost, "disk loss on a controller majority", quorumDiskLoss, Permitted, "disk loss on {ctl_disk} of {controllers} controllers, half of them or more: no majority kept the committed metadata log on its disk; beyond any guarantee"},
		{MetadataLost, "disk loss on a controller", controllerDiskLoss, Unknown, "disk loss on {ctl_disk} of {controllers} controllers: a voter of a static quorum that comes back with an empty log can vote as the voter it was (KIP-853 tells them apart only in a dynamic quorum); Kafka documents no guarantee for it"},
		{MetadataLost, "power loss on a controller majority", quorumPowerLoss, Unknown, "power loss on {ctl_power} of {controllers} controllers at once, half of them or more: Kafka's Raft (KIP-595) flushes the metadata log before a voter counts towards a commit, so committed metadata should survive, but no Kafka document promises it"},
		{MetadataLost, "otherwise", always, Forbidden, "metadata the KRaft quorum committed (a partition's leader and leader epoch) is on a majority of the controllers before brokers learn it; with no controller disk lost and power lost by fewer than a majority at once, it must survive: a partition's leader epoch never goes back and never names two leaders"},

		// Sinks: side effects outside Kafka, judged by the pattern the sink follows, not by a
		// Kafka guarantee (Kafka's exactly-once ends at the cluster).
		{EffectDuplicate, "sink mode not known", sinkModeUnknown, Unknown, "the history's header does not say how the sink applied its input: whether a repeated side effect is allowed is not known"},
		{EffectDuplicate, "the sink de-duplicates", sinkDedupes, Forbidden, "{sink}: an input replayed after a crash or a lost answer is absorbed by the store, so each input is applied at most once"},
		{EffectDuplicate, "otherwise", always, Permitted, "{sink}: at-least-once — Kafka's exactly-once ends at the cluster, and an input whose side effect was done but whose offset was not yet committed is applied again after a crash, a rebalance or a lost answer"},
		{EffectMissing, "log truncation possible", truncOrDisk, Permitted, "the input topic's log may be truncated (unclean election, or disk or power loss beyond the guarantee): a record below the committed position may have been replaced by another the sink never read"},
		{EffectMissing, "otherwise", always, Forbidden, "{sink}: the position is committed only after the side effect is done (or with it, in one transaction), so every input below the committed position has its effect"},
		{OutboxLost, "sink mode not known", sinkModeUnknown, Unknown, "the history's header does not say how the sink applied its input: whether it kept an outbox is not known"},
		{OutboxLost, "log truncation possible", truncOrDisk, Permitted, "the outbox topic's log may be truncated (unclean election, or disk or power loss beyond the guarantee): a record the relay published may be cut after its row was marked sent"},
		{OutboxLost, "otherwise", always, Forbidden, "{sink}: the business row and its outbox row are committed in one database transaction, and the relay marks a row sent only after an idempotent acks=all producer's acknowledgement, so every committed business row reaches the outbox topic"},

		{OutboxDuplicate, "sink mode not known", sinkModeUnknown, Unknown, "the history's header does not say how the sink applied its input: whether its relay may publish twice is not known"},
		{OutboxDuplicate, "always", always, Permitted, "{sink}: a relay that crashes (or loses an answer) after Kafka acknowledged a publish and before the row is marked sent publishes it again under a new producer id, which idempotence cannot recognise: the outbox topic is at-least-once, and its consumers de-duplicate by event id"},

		// Share groups (KIP-932; docs/share-groups.md), judged by what the run did while the
		// finding's ops ran. Citations are to KIP-932 and Kafka 4.3's broker
		// (kafka.server.share.SharePartition).
		{ShareLost, "log truncation possible", truncOrDisk, Permitted, "the share topic's log may be truncated (unclean election, or disk or power loss beyond the guarantee): a record the group finished may have been replaced by another at its offset"},
		{ShareLost, "share state may be lost", stateLoss, Permitted, "a disk loss, or a power cut of {power_nodes} brokers at once: the group's state lives in __share_group_state (by default replication factor 3, min ISR 2, no fsync per append), whose replicas the history does not name, so the start offset it holds may not be one the group reached"},
		{ShareLost, "otherwise", always, Forbidden, "the share-partition start offset moves only past records whose delivery completed — acknowledged (accept), rejected, or archived at the delivery limit (KIP-932; SharePartition moves it over terminal states only): every record between the group's start and the end is delivered until one of those happens"},
		{ShareRedelivered, "log truncation possible", truncOrDisk, Permitted, "the share topic's log may be truncated (unclean election, or disk or power loss beyond the guarantee): the record delivered again may be another at the same offset"},
		{ShareRedelivered, "share state may be lost", stateLoss, Permitted, "a disk loss, or a power cut of {power_nodes} brokers at once: an acknowledgement persisted to __share_group_state (acks=all, min ISR 2, no fsync per append) may be lost with the replicas' page caches, and its record delivered again"},
		{ShareRedelivered, "otherwise", always, Forbidden, "an accepted or rejected record is never delivered again: the leader answers an acknowledgement only after the share coordinator has written it to __share_group_state (KIP-932: written and fully replicated before the response; SharePartition.acknowledge)"},
		{ShareDoubleAcquire, "a fault or leader change in between", disturbed, Permitted, "a fault took effect, or the partition's leader changed, while both acquisitions ran: an acquisition is not persisted, so a new share-partition leader makes the record available at once, and a closed share session (a lost connection) releases its member's records"},
		{ShareDoubleAcquire, "otherwise", always, Forbidden, "an acquired record stays with its member until it acknowledges it, its share session ends, or its acquisition lock (record lock duration) expires (KIP-932): no other poll acquires it meanwhile"},
		{ShareOverDelivered, "share state may be lost", stateLoss, Permitted, "a disk loss, or a power cut of {power_nodes} brokers at once: delivery counts persisted to __share_group_state may be lost, and a record delivered again past the limit"},
		{ShareOverDelivered, "the share-partition leader changed or crashed in between", leaderLost, Permitted, "the partition's leader changed, or a fault acted on its node's process, during the record's deliveries: an acquisition's count is not persisted (KIP-932: \"in the unlikely event of a share-partition leader crash, memory of the in-flight delivery will be lost\"), so across a new leader a record may be delivered more times than the limit, though no delivery reports a count past it"},
		{ShareOverDelivered, "otherwise", always, Forbidden, "a record delivered delivery-limit times that is not accepted is archived, and never delivered again; no delivery count passes the limit (KIP-932, group.share.delivery.count.limit)"},
		{ShareCountRegressed, "share state may be lost", stateLoss, Permitted, "a disk loss, or a power cut of {power_nodes} brokers at once: a delivery count persisted to __share_group_state (acks=all, min ISR 2, no fsync per append) may be lost with the replicas' page caches"},
		{ShareCountRegressed, "the share-partition leader changed or crashed in between", leaderLost, Permitted, "the partition's leader changed, or a fault acted on its node's process, between the deliveries, and no acknowledgement persisted the earlier count: a new leader counts from the last persisted delivery count, so one count may repeat (KIP-932: an acquired record is recorded as available with the count before it, and \"in the unlikely event of a share-partition leader crash, memory of the in-flight delivery will be lost\")"},
		{ShareCountRegressed, "otherwise", always, Forbidden, "every acquisition raises a record's delivery count by one; the share-partition leader keeps the counts of acquired records in memory and persists them with each acknowledgement or release, so only a crash or change of that leader may lose one that was not persisted, and a count persisted to the group's state never goes back (KIP-932)"},
	}
}

// Judge looks anomaly a up in the guarantee table for the circumstances f.
func Judge(a Anomaly, f Facts) Decision { return Rules().Judge(a, f) }

// Judge looks anomaly a up in t for the circumstances f.
func (t Table) Judge(a Anomaly, f Facts) Decision {
	for i, r := range t {
		if r.Anomaly == a && r.Match(f) {
			d := Decision{Judgement: r.Judgement, Why: Explain(r.Why, f), Rule: i}
			if d.Judgement == Forbidden {
				d.Known = knownFor(a, f)
			}
			return d
		}
	}
	return Decision{Judgement: Unknown, Rule: -1,
		Why: fmt.Sprintf("no row of the guarantee table covers %q", a)}
}

// Explain fills the {placeholders} of a rule's Why from f; a name it does not know stays as
// written. The checker explains every default decision of a run, so this is a scan rather than
// a strings.Replacer built per call.
func Explain(why string, f Facts) string {
	if !strings.Contains(why, "{") {
		return why
	}
	var b strings.Builder
	b.Grow(len(why) + 32)
	for {
		i := strings.IndexByte(why, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(why[i:], '}')
		if j < 0 {
			break
		}
		b.WriteString(why[:i])
		if v, ok := placeholder(why[i+1:i+j], f); ok {
			b.WriteString(v)
		} else {
			b.WriteString(why[i : i+j+1])
		}
		why = why[i+j+1:]
	}
	b.WriteString(why)
	return b.String()
}

// placeholder is the text of {name} for the circumstances f.
func placeholder(name string, f Facts) (string, bool) {
	p := f.Producer
	switch name {
	case "acks":
		return p.Acks.String(), true
	case "idempotence":
		return strconv.FormatBool(p.Idempotent), true
	case "in_flight":
		return strconv.Itoa(p.MaxInFlight), true
	case "retries":
		return strconv.Itoa(p.Retries), true
	case "rf":
		return strconv.Itoa(f.Topic.RF), true
	case "min_isr":
		return strconv.Itoa(f.Topic.MinISR), true
	case "unclean":
		return strconv.FormatBool(f.Topic.Unclean), true
	case "isolation":
		return string(f.Isolation), true
	case "disk_nodes":
		return strconv.Itoa(f.Faults.diskNodes()), true
	case "power_nodes":
		return strconv.Itoa(f.Faults.powerNodes()), true
	case "flush":
		return flushText(f.Topic.FlushMessages), true
	case "controllers":
		return countText(f.Faults.Controllers, "?"), true
	case "ctl_power":
		return countText(f.Faults.ControllerPowerLoss, "some"), true
	case "ctl_disk":
		return countText(f.Faults.ControllerDiskLoss, "some"), true
	case "producer_conflict":
		return p.Conflict, true
	case "topic_conflict":
		return f.Topic.Conflict, true
	case "txn_protocol":
		return protocolNote(f.TxnProtocol), true
	case "rewind":
		return rewindNote(f.Client), true
	case "sink":
		return sinkNote(f.Sink), true
	}
	return "", false
}

// sinkNote is a sink's mode as a reason states it: the mode and what it does.
func sinkNote(m sink.Mode) string {
	in, ok := m.Info()
	if !ok {
		return "a sink of unknown mode"
	}
	return "sink mode " + string(m) + " (" + in.About + ")"
}

// countText is a node count as a reason states it: unknown when not positive.
func countText(n int, unknown string) string {
	if n <= 0 {
		return unknown
	}
	return strconv.Itoa(n)
}

// flushText is a flush.messages value as a reason states it.
func flushText(n int64) string {
	if n == kafkaconf.DefaultFlushMessages || n == 0 {
		return "default (no fsync per append)"
	}
	return strconv.FormatInt(n, 10)
}

// protocolNote names the transaction protocol a reason holds under, when the header says.
func protocolNote(p kafkaconf.TxnProtocol) string {
	switch p {
	case kafkaconf.TxnProtocolV2:
		return " (transaction protocol v2, KIP-890: partitions join with their first record, the epoch is bumped at each transaction's end)"
	case kafkaconf.TxnProtocolV1:
		return " (transaction protocol v1: partitions added by AddPartitionsToTxn, one epoch for the producer's session)"
	}
	return ""
}

// rewindNote says how the client's processor gets back to the committed offsets after an abort
// (its kafkaconf.Clients row): the clients differ.
func rewindNote(c kafkaconf.ClientName) string {
	if cl, ok := kafkaconf.LookupClient(c); ok && cl.RewindNote != "" {
		return "; " + cl.RewindNote
	}
	return ""
}
