package kclient

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/verity-kafka/verity/history"
)

// Outcome is a classified send result.
type Outcome struct {
	Type history.Type
	Rule string // the rule's Name, "" for ok and for errors no rule lists
	Why  string
}

// BrokerAnswer is what one produce-response error code says about the batch's append.
type BrokerAnswer struct {
	// Code is Kafka's protocol error code.
	Code int16
	// Name is Kafka's protocol name for it.
	Name string
	// Once is the outcome when the record went to the brokers at most once: Fail when that
	// attempt certainly appended nothing, Info when it may have.
	Once history.Type
	// OnceAcksAll, when set, replaces Once for acks=all producers. A broker answers some
	// errors either at once (nothing appended) or after the append, while it waited for the
	// followers; only acks=all waits.
	OnceAcksAll history.Type
	// Deterministic errors come from the record itself or from settings that no retry changes
	// (its size, the producer's configuration): every attempt met the same answer, so none of
	// them appended the record and Once holds even after retries.
	Deterministic bool
	// Why says, for the reader of a client's table and of a history, why the outcome follows.
	Why string
}

// BrokerAnswers are what the produce-response codes that clients pass on only as the broker's
// answer about a batch say about its append: Kafka's fact, the same whichever client carried the
// request. Each client's send table reads them through its own error values. Codes a client also
// uses for other things (franz-go fails batches with LEADER_NOT_AVAILABLE after a metadata load)
// belong in that client's table instead.
func BrokerAnswers() []BrokerAnswer {
	return []BrokerAnswer{
		{Code: 19, Name: "NOT_ENOUGH_REPLICAS", Once: history.Fail,
			Why: "the leader compares the ISR with min.insync.replicas before it appends, and refused the batch"},
		{Code: 20, Name: "NOT_ENOUGH_REPLICAS_AFTER_APPEND", Once: history.Info,
			Why: "the leader appended the batch, then the ISR shrank below min.insync.replicas: the record is in the leader's log and may survive"},
		{Code: 7, Name: "REQUEST_TIMED_OUT", Once: history.Info,
			Why: "the leader appended the batch but the followers did not confirm within the request timeout"},
		{Code: 6, Name: "NOT_LEADER_OR_FOLLOWER", Once: history.Fail, OnceAcksAll: history.Info,
			Why: "a broker that is not the leader appends nothing; but with acks=all the leader may have appended and then lost leadership while it waited for the followers"},
		{Code: 74, Name: "FENCED_LEADER_EPOCH", Once: history.Fail,
			Why: "the request named an old leader epoch and was refused before any append"},
		{Code: 56, Name: "KAFKA_STORAGE_ERROR", Once: history.Info,
			Why: "the log directory failed, possibly during the append"},
		{Code: 2, Name: "CORRUPT_MESSAGE", Once: history.Fail,
			Why: "the broker checks the CRC before it appends"},
		{Code: 10, Name: "MESSAGE_TOO_LARGE", Once: history.Fail, Deterministic: true,
			Why: "the batch exceeds the topic's max.message.bytes; every attempt is refused before the append"},
		{Code: 18, Name: "RECORD_LIST_TOO_LARGE", Once: history.Fail, Deterministic: true,
			Why: "the batch exceeds the segment size; refused before the append"},
		{Code: 87, Name: "INVALID_RECORD", Once: history.Fail, Deterministic: true,
			Why: "the broker validates records before it appends"},
		{Code: 32, Name: "INVALID_TIMESTAMP", Once: history.Fail, Deterministic: true,
			Why: "the timestamp is outside message.timestamp.*.max.ms; refused before the append"},
		{Code: 21, Name: "INVALID_REQUIRED_ACKS", Once: history.Fail, Deterministic: true,
			Why: "invalid producer configuration; refused before the append"},
		{Code: 76, Name: "UNSUPPORTED_COMPRESSION_TYPE", Once: history.Fail, Deterministic: true,
			Why: "invalid producer configuration; refused before the append"},
		{Code: 29, Name: "TOPIC_AUTHORIZATION_FAILED", Once: history.Fail, Deterministic: true,
			Why: "not authorised; refused before the append"},
		{Code: 31, Name: "CLUSTER_AUTHORIZATION_FAILED", Once: history.Fail, Deterministic: true,
			Why: "not authorised (to write idempotently); refused before the append"},
		{Code: 17, Name: "INVALID_TOPIC_EXCEPTION", Once: history.Fail, Deterministic: true,
			Why: "the topic name is invalid or internal; refused before the append"},
		{Code: 35, Name: "UNSUPPORTED_VERSION", Once: history.Fail, Deterministic: true,
			Why: "the broker does not speak the request's version; nothing appended"},
		{Code: 45, Name: "OUT_OF_ORDER_SEQUENCE_NUMBER", Once: history.Fail,
			Why: "the idempotent producer's sequence has a gap at the leader, which refused this batch"},
		{Code: 47, Name: "INVALID_PRODUCER_EPOCH", Once: history.Fail,
			Why: "a newer epoch of this producer id exists (fenced); the batch was refused"},
		{Code: 59, Name: "UNKNOWN_PRODUCER_ID", Once: history.Fail,
			Why: "the leader has no state for this producer id and refused the batch"},
	}
}

// SendRule is one row of a client's send table: what an error that a produce ends with says
// about whether its record was written.
type SendRule struct {
	// Err is matched with errors.Is (the client's own value for the error: a broker error, a
	// sentinel). Nil rows match by Match instead.
	Err error
	// Match, when set, decides instead of Err (for error types rather than values).
	Match func(error) bool
	// Name is how the error is known: Kafka's protocol name for broker errors.
	Name string
	// Once is the outcome when the record went to the brokers at most once: Fail when that
	// attempt certainly appended nothing, Info when it may have.
	Once history.Type
	// OnceAcksAll, when set, replaces Once for acks=all producers. A broker answers some
	// errors either at once (nothing appended) or after the append, while it waited for the
	// followers; only acks=all waits.
	OnceAcksAll history.Type
	// Deterministic errors come from the record itself or from settings that no retry
	// changes (its size, the producer's configuration): every attempt met the same answer, so
	// none of them appended the record and Once holds even after retries.
	Deterministic bool
	// Idle errors are the client's own verdicts (timeouts, retry
	// limits, cancellation), given a partition's first batch only while no request carries it:
	// when no produce request at all was written while the record was in the client, and its
	// batch was the first, nothing carried it.
	Idle bool
	// Why says, for the reader of this table and of a history, why the outcome follows.
	Why string
}

// Matches says whether the row is about err.
func (r SendRule) Matches(err error) bool {
	if r.Match != nil {
		return r.Match(err)
	}
	return errors.Is(err, r.Err)
}

// BrokerRules are BrokerAnswers as rows of a client's table: errOf gives the client's own error
// value for a Kafka error code.
func BrokerRules(errOf func(code int16) error) []SendRule {
	var rows []SendRule
	for _, a := range BrokerAnswers() {
		rows = append(rows, SendRule{Err: errOf(a.Code), Name: a.Name, Once: a.Once, OnceAcksAll: a.OnceAcksAll,
			Deterministic: a.Deterministic, Why: a.Why})
	}
	return rows
}

// Unlisted is the outcome of a send that ended with an error no row lists.
func Unlisted() Outcome {
	return Outcome{Type: history.Info, Why: "an error this table does not list: the record may have been written"}
}

// IsNetworkError says whether err is a broken or timed-out connection: the request may have
// reached the broker, whichever client sent it.
func IsNetworkError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, net.ErrClosed)
}
