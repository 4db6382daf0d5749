package history

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Operation names of a share group's members (KIP-932; docs/history.md, docs/share-groups.md).
// Their payloads are kept in Payload.Raw and read with the Parse functions below: a run
// records a few thousand of them, not millions.
const (
	// FShareSubscribe: an instance joined its share group (ShareSubscribe).
	FShareSubscribe = "share-subscribe"
	// FSharePoll: one poll of a share consumer; its ok carries the records the member acquired.
	FSharePoll = "share-poll"
	// FShareAck: one commit of a member's acknowledgements of one partition.
	FShareAck = "share-ack"
	// FShareState: an observation of a share partition's start offset after the final drain.
	FShareState = "share-state"
)

// IsShare reports whether f is a share group op.
func IsShare(f string) bool {
	switch f {
	case FShareSubscribe, FSharePoll, FShareAck, FShareState:
		return true
	}
	return false
}

// AckType is how a share group member acknowledges a record it acquired.
type AckType string

// The acknowledgement types of KIP-932 (RENEW: KIP-1222).
const (
	AckAccept  AckType = "accept"  // processed; never delivered again
	AckRelease AckType = "release" // delivered again, its delivery count raised
	AckReject  AckType = "reject"  // unprocessable; never delivered again
	AckRenew   AckType = "renew"   // the lock extended; the record stays with the member
)

// AckTypes lists every acknowledgement type.
func AckTypes() []AckType { return []AckType{AckAccept, AckRelease, AckReject, AckRenew} }

// Terminal reports whether an applied acknowledgement of type a ends the record's delivery.
func (a AckType) Terminal() bool { return a == AckAccept || a == AckReject }

// Final reports whether an acknowledgement of type a ends the member's hold on the record
// (every type but renew).
func (a AckType) Final() bool { return a != AckRenew && slices.Contains(AckTypes(), a) }

// ParseAckType reads an acknowledgement type.
func ParseAckType(s string) (AckType, error) {
	var a AckType
	err := a.UnmarshalText([]byte(s))
	return a, err
}

// UnmarshalText refuses a type that is not one of AckTypes.
func (a *AckType) UnmarshalText(b []byte) error {
	t := AckType(b)
	if !slices.Contains(AckTypes(), t) {
		names := make([]string, 0, 4)
		for _, n := range AckTypes() {
			names = append(names, string(n))
		}
		return fmt.Errorf("acknowledgement type %q: want one of %s", b, strings.Join(names, ", "))
	}
	*a = t
	return nil
}

// ShareSubscribe is the payload of a share-subscribe op.
type ShareSubscribe struct {
	Group  string   `json:"group"`
	Topics []string `json:"topics"`
}

// ShareRecord is a record a share consumer acquired, with the broker's delivery count. (It does
// not embed Record: Record's UnmarshalJSON would be promoted and drop the count.)
type ShareRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    *int64 `json:"offset"`
	Key       string `json:"key,omitempty"`
	Value     string `json:"value"`
	Delivery  int32  `json:"delivery"`
}

// SharedRecord is r with the delivery count d.
func SharedRecord(r Record, d int32) ShareRecord {
	return ShareRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Delivery: d}
}

// SharePoll is the payload of a share-poll op: the invoke's names the group; the ok's holds the
// records acquired, in the order the client returned them.
type SharePoll struct {
	Group   string        `json:"group"`
	Records []ShareRecord `json:"records,omitempty"`
}

// ShareAckEntry is one record's acknowledgement.
type ShareAckEntry struct {
	Offset int64   `json:"offset"`
	Type   AckType `json:"type"`
}

// ShareAck is the payload of a share-ack op: a member's acknowledgements of one partition,
// committed together. ok: the broker applied them; fail: it certainly did not; info: unknown.
type ShareAck struct {
	Group     string          `json:"group"`
	Topic     string          `json:"topic"`
	Partition int32           `json:"partition"`
	Acks      []ShareAckEntry `json:"acks"`
}

// ShareState is the payload of a share-state op: the share partition start offset the group's
// state held once the final drain was done (the ok's StartOffset; nil on the invoke).
type ShareState struct {
	Group       string `json:"group"`
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	StartOffset *int64 `json:"start_offset,omitempty"`
}

// ParseSharePoll reads a share-poll op's payload. Every record states its partition and offset
// and a delivery count of 1 or more.
func ParseSharePoll(raw json.RawMessage) (SharePoll, error) {
	var p SharePoll
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("share-poll payload: %w", err)
	}
	for _, r := range p.Records {
		if r.Offset == nil || *r.Offset < 0 || r.Partition < 0 {
			return p, fmt.Errorf("share-poll payload: record %q of %s has no offset: an acquired record states its partition and offset", r.Value, r.Topic)
		}
		if r.Delivery < 1 {
			return p, fmt.Errorf("share-poll payload: record at %s offset %d has delivery count %d: the broker counts from 1", PartitionName(r.Topic, r.Partition), *r.Offset, r.Delivery)
		}
	}
	return p, nil
}

// ParseShareAck reads a share-ack op's payload.
func ParseShareAck(raw json.RawMessage) (ShareAck, error) {
	var a ShareAck
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("share-ack payload: %w", err)
	}
	if a.Topic == "" || a.Partition < 0 {
		return a, fmt.Errorf("share-ack payload: it names no partition: a commit acknowledges one partition's records")
	}
	return a, nil
}

// ParseShareState reads a share-state op's payload.
func ParseShareState(raw json.RawMessage) (ShareState, error) {
	var s ShareState
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("share-state payload: %w", err)
	}
	if s.Topic == "" || s.Partition < 0 {
		return s, fmt.Errorf("share-state payload: it names no partition")
	}
	return s, nil
}

// ShareConfig is what a run's share group ran with, as the header states it: the checker
// judges lock validity and the delivery limit by it.
type ShareConfig struct {
	Group  string   `json:"group"`
	Topics []string `json:"topics"`
	// LockMS is the acquisition lock duration (group.share.record.lock.duration.ms, or the
	// group's share.record.lock.duration.ms).
	LockMS int64 `json:"lock_ms"`
	// DeliveryLimit is the delivery count at which a record is archived
	// (group.share.delivery.count.limit, or the group's share.delivery.count.limit).
	DeliveryLimit int32 `json:"delivery_limit"`
}
