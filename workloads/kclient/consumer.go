package kclient

import (
	"context"
	"log/slog"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventRecord: a record the client returned (Record, with its offset, and Epoch).
	EventRecord EventKind = iota
	// EventAssigned: the group gave the member an assignment (Claims: the whole of it).
	EventAssigned
	// EventRevoked: partitions were revoked, or the member's generation ended: what was handed
	// out since will be read again from the committed offsets (a member drops its batch).
	EventRevoked
	// EventDataLoss: the client found the log truncated under its position (Loss).
	EventDataLoss
)

// Event is one thing a consumer or a member reports to the goroutine that records its ops, in
// the order it happened.
type Event struct {
	Kind EventKind
	// Record and Epoch, its leader epoch (-1 unknown): EventRecord.
	Record history.Record
	Epoch  int32
	// Claims: EventAssigned.
	Claims Claims
	// Loss: EventDataLoss.
	Loss Loss
	// Handle is the client's own record (a sarama message with its session, a *kgo.Record),
	// for Recorded.
	Handle any
}

// Claims is a group member's assignment after a rebalance.
type Claims struct {
	Generation int32
	Member     string
	Partitions map[string][]int32
}

// Loss is a log truncated under a consumer's position, as the client reported it: what the
// consumer role records as a data-loss op.
type Loss = history.DataLoss

// Position is where a consumer resumes in a partition.
type Position struct {
	Offset int64 // the next offset to read; < 0: the start (FromNewest says which)
	Epoch  int32 // the leader epoch of the record before Offset; -1 when unknown
}

// ConsumerSpec is what a consumer instance is opened with.
type ConsumerSpec struct {
	ClientID  string
	Isolation kafkaconf.Isolation
	// FromNewest starts where the log ends instead of at its earliest offset (for a group:
	// when it has no committed offset).
	FromNewest bool
	// Group, with Topics, joins a consumer group that assigns the topics' partitions;
	// positions start from the group's committed offsets. Empty: assign mode.
	Group  string
	Topics []string
	// GroupProtocol is the group protocol the member speaks ("": classic).
	GroupProtocol kafkaconf.GroupProtocol
	// Assign, in assign mode, is every partition to read and where it resumes.
	Assign map[string]map[int32]Position
	// StorePositions, in group mode, leaves the positions to the role, which keeps them with
	// its effects (a sink's store): the consumer commits nothing to the group, and returns no
	// record of a partition an EventAssigned added until the role has called Seek.
	StorePositions bool
	// MaxPollInterval is max.poll.interval.ms, for the clients that have it (Kafka's Java
	// client): a group member that does not poll for longer is dropped from its group. Zero:
	// the client's default.
	MaxPollInterval time.Duration
	Log             *slog.Logger
}

// Consumer is one consumer instance. Everything the client has to tell reaches the one
// goroutine that records the process's ops through Poll, in the order it happened, so that the
// history shows the client's order.
type Consumer interface {
	// Poll waits at most wait for what the client has to report and returns it in order:
	// records in arrival order (at most max) and, between them, control events (an
	// assignment, a log truncated under the position). The role records all of it before it
	// calls Poll again.
	Poll(ctx context.Context, wait time.Duration, max int) []Event
	// Recorded tells the client the records, in the order Poll returned them, that the
	// history now shows as polled. In group mode the client commits these, and never a record
	// it has not been told of, so that a restart resumes right after what the history shows.
	Recorded(recs []Event)
	// Seek, with StorePositions, starts the partitions the assignments since the last Seek
	// added at the offsets in at (the next offset to read; a partition left out starts where
	// a group with nothing committed starts) and lets the consumer fetch them. Partitions the
	// member no longer owns are skipped.
	Seek(ctx context.Context, at map[string]map[int32]int64) error
	// Close ends the instance (leaving its group) and everything it started.
	Close()
}

// MemberSpec is what a read-process-write member is opened with: its transactional producer,
// and a member of Group reading Input at read_committed from the oldest offset, committing
// offsets only in its transactions.
type MemberSpec struct {
	Txn              TxnSpec
	ConsumerClientID string
	Group, Input     string
	// GroupProtocol is the group protocol the member speaks ("": classic).
	GroupProtocol kafkaconf.GroupProtocol
	// Isolation is its consumer's isolation level ("": read_committed, as exactly-once needs;
	// read_uncommitted only for a workload that shows what that level permits).
	Isolation kafkaconf.Isolation
}

// ReadIsolation is the member's consumer's isolation level: Isolation, read_committed by default.
func (s MemberSpec) ReadIsolation() kafkaconf.Isolation {
	if s.Isolation == "" {
		return kafkaconf.ReadCommitted
	}
	return s.Isolation
}

// Member is one read-process-write instance: a transactional producer whose transactions carry
// the offsets consumed with the member's group metadata (KIP-447). Only the goroutine that
// owns it calls its methods.
type Member interface {
	// Txn is the member's producer; Close also leaves the group.
	Txn
	// Poll waits until the client has something, until until passes (zero: no bound) or ctx
	// ends, and returns at most max records and, in order with them, EventAssigned and
	// EventRevoked. After either, the records handed out before it are read again from the
	// committed offsets (the role drops them). An error means the instance cannot go on (a
	// *ReplaceError: replace it).
	Poll(ctx context.Context, max int, until time.Time) ([]Event, error)
	// AddOffsets puts the offsets after in (records Poll returned since the last assignment)
	// into the transaction, with the group metadata of the generation that delivered them.
	AddOffsets(in []history.Record) error
	// Rewind, after a transaction that did not commit (outcome t), makes the next records
	// start at the group's committed offsets; a *ReplaceError when only a new instance can.
	Rewind(t history.Type) error
}

// ReplaceError asks for the instance to be replaced by a new one: it can no longer be used.
type ReplaceError struct{ Reason string }

func (e *ReplaceError) Error() string { return e.Reason }
