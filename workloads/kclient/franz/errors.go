// Package franz is the twmb/franz-go client behind Verity's client seam (package kclient).
package franz

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// SendContext is what ClassifySend needs to know besides the error: what the
// franz-go producer saw of the record while the client had it.
type SendContext struct {
	// AcksAll: the producer waits for the ISR (acks=all / -1).
	AcksAll bool
	// Buffered: franz-go put the record into a batch (HookProduceRecordPartitioned). A record
	// it failed before that was never sent.
	Buffered bool
	// Head: no earlier record of the record's partition was unanswered when it was handed
	// over, so from then on its batch was the partition's first, and an error franz-go gives
	// the partition's first batch is about the record's.
	Head bool
	// Writes are the produce requests the client wrote, to any broker, from the hand-over to
	// the answer (HookBrokerWrite, which franz-go calls after each write and before it reads
	// the answer). 0: no request carried the record; at most 1: it went out at most once.
	Writes int64
}

// SendTable is where Verity decides what a failed franz-go produce means, with the
// principle of sarama's SendTable: fail only when the record was certainly not written, info when
// it may have been (the default for anything not listed). franz-go needs more care than sarama:
//
//   - it retries a batch until RecordRetries or RecordDeliveryTimeout and returns only how the
//     batch ended; an earlier attempt may have been appended. kgo.Record carries no attempt
//     count, so the adapter counts the produce requests the whole client writes while the
//     record is in it: at most one means the record went out at most once;
//   - it fails every buffered batch of a partition with the error that ended the first one
//     (failAllRecords), batches already in flight included, so an error is about a record's
//     batch only when that batch was its partition's first (SendContext.Head);
//   - it fails batches with errors from metadata loads too (a leader not available), even
//     while a non-idempotent batch is in flight, so such codes prove nothing about the
//     record's requests, and a broker answer counts only as franz-go passes it on: the bare
//     *kerr.Error, not wrapped in an error of its own.
//
// The rows read as follows. Once, when set, is the outcome of a broker answer the error can only
// be (Kafka never sends the code in a metadata response, and franz-go fails batches with it
// only from produce responses) when that batch went out at most once; unset, franz-go can also
// fail a record with the error for another reason (a metadata load, a limit of its own), which
// says nothing of what its requests did. Deterministic errors prove the record unwritten only
// when its batch is the one the error is about (SendContext.Head). Idle errors are
// franz-go's own verdicts, which it gives a partition's first batch only while no request
// carries it.
//
// A record franz-go failed before buffering it (a full buffer with TryProduce, a cancelled wait
// in Produce, a record too large for a batch) is fail whatever the error. Connection errors,
// kgo.ErrClientClosed (which also fails batches in flight) and everything unlisted are info.
func SendTable() []kclient.SendRule {
	rows := kclient.BrokerRules(kerr.ErrorForCode)
	for i := range rows {
		if rows[i].Deterministic {
			rows[i].Once, rows[i].OnceAcksAll = "", "" // decided by Head, whatever the attempts
		}
	}
	return append(rows, []kclient.SendRule{
		{Err: kerr.LeaderNotAvailable, Name: "LEADER_NOT_AVAILABLE",
			Why: "also a metadata load error, with which franz-go fails a partition's batches even while one is in flight (without idempotence)"},
		{Err: kerr.UnknownTopicOrPartition, Name: "UNKNOWN_TOPIC_OR_PARTITION",
			Why: "also a metadata load error (franz-go fails a partition's batches after UnknownTopicRetries of them), batches in flight included"},
		{Err: kerr.UnknownTopicID, Name: "UNKNOWN_TOPIC_ID",
			Why: "also a metadata load error, as UNKNOWN_TOPIC_OR_PARTITION"},
		{Err: kgo.ErrRecordTimeout, Name: "client: record timeout", Idle: true,
			Why: "RecordDeliveryTimeout passed; franz-go fails a partition's first batch so only between attempts, after any number of them"},
		{Err: kgo.ErrRecordRetries, Name: "client: record retries", Idle: true,
			Why: "RecordRetries attempts failed; franz-go fails a partition's first batch so only between attempts, after they all went out"},
		{Err: kgo.ErrAborting, Name: "client: aborting buffered records", Idle: true,
			Why: "AbortBufferedRecords; franz-go fails a partition's first batch so only between attempts"},
		{Err: context.Canceled, Name: "client: context canceled", Idle: true,
			Why: "the record's context ended; franz-go fails a partition's first batch so only between attempts"},
		{Err: context.DeadlineExceeded, Name: "client: context deadline exceeded", Idle: true,
			Why: "the record's context ended; franz-go fails a partition's first batch so only between attempts"},
		{Err: kgo.ErrMaxBuffered, Name: "client: max buffered", Idle: true,
			Why: "the client was full and would not wait (TryProduce, manual flushing): the record was never buffered"},
		{Err: kgo.ErrClientClosed, Name: "client: client closed",
			Why: "the client closed; franz-go fails every buffered record with it, those in flight too"},
		{Match: kclient.IsNetworkError, Name: "network error or timeout",
			Why: "the connection failed or timed out after the request may have reached the broker"},
	}...)
}

// sendTable is SendTable built once: ClassifySend runs on every
// failed send.
var sendTable = SendTable()

// ClassifySend decides the outcome of a franz-go send that ended with err, by
// SendTable.
func ClassifySend(err error, sc SendContext) kclient.Outcome {
	if err == nil {
		return kclient.Outcome{Type: history.OK}
	}
	if !sc.Buffered {
		return kclient.Outcome{Type: history.Fail, Rule: "client: never buffered",
			Why: "franz-go failed the record before it joined a batch: no request carried it"}
	}
	for _, r := range sendTable {
		if !r.Matches(err) {
			continue
		}
		o := kclient.Outcome{Type: history.Info, Rule: r.Name, Why: r.Why}
		once := r.Once
		if sc.AcksAll && r.OnceAcksAll != "" {
			once = r.OnceAcksAll
		}
		switch {
		case r.Deterministic && sc.Head:
			o.Type = history.Fail
		case (r.Deterministic || once != "") && !sc.Head:
			o.Why = "franz-go fails every batch of a partition with its first batch's error, and this record's batch was not the first: it may have been in flight (" + r.Why + ")"
		case once != "" && sc.Writes <= 1 && err == r.Err:
			o.Type = once
		case once != "" && err != r.Err:
			o.Why = "franz-go wrapped the error: it did not come as the broker's answer about this batch (" + r.Why + ")"
		case once != "":
			o.Why = "the client wrote more than one produce request while the record was in it: an earlier attempt may have been appended (" + r.Why + ")"
		case r.Idle && sc.Head && sc.Writes == 0:
			o.Type = history.Fail
			o.Why = "no produce request was written while the record was in the client, and its batch was its partition's first: nothing carried it (" + r.Why + ")"
		case r.Idle:
			o.Why = "the record may have gone out before franz-go gave up on it (" + r.Why + ")"
		}
		return o
	}
	return kclient.Unlisted()
}

// ErrorText is the history's "error" text for an error that is or wraps a *kerr.Error: franz-go's
// message, which names the broker error with Kafka's protocol name, marked as the broker's; false
// for any other error.
func ErrorText(err error) (string, bool) {
	ke, ok := errors.AsType[*kerr.Error](err)
	if !ok {
		return "", false
	}
	if text := err.Error(); !strings.HasPrefix(text, ke.Message) {
		return fmt.Sprintf("%s (kafka server: %s)", text, ke.Message), true
	}
	return "kafka server: " + err.Error(), true
}
