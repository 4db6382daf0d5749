package kclient

import (
	"context"
	"log/slog"
	"time"

	"github.com/verity-kafka/verity/history"
)

// Share groups (KIP-932): the broker hands each record of a share partition to one member at a
// time under an acquisition lock, counting its deliveries, and the member acknowledges it
// (accept, release, reject) or renews the lock. A record released, or whose lock ends without an
// acknowledgement (the lock duration passed, or the member's connection closed), is delivered
// again with a higher count, up to the group's delivery limit.

// ShareClient is a Client with a share-group consumer; the roles ask for it with a type
// assertion, since not every client has one (sarama does not).
type ShareClient interface {
	// OpenShareConsumer opens one member of s.Group subscribed to s.Topics.
	OpenShareConsumer(ctx context.Context, s ShareConsumerSpec) (ShareConsumer, error)
	// ConfigureShareGroup sets the group's configs that s names (IncrementalAlterConfigs on
	// the GROUP resource); the group need not exist yet.
	ConfigureShareGroup(ctx context.Context, clientID string, s ShareGroupSettings) error
	// ShareStartOffsets is the share-partition start offset (SPSO) of each partition of topics
	// in group, as the group's coordinator reports it (DescribeShareGroupOffsets): every offset
	// below it is acknowledged or archived. A partition the group has not initialised yet is
	// left out.
	ShareStartOffsets(ctx context.Context, clientID, group string, topics []string) (map[string]map[int32]int64, error)
}

// ShareStart is where a share group begins in a partition it has no state for yet
// (share.auto.offset.reset).
type ShareStart string

const (
	ShareStartEarliest ShareStart = "earliest"
	ShareStartLatest   ShareStart = "latest"
)

// ShareGroupSettings are a share group's configs; a zero field leaves the group's as it is.
type ShareGroupSettings struct {
	Group string
	// Start is share.auto.offset.reset. Kafka's default is latest: a group that should read
	// what was written before its first member joined needs earliest.
	Start ShareStart
	// LockDuration is share.record.lock.duration.ms, bounded by the brokers'
	// group.share.min/max.record.lock.duration.ms.
	LockDuration time.Duration
	// DeliveryLimit is share.delivery.count.limit: a record delivered that many times without
	// being accepted or rejected is archived.
	DeliveryLimit int
}

// ShareConsumerSpec is what a share-group member is opened with.
type ShareConsumerSpec struct {
	ClientID string
	Group    string
	Topics   []string
	// MaxRecords, when set, bounds what one fetch acquires, and the client fetches only for a
	// poll, so that what the member holds is little more than what its polls returned: by
	// default a client acquires ahead of the polls (franz-go up to 500 records a request), and
	// the history never shows those deliveries (the next one seen has a count higher by one).
	MaxRecords int
	Log        *slog.Logger
}

// AckType is how a member acknowledges a record it holds: the history's vocabulary
// (history.AckTypes), so that a client and the checker read one list.
type AckType = history.AckType

const (
	// AckAccept: processed; the record is never delivered again.
	AckAccept = history.AckAccept
	// AckRelease: given back for delivery again (to any member), its count kept.
	AckRelease = history.AckRelease
	// AckReject: unprocessable; archived, never delivered again.
	AckReject = history.AckReject
	// AckRenew: the acquisition lock starts again; the member still holds the record and must
	// acknowledge it with one of the others.
	AckRenew = history.AckRenew
)

// Delivery is one record a member acquired: where it is and what it holds, as the other roles
// record records, and the broker's count of its deliveries (1 the first time).
type Delivery struct {
	Record history.Record
	Count  int
}

// Ack is one record's acknowledgement.
type Ack struct {
	Offset int64
	Type   AckType
}

// AckResult is what is known of one partition's acknowledgements sent by one Commit:
//
//   - ok: the broker answered that it applied them.
//   - fail: they were definitely not applied (the broker refused them, e.g. INVALID_RECORD_STATE
//     because the lock had ended; or the client dropped them unsent); the records are as if
//     never acknowledged.
//   - info: unknown (no answer, a timeout, a connection lost after the request went out, or
//     answers that differ for parts of the partition's acknowledgements).
type AckResult struct {
	Topic     string
	Partition int32
	// Acks are the partition's acknowledgements the result covers, in the order Ack was
	// called.
	Acks  []Ack
	Type  history.Type
	Error string
}

// ShareConsumer is one share-group member. Only the goroutine that owns it calls its methods.
type ShareConsumer interface {
	// Poll waits at most wait for records to be acquired and returns them, at most max, in the
	// order the client returned them, each with its delivery count; it returns as soon as the
	// client has any. Every record of the previous Poll must have been acknowledged with a
	// final type (Ack, then Commit) first: a client may accept on its own what a member polls
	// past (franz-go does), which the history would not show, so Poll refuses to. Records
	// acquired are returned even with an error (a fetch error the client reported).
	Poll(ctx context.Context, wait time.Duration, max int) ([]Delivery, error)
	// Ack marks records the member holds with t, to be sent by the next Commit. A record not
	// held, or already marked since the last Commit, is refused.
	Ack(t AckType, ds ...Delivery) error
	// Commit sends the acknowledgements marked since the last Commit and waits, until ctx
	// ends, for the broker's answer: one AckResult per partition with acknowledgements,
	// sorted by topic and partition.
	Commit(ctx context.Context) []AckResult
	// Close ends the member as a crash would: it leaves without acknowledging what it holds
	// (or anything marked and not committed) and without telling the group; the broker
	// delivers those records again once their locks end (at once, as the member's connection
	// closes, on the Kafka releases Verity runs).
	Close()
}
