// Package remote is the client seam (package kclient) spoken over a byte stream: Verity drives a
// client that runs as a program of its own — Kafka's Java client, a user's wrapper, a Go client at
// a pinned version — through its standard input and output, one JSON message per line. The
// protocol is docs/client-protocol.md; docs/schema/client-protocol.schema.json states every
// message. Client is Verity's side; Serve is a program's side for any kclient.Client written in
// Go.
package remote

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// Version is the protocol version this package speaks.
const Version = 1

// Op names a request.
type Op string

// The requests, in the order docs/client-protocol.md describes them.
const (
	OpHello        Op = "hello"
	OpPartitions   Op = "partitions"
	OpTxnProtocol  Op = "txn_protocol"
	OpProducerOpen Op = "producer.open"
	OpProducerSend Op = "producer.send"
	OpTxnOpen      Op = "txn.open"
	OpBegin        Op = "txn.begin"
	OpTxnSend      Op = "txn.send"
	OpCommit       Op = "txn.commit"
	OpAbort        Op = "txn.abort"
	OpReady        Op = "txn.ready"
	OpConsumerOpen Op = "consumer.open"
	OpConsumerPoll Op = "consumer.poll"
	OpRecorded     Op = "consumer.recorded"
	OpSeek         Op = "consumer.seek"
	OpMemberOpen   Op = "member.open"
	OpMemberPoll   Op = "member.poll"
	OpAddOffsets   Op = "member.add_offsets"
	OpRewind       Op = "member.rewind"
	OpClose        Op = "close"

	// The share-group requests (KIP-932), an addition to version 1: a program without a share
	// consumer answers them unknown_op, and Verity says it has none (ErrNoShare).
	OpShareConfigure    Op = "share.configure"
	OpShareStartOffsets Op = "share.start_offsets"
	OpShareOpen         Op = "share.open"
	OpSharePoll         Op = "share.poll"
	OpShareAck          Op = "share.ack"
	OpShareCommit       Op = "share.commit"
)

// OpInfo is what the protocol says of a request.
type OpInfo struct {
	Op Op
	// Instance: the request names an instance (handle) that an open made.
	Instance bool
	// Opens: the request makes the instance its handle names.
	Opens bool
	// NoReply: the program answers nothing (producer.send: the record's answer comes as an
	// event; consumer.recorded).
	NoReply bool
}

// Ops lists every request.
func Ops() []OpInfo {
	return []OpInfo{
		{Op: OpHello},
		{Op: OpPartitions},
		{Op: OpTxnProtocol},
		{Op: OpProducerOpen, Instance: true, Opens: true},
		{Op: OpProducerSend, Instance: true, NoReply: true},
		{Op: OpTxnOpen, Instance: true, Opens: true},
		{Op: OpBegin, Instance: true},
		{Op: OpTxnSend, Instance: true},
		{Op: OpCommit, Instance: true},
		{Op: OpAbort, Instance: true},
		{Op: OpReady, Instance: true},
		{Op: OpConsumerOpen, Instance: true, Opens: true},
		{Op: OpConsumerPoll, Instance: true},
		{Op: OpRecorded, Instance: true, NoReply: true},
		{Op: OpSeek, Instance: true},
		{Op: OpMemberOpen, Instance: true, Opens: true},
		{Op: OpMemberPoll, Instance: true},
		{Op: OpAddOffsets, Instance: true},
		{Op: OpRewind, Instance: true},
		{Op: OpClose, Instance: true},
		{Op: OpShareConfigure},
		{Op: OpShareStartOffsets},
		{Op: OpShareOpen, Instance: true, Opens: true},
		{Op: OpSharePoll, Instance: true},
		{Op: OpShareAck, Instance: true},
		{Op: OpShareCommit, Instance: true},
	}
}

// LookupOp is what the protocol says of op.
func LookupOp(op Op) (OpInfo, bool) {
	for _, o := range Ops() {
		if o.Op == op {
			return o, true
		}
	}
	return OpInfo{}, false
}

// Request is a line Verity writes: {"v":1,"id":7,"op":"txn.commit","handle":"t3","args":{…}}.
type Request struct {
	V      int             `json:"v"`
	ID     uint64          `json:"id,omitempty"`
	Op     Op              `json:"op"`
	Handle string          `json:"handle,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
}

// Message is a line the program writes: a reply to request ID (Result, or Error, or both for
// txn.send, whose result lists the records acknowledged before the error, and for share.poll,
// whose result lists the records acquired before the error), or, with Event set,
// something no request asked for: a producer's answers.
type Message struct {
	V      int             `json:"v"`
	ID     uint64          `json:"id,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
	// Event is "answers": Answers for the producer Handle, and Retries, the producer's
	// retrying so far as the client counts it.
	Event   string   `json:"event,omitempty"`
	Handle  string   `json:"handle,omitempty"`
	Answers []Answer `json:"answers,omitempty"`
	Retries int64    `json:"retries,omitempty"`
}

// EventAnswers is the one event of version 1.
const EventAnswers = "answers"

// Error is an error on the wire: Kafka's protocol name when the broker answered with one (the
// client's own name for its errors otherwise: a Java exception's simple name, a Go error's
// text), its code when Kafka has one, and the client's message.
type Error struct {
	Name string `json:"name"`
	Code *int16 `json:"code,omitempty"`
	Text string `json:"text"`
	// Permanent: an open that no retry changes (a configuration the client refuses).
	Permanent bool `json:"permanent,omitempty"`
	// Replace: the instance can no longer be used; Verity replaces it.
	Replace bool `json:"replace,omitempty"`
}

func (e *Error) Error() string { return e.Text }

// Duration is a duration on the wire: text, a decimal number and a unit ("250ms", "1.5s",
// "30s", "2m"); Verity writes whole milliseconds.
type Duration time.Duration

func (d Duration) MarshalText() ([]byte, error) {
	return []byte(strconv.FormatInt(time.Duration(d).Milliseconds(), 10) + "ms"), nil
}

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseDuration reads a duration as the protocol writes it: digits, an optional fraction, and
// one unit of ms, s, m or h.
func ParseDuration(s string) (time.Duration, error) {
	for _, unit := range []string{"ms", "s", "m", "h"} {
		num, ok := strings.CutSuffix(s, unit)
		if !ok || num == "" || strings.ContainsAny(num, "+-eE") {
			continue
		}
		if unit == "s" && strings.HasSuffix(num, "m") {
			continue // "ms" read as "s"
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			break
		}
		scale := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
		return time.Duration(f * float64(scale)), nil
	}
	return 0, fmt.Errorf("duration %q: want a number and a unit of ms, s, m or h (\"250ms\", \"1.5s\")", s)
}

// Record is a record on the wire; Offset is set for a record read or acknowledged.
type Record struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Key       string `json:"key,omitempty"`
	Value     string `json:"value"`
	Offset    *int64 `json:"offset,omitempty"`
}

func wireRecord(r history.Record) Record {
	return Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Offset: r.Offset}
}

func (r Record) history() history.Record {
	return history.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Offset: r.Offset}
}

// HelloArgs opens the conversation: the versions Verity speaks and the cluster.
type HelloArgs struct {
	Versions []int    `json:"versions"`
	Brokers  []string `json:"brokers"`
	// TxnProtocolCap caps the transaction protocol ("v1"; "": the best the client and the
	// cluster support).
	TxnProtocolCap kafkaconf.TxnProtocol `json:"txn_protocol_cap,omitempty"`
}

// HelloResult is the version chosen and what the program is.
type HelloResult struct {
	Version int        `json:"version"`
	Client  ClientInfo `json:"client"`
}

// ClientInfo names the client behind the program, for the history's header.
type ClientInfo struct {
	// Name is the client's name in kafkaconf.Clients ("java").
	Name string `json:"name"`
	// Library is what the program links ("org.apache.kafka:kafka-clients",
	// "github.com/twmb/franz-go"), Version its version.
	Library string `json:"library"`
	Version string `json:"version"`
}

type PartitionsArgs struct {
	ClientID string   `json:"client_id"`
	Topics   []string `json:"topics"`
}

type PartitionsResult struct {
	Partitions map[string][]int32 `json:"partitions"`
}

type TxnProtocolResult struct {
	TxnProtocol kafkaconf.TxnProtocol `json:"txn_protocol"`
}

// Settings are a producer's resolved delivery settings.
type Settings struct {
	Acks        kafkaconf.Acks `json:"acks"`
	Idempotent  bool           `json:"idempotent"`
	MaxInFlight int            `json:"max_in_flight"`
	Retries     int            `json:"retries"`
}

func wireSettings(p kafkaconf.Producer) Settings {
	return Settings{Acks: p.Acks, Idempotent: p.Idempotent, MaxInFlight: p.MaxInFlight, Retries: p.Retries}
}

func (s Settings) producer() kafkaconf.Producer {
	return kafkaconf.Producer{Acks: s.Acks, Idempotent: s.Idempotent, MaxInFlight: s.MaxInFlight, Retries: s.Retries}
}

// ProducerSpec is kclient.ProducerSpec on the wire.
type ProducerSpec struct {
	ClientID        string                `json:"client_id"`
	Settings        Settings              `json:"settings"`
	RetryBackoff    Duration              `json:"retry_backoff"`
	RequestTimeout  Duration              `json:"request_timeout"`
	DeliveryTimeout Duration              `json:"delivery_timeout"`
	Linger          Duration              `json:"linger"`
	BatchMessages   int                   `json:"batch_messages"`
	BatchBytes      int                   `json:"batch_bytes"`
	Compression     kafkaconf.Compression `json:"compression"`
	Topics          []string              `json:"topics"`
}

type ProducerOpenResult struct {
	Partitions map[string][]int32 `json:"partitions"`
	Warnings   []string           `json:"warnings,omitempty"`
}

// SendArgs hands the producer one record; its answer comes in an answers event with Tag.
type SendArgs struct {
	Tag    uint64 `json:"tag"`
	Record Record `json:"record"`
}

// Outcome is an answer's outcome by the client's own table.
type Outcome string

const (
	OutcomeOK   Outcome = "ok"
	OutcomeFail Outcome = "fail"
	OutcomeInfo Outcome = "info"
)

func wireOutcome(t history.Type) Outcome { return Outcome(t) }

func (o Outcome) history() (history.Type, error) {
	switch o {
	case OutcomeOK:
		return history.OK, nil
	case OutcomeFail:
		return history.Fail, nil
	case OutcomeInfo:
		return history.Info, nil
	}
	return "", fmt.Errorf("outcome %q: want ok, fail or info", string(o))
}

// Answer is a producer's answer for the record sent with Tag.
type Answer struct {
	Tag       uint64  `json:"tag"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Error     *Error  `json:"error,omitempty"`
	Outcome   Outcome `json:"outcome"`
	// Rule and Why say which row of the client's table classified an error, and why.
	Rule string `json:"rule,omitempty"`
	Why  string `json:"why,omitempty"`
}

// TxnSpec is kclient.TxnSpec on the wire.
type TxnSpec struct {
	ClientID       string   `json:"client_id"`
	TxnID          string   `json:"txn_id"`
	Settings       Settings `json:"settings"`
	Timeout        Duration `json:"timeout"`
	RequestTimeout Duration `json:"request_timeout"`
}

// TxnSendArgs writes Records in the current transaction; Within bounds the wait for their
// acknowledgements.
type TxnSendArgs struct {
	Records []Record `json:"records"`
	Within  Duration `json:"within"`
}

// TxnSendResult says, for each record in order, where it was acknowledged (null: not
// acknowledged); the reply's error is the first error.
type TxnSendResult struct {
	Acked []*Acked `json:"acked"`
}

type Acked struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// CommitResult is what is known of a commit's outcome, by the rules at kclient.TxnAborted.
type CommitResult struct {
	Outcome Outcome `json:"outcome"`
	Text    string  `json:"text,omitempty"`
}

type ReadyResult struct {
	Ready bool   `json:"ready"`
	Why   string `json:"why"`
}

// Position is where an assign-mode consumer resumes in a partition (Offset -1: the start).
type Position struct {
	Offset int64 `json:"offset"`
	Epoch  int32 `json:"epoch"`
}

// ConsumerSpec is kclient.ConsumerSpec on the wire. Assign maps a topic to its partitions, each
// named by its number as text.
type ConsumerSpec struct {
	ClientID   string              `json:"client_id"`
	Isolation  kafkaconf.Isolation `json:"isolation"`
	FromNewest bool                `json:"from_newest,omitempty"`
	Group      string              `json:"group,omitempty"`
	Topics     []string            `json:"topics,omitempty"`
	// GroupProtocol: "classic" or "consumer" (KIP-848); absent, classic.
	GroupProtocol kafkaconf.GroupProtocol        `json:"group_protocol,omitempty"`
	Assign        map[string]map[string]Position `json:"assign,omitempty"`
	// StorePositions: Verity keeps the group's positions (consumer.seek places what an
	// assignment adds); the consumer commits nothing.
	StorePositions bool `json:"store_positions,omitempty"`
	// MaxPollInterval is max.poll.interval.ms, for clients that have it; absent: the client's.
	MaxPollInterval *Duration `json:"max_poll_interval,omitempty"`
}

// byText keys a map by partition as the wire does: by each partition's number as text.
func byText[A, B any](m map[string]map[int32]A, f func(A) B) map[string]map[string]B {
	out := make(map[string]map[string]B, len(m))
	for t, ps := range m {
		out[t] = make(map[string]B, len(ps))
		for p, v := range ps {
			out[t][strconv.Itoa(int(p))] = f(v)
		}
	}
	return out
}

// byNumber undoes byText; field names the request's field in the error for a key that is no
// partition number.
func byNumber[A, B any](field string, m map[string]map[string]A, f func(A) B) (map[string]map[int32]B, error) {
	out := make(map[string]map[int32]B, len(m))
	for t, ps := range m {
		out[t] = make(map[int32]B, len(ps))
		for p, v := range ps {
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: partition %q of %s is not a number", field, p, t)
			}
			out[t][int32(n)] = f(v)
		}
	}
	return out, nil
}

// SeekArgs are the offsets (the next to read) of the partitions the assignments since the last
// consumer.seek added, by topic and partition number as text; a partition left out starts
// where a group with nothing committed starts.
type SeekArgs struct {
	Offsets map[string]map[string]int64 `json:"offsets"`
}

// PollArgs: at most Max records, waiting at most Wait (member.poll: no bound when absent).
type PollArgs struct {
	Max  int       `json:"max"`
	Wait *Duration `json:"wait,omitempty"`
}

// EventKind names an event of a poll.
type EventKind string

const (
	KindRecord   EventKind = "record"
	KindAssigned EventKind = "assigned"
	KindRevoked  EventKind = "revoked"
	KindDataLoss EventKind = "data_loss"
)

// Event is kclient.Event on the wire. Handle names a record for consumer.recorded.
type Event struct {
	Kind   EventKind `json:"kind"`
	Record *Record   `json:"record,omitempty"`
	Epoch  *int32    `json:"epoch,omitempty"`
	Claims *Claims   `json:"claims,omitempty"`
	Loss   *Loss     `json:"loss,omitempty"`
	Handle uint64    `json:"handle,omitempty"`
}

type Claims struct {
	Generation int32              `json:"generation"`
	Member     string             `json:"member"`
	Partitions map[string][]int32 `json:"partitions"`
}

type Loss struct {
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	Offset     int64  `json:"offset"`
	Epoch      int32  `json:"epoch"`
	ResetTo    int64  `json:"reset_to"`
	ResetEpoch int32  `json:"reset_epoch"`
}

type PollResult struct {
	Events []Event `json:"events"`
}

// RecordedArgs names the records, by their events' handles, that the history shows polled.
type RecordedArgs struct {
	Handles []uint64 `json:"handles"`
}

// MemberSpec is kclient.MemberSpec on the wire.
type MemberSpec struct {
	Txn              TxnSpec                 `json:"txn"`
	ConsumerClientID string                  `json:"consumer_client_id"`
	Group            string                  `json:"group"`
	Input            string                  `json:"input"`
	GroupProtocol    kafkaconf.GroupProtocol `json:"group_protocol,omitempty"`
	Isolation        kafkaconf.Isolation     `json:"isolation,omitempty"`
}

type AddOffsetsArgs struct {
	Records []Record `json:"records"`
}

type RewindArgs struct {
	Outcome Outcome `json:"outcome"`
}

// ShareGroupArgs is kclient.ShareGroupSettings on the wire, for share.configure: a field left
// out leaves the group's config as it is.
type ShareGroupArgs struct {
	ClientID      string             `json:"client_id"`
	Group         string             `json:"group"`
	Start         kclient.ShareStart `json:"start,omitempty"`
	LockDuration  *Duration          `json:"lock_duration,omitempty"`
	DeliveryLimit int                `json:"delivery_limit,omitempty"`
}

// ShareOffsetsArgs asks share.start_offsets for the start offsets of Group in Topics.
type ShareOffsetsArgs struct {
	ClientID string   `json:"client_id"`
	Group    string   `json:"group"`
	Topics   []string `json:"topics"`
}

// ShareOffsetsResult is each initialised partition's share-partition start offset, by topic and
// partition number as text.
type ShareOffsetsResult struct {
	Offsets map[string]map[string]int64 `json:"offsets"`
}

// ShareSpec is kclient.ShareConsumerSpec on the wire, for share.open.
type ShareSpec struct {
	ClientID   string   `json:"client_id"`
	Group      string   `json:"group"`
	Topics     []string `json:"topics"`
	MaxRecords int      `json:"max_records,omitempty"`
}

// Delivery is a record a share consumer acquired, with its offset, and the broker's count of
// its deliveries (1 the first time).
type Delivery struct {
	Record Record `json:"record"`
	Count  int    `json:"count"`
}

// SharePollResult is what one share.poll acquired, in the order the client returned it.
type SharePollResult struct {
	Deliveries []Delivery `json:"deliveries"`
}

// Place names a record the member holds.
type Place struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// ShareAckArgs marks Records with Type, for the next share.commit.
type ShareAckArgs struct {
	Type    kclient.AckType `json:"type"`
	Records []Place         `json:"records"`
}

// ShareCommitArgs: Within bounds the wait for the broker's answers (absent: the program's own
// bound).
type ShareCommitArgs struct {
	Within *Duration `json:"within,omitempty"`
}

// ShareCommitResult is one result per partition with acknowledgements, sorted by topic and
// partition.
type ShareCommitResult struct {
	Results []AckResult `json:"results"`
}

// AckResult is kclient.AckResult on the wire: Error with fail and info, never with ok.
type AckResult struct {
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Acks      []WireAck `json:"acks"`
	Outcome   Outcome   `json:"outcome"`
	Error     *Error    `json:"error,omitempty"`
}

// WireAck is one acknowledgement a result covers.
type WireAck struct {
	Offset int64           `json:"offset"`
	Type   kclient.AckType `json:"type"`
}
