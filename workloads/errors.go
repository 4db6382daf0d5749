package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// SendErrorRule is one row of the send-error table: what an error that a produce ends with says
// about whether its record was written.
type SendErrorRule struct {
	// Err is matched with errors.Is (the client's value: a sarama.KError, a *kerr.Error, a
	// sentinel). Nil rows match by
	// Match instead.
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
	// Idle (franz-go's table only) errors are the client's own verdicts (timeouts, retry
	// limits, cancellation), given a partition's first batch only while no request carries it:
	// when no produce request at all was written while the record was in the client, and its
	// batch was the first, nothing carried it.
	Idle bool
	// Why says, for the reader of this table and of a history, why the outcome follows.
	Why string
}

// SendErrorTable is the one place where Verity decides what a failed produce means. A send
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
func SendErrorTable() []SendErrorRule {
	rows := brokerAnswers()
	for i := range rows {
		rows[i].Err = sarama.KError(rows[i].Err.(*kerr.Error).Code)
	}
	return append(rows, []SendErrorRule{
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
		{Match: isNetworkError, Name: "network error or timeout", Once: history.Info,
			Why: "the connection failed or timed out after the request may have reached the broker"},
	}...)
}

// brokerAnswers are kclient.BrokerAnswers as rows matched by Kafka's error code: Err is the
// code's franz-go value (kerr), which each client's table turns into its own.
func brokerAnswers() []SendErrorRule {
	var rows []SendErrorRule
	for _, a := range kclient.BrokerAnswers() {
		rows = append(rows, SendErrorRule{Err: kerr.ErrorForCode(a.Code), Name: a.Name, Once: a.Once, OnceAcksAll: a.OnceAcksAll,
			Deterministic: a.Deterministic, Why: a.Why})
	}
	return rows
}

// Outcome is a classified send result.
type Outcome = kclient.Outcome

// SendContext is what ClassifySend needs to know besides the error.
type SendContext struct {
	// AcksAll: the producer waits for the ISR (acks=all / -1).
	AcksAll bool
	// Once: the record went to the brokers at most once (no retry happened while it was in
	// flight, or retries are off).
	Once bool
}

// sendErrorTable is SendErrorTable built once: ClassifySend runs on every failed send, and a
// fault fails them in bursts.
var sendErrorTable = SendErrorTable()

// ClassifySend decides the outcome of a send that ended with err, by SendErrorTable.
func ClassifySend(err error, sc SendContext) Outcome {
	if err == nil {
		return Outcome{Type: history.OK}
	}
	for _, r := range sendErrorTable {
		if !r.matches(err) {
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
		return Outcome{Type: t, Rule: r.Name, Why: why}
	}
	return Outcome{Type: history.Info, Why: "an error this table does not list: the record may have been written"}
}

func (r SendErrorRule) matches(err error) bool {
	if r.Match != nil {
		return r.Match(err)
	}
	return errors.Is(err, r.Err)
}

func isConfigurationError(err error) bool {
	var ce sarama.ConfigurationError
	return errors.As(err, &ce)
}

func isNetworkError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, net.ErrClosed)
}

// ErrorText is the history's "error" text for err: the client's message, with Kafka's protocol
// name of a broker error put first (e.g. "kafka server: NOT_ENOUGH_REPLICAS: Messages are
// rejected since …"), so that the history says which error it was in the words the Kafka
// documents use, whichever client met it.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		// franz-go's broker errors carry Kafka's protocol name already.
		if text := err.Error(); !strings.HasPrefix(text, ke.Message) {
			return fmt.Sprintf("%s (kafka server: %s)", text, ke.Message)
		}
		return "kafka server: " + err.Error()
	}
	var k sarama.KError
	if !errors.As(err, &k) {
		return err.Error()
	}
	name := kafkaErrorName(k)
	text := err.Error()
	if kt := k.Error(); text == kt {
		if strings.Contains(kt, "how did this happen") {
			// sarama has no message for newer codes (PRODUCER_FENCED is 90).
			return fmt.Sprintf("kafka server: %s (error code %d)", name, int16(k))
		}
		return "kafka server: " + name + ": " + strings.TrimPrefix(kt, "kafka server: ")
	}
	return fmt.Sprintf("%s (%s)", text, name)
}

// kafkaErrorName is Kafka's protocol name of k, from the table where it lists k, else from a
// short list of the errors that workloads meet besides sends.
func kafkaErrorName(k sarama.KError) string {
	for _, r := range sendErrorTable {
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

// The transaction outcomes' texts (kclient says what each means).
const (
	txnAborted        = kclient.TxnAborted
	txnNotSent        = kclient.TxnNotSent
	txnAbortConfirmed = kclient.TxnAbortConfirmed
)
