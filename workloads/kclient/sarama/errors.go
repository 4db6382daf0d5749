// Package sarama is the IBM/sarama client behind Verity's client seam (package kclient).
package sarama

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// SendTable is where Verity decides what a failed sarama produce means. A send
// completes:
//
//   - ok when the broker acknowledged it (acks=0: when the client wrote it to the socket);
//   - fail only when the record was certainly not written;
//   - info when it may or may not have been (the default for anything not listed).
//
// "Certainly" needs care, because sarama retries a failed batch (Producer.Retry.Max) and
// returns only the last attempt's error: an earlier attempt may have timed out after the leader
// appended it. So a row's Once outcome holds only when the record went out at most once, or
// when the error is Deterministic. The producer workload knows whether any retry happened
// while a record was in flight: it counts sarama's calls of Producer.Retry.BackoffFunc, which
// sarama makes before every retry (see sendAttempts). Errors that sarama itself retries
// (NOT_ENOUGH_REPLICAS among them) therefore end as fail only with Retry.Max = 0 (which sarama
// allows for non-idempotent producers only); after retries they are info, and the checker counts
// them as unknown, never as lost.
//
// Client-side errors that stop a record before it is sent (a configuration error, a record
// larger than Producer.MaxMessageBytes, a transaction that is not in progress) are fail.
// Connection errors and timeouts are info: the request may have reached the broker.
func SendTable() []kclient.SendRule {
	rows := kclient.BrokerRules(func(code int16) error { return sarama.KError(code) })
	return append(rows, []kclient.SendRule{
		{Err: sarama.ErrLeaderNotAvailable, Name: "LEADER_NOT_AVAILABLE", Once: history.Fail,
			Why: "no leader: the broker refused the batch before any append"},
		{Err: sarama.ErrUnknownTopicOrPartition, Name: "UNKNOWN_TOPIC_OR_PARTITION", Once: history.Fail,
			Why: "the broker does not host the partition and appended nothing"},
		{Err: sarama.ErrTransactionalIDAuthorizationFailed, Name: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", Once: history.Fail, Deterministic: true,
			Why: "not authorised; refused before the append"},
		{Err: sarama.ErrProducerFenced, Name: "PRODUCER_FENCED", Once: history.Fail,
			Why: "another instance initialised this transactional.id; the batch was refused"},
		{Err: sarama.ErrInvalidTxnState, Name: "INVALID_TXN_STATE", Once: history.Fail,
			Why: "the partition is not part of the transaction; refused before the append"},
		{Err: sarama.ErrTransactionNotReady, Name: "client: transaction not ready", Once: history.Fail, Deterministic: true,
			Why: "sarama refuses a transactional record outside a transaction before sending it"},
		{Err: sarama.ErrInvalidPartition, Name: "client: invalid partition", Once: history.Fail, Deterministic: true,
			Why: "the partitioner chose no valid partition; nothing was sent"},
		{Match: isConfigurationError, Name: "client: configuration error", Once: history.Fail, Deterministic: true,
			Why: "sarama refused the record before sending it (configuration, or larger than Producer.MaxMessageBytes)"},
		{Err: sarama.ErrShuttingDown, Name: "client: shutting down", Once: history.Info,
			Why: "the producer closed while the record was being retried: an earlier attempt may have been appended"},
		{Err: sarama.ErrIncompleteResponse, Name: "client: incomplete response", Once: history.Info,
			Why: "the broker answered without this partition: the append may have happened"},
		{Err: sarama.ErrOutOfBrokers, Name: "client: out of brokers", Once: history.Info,
			Why: "no broker answered; the request may have reached one before the connection failed"},
		{Err: sarama.ErrNotConnected, Name: "client: not connected", Once: history.Info,
			Why: "the connection broke; the request may have reached the broker"},
		{Match: kclient.IsNetworkError, Name: "network error or timeout", Once: history.Info,
			Why: "the connection failed or timed out after the request may have reached the broker"},
	}...)
}

// SendContext is what ClassifySend needs to know besides the error.
type SendContext struct {
	// AcksAll: the producer waits for the ISR (acks=all / -1).
	AcksAll bool
	// Once: the record went to the brokers at most once (no retry happened while it was in
	// flight, or retries are off).
	Once bool
}

// sendTable is SendTable built once: ClassifySend runs on every failed send, and a
// fault fails them in bursts.
var sendTable = SendTable()

// ClassifySend decides the outcome of a send that ended with err, by SendTable.
func ClassifySend(err error, sc SendContext) kclient.Outcome {
	if err == nil {
		return kclient.Outcome{Type: history.OK}
	}
	for _, r := range sendTable {
		if !r.Matches(err) {
			continue
		}
		t := r.Once
		if sc.AcksAll && r.OnceAcksAll != "" {
			t = r.OnceAcksAll
		}
		why := r.Why
		if t == history.Fail && !sc.Once && !r.Deterministic {
			t = history.Info
			why = "sarama retried the record before this error, and an earlier attempt may have been appended (" + r.Why + ")"
		}
		return kclient.Outcome{Type: t, Rule: r.Name, Why: why}
	}
	return kclient.Unlisted()
}

func isConfigurationError(err error) bool {
	var ce sarama.ConfigurationError
	return errors.As(err, &ce)
}

// ErrorText is the history's "error" text for an error that is or wraps a sarama.KError: the
// client's message with Kafka's protocol name of the broker error put first (e.g. "kafka server:
// NOT_ENOUGH_REPLICAS: Messages are rejected since …"); false for any other error.
func ErrorText(err error) (string, bool) {
	var k sarama.KError
	if !errors.As(err, &k) {
		return "", false
	}
	name := ErrorName(k)
	text := err.Error()
	if kt := k.Error(); text == kt {
		if strings.Contains(kt, "how did this happen") {
			// sarama has no message for newer codes (PRODUCER_FENCED is 90).
			return fmt.Sprintf("kafka server: %s (error code %d)", name, int16(k)), true
		}
		return "kafka server: " + name + ": " + strings.TrimPrefix(kt, "kafka server: "), true
	}
	return fmt.Sprintf("%s (%s)", text, name), true
}

// ErrorName is Kafka's protocol name of k, from the table where it lists k, else from a
// short list of the errors that workloads meet besides sends.
func ErrorName(k sarama.KError) string {
	for _, r := range sendTable {
		if r.Err == k {
			return r.Name
		}
	}
	switch k {
	case sarama.ErrConcurrentTransactions:
		return "CONCURRENT_TRANSACTIONS"
	case sarama.ErrInvalidProducerIDMapping:
		return "INVALID_PRODUCER_ID_MAPPING"
	case sarama.ErrIllegalGeneration:
		return "ILLEGAL_GENERATION"
	case sarama.ErrUnknownMemberId:
		return "UNKNOWN_MEMBER_ID"
	case sarama.ErrRebalanceInProgress:
		return "REBALANCE_IN_PROGRESS"
	case sarama.ErrNotCoordinatorForConsumer:
		return "NOT_COORDINATOR"
	case sarama.ErrConsumerCoordinatorNotAvailable:
		return "COORDINATOR_NOT_AVAILABLE"
	case sarama.ErrOffsetsLoadInProgress:
		return "COORDINATOR_LOAD_IN_PROGRESS"
	case sarama.ErrOffsetOutOfRange:
		return "OFFSET_OUT_OF_RANGE"
	case sarama.ErrDuplicateSequenceNumber:
		return "DUPLICATE_SEQUENCE_NUMBER"
	case sarama.ErrUnstableOffsetCommit:
		return "UNSTABLE_OFFSET_COMMIT"
	case sarama.ErrFencedInstancedId:
		return "FENCED_INSTANCE_ID"
	}
	return "KAFKA_ERROR_" + strconv.Itoa(int(k))
}
