package results

import (
	"strings"
	"sync"
)

// The classes ErrorClass gives an error that carries no Kafka error name (or one kafkaErrors
// counts under a class of these).
const (
	ClassNone              = "none given"
	ClassAborted           = "aborted"
	ClassCircuitBreaker    = "circuit breaker open"
	ClassTimeout           = "timeout"
	ClassConnectionRefused = "connection refused"
	ClassConnectionLost    = "connection lost"
	ClassFenced            = "fenced"
	ClassOther             = "other"
)

// kafkaError is one error as Kafka's clients name it.
type kafkaError struct {
	// Name is Kafka's protocol name of a broker error ("NOT_ENOUGH_REPLICAS"), which the Go
	// clients' texts carry; "" for an error only a client raises.
	Name string
	// Exception is the simple name of the Java client's exception class for it
	// ("NotEnoughReplicasException"); "" when the Java client has none of its own.
	Exception string
	// Class is what ErrorClass counts it as; "" means Name.
	Class string
}

// class is what ErrorClass counts e as.
func (e kafkaError) class() string {
	if e.Class != "" {
		return e.Class
	}
	return e.Name
}

// kafkaErrors is the one list of Kafka's error names that ErrorClass knows, so that an error
// counts as one class whichever client's words a history has for it. Its rows are the errors
// a producer, a transaction or a consumer meets under faults.
var kafkaErrors = []kafkaError{
	{Name: "NOT_ENOUGH_REPLICAS", Exception: "NotEnoughReplicasException"},
	{Name: "NOT_ENOUGH_REPLICAS_AFTER_APPEND", Exception: "NotEnoughReplicasAfterAppendException"},
	{Name: "NOT_LEADER_OR_FOLLOWER", Exception: "NotLeaderOrFollowerException"},
	// The same error (code 6) under its name before Kafka 2.6, which older clients still print.
	{Name: "NOT_LEADER_FOR_PARTITION", Exception: "NotLeaderForPartitionException", Class: "NOT_LEADER_OR_FOLLOWER"},
	{Name: "LEADER_NOT_AVAILABLE", Exception: "LeaderNotAvailableException"},
	{Name: "FENCED_LEADER_EPOCH", Exception: "FencedLeaderEpochException"},
	{Name: "UNKNOWN_LEADER_EPOCH", Exception: "UnknownLeaderEpochException"},
	{Name: "UNKNOWN_TOPIC_OR_PARTITION", Exception: "UnknownTopicOrPartitionException"},
	// The Java client raises TimeoutException both for this broker answer and for its own
	// timeouts (delivery.timeout.ms, max.block.ms), and the text seldom tells which: the
	// exception counts with the clients' own timeouts, below.
	{Name: "REQUEST_TIMED_OUT"},
	{Exception: "TimeoutException", Class: ClassTimeout},
	{Name: "NETWORK_EXCEPTION", Exception: "NetworkException", Class: ClassConnectionLost},
	{Exception: "DisconnectException", Class: ClassConnectionLost},
	{Name: "KAFKA_STORAGE_ERROR", Exception: "KafkaStorageException"},
	{Name: "CORRUPT_MESSAGE", Exception: "CorruptRecordException"},
	{Name: "MESSAGE_TOO_LARGE", Exception: "RecordTooLargeException"},
	{Name: "RECORD_LIST_TOO_LARGE", Exception: "RecordBatchTooLargeException"},
	{Name: "INVALID_RECORD", Exception: "InvalidRecordException"},
	{Name: "INVALID_TIMESTAMP", Exception: "InvalidTimestampException"},
	{Name: "INVALID_REQUIRED_ACKS", Exception: "InvalidRequiredAcksException"},
	{Name: "UNSUPPORTED_COMPRESSION_TYPE", Exception: "UnsupportedCompressionTypeException"},
	{Name: "UNSUPPORTED_VERSION", Exception: "UnsupportedVersionException"},
	{Name: "INVALID_TOPIC_EXCEPTION", Exception: "InvalidTopicException"},
	{Name: "TOPIC_AUTHORIZATION_FAILED", Exception: "TopicAuthorizationException"},
	{Name: "CLUSTER_AUTHORIZATION_FAILED", Exception: "ClusterAuthorizationException"},
	{Name: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", Exception: "TransactionalIdAuthorizationException"},
	{Name: "OUT_OF_ORDER_SEQUENCE_NUMBER", Exception: "OutOfOrderSequenceException"},
	{Name: "DUPLICATE_SEQUENCE_NUMBER", Exception: "DuplicateSequenceException"},
	{Name: "INVALID_PRODUCER_EPOCH", Exception: "InvalidProducerEpochException"},
	{Name: "UNKNOWN_PRODUCER_ID", Exception: "UnknownProducerIdException"},
	{Name: "PRODUCER_FENCED", Exception: "ProducerFencedException"},
	{Name: "INVALID_PRODUCER_ID_MAPPING", Exception: "InvalidPidMappingException"},
	{Name: "INVALID_TXN_STATE", Exception: "InvalidTxnStateException"},
	{Name: "CONCURRENT_TRANSACTIONS", Exception: "ConcurrentTransactionsException"},
	{Name: "TRANSACTION_COORDINATOR_FENCED", Exception: "TransactionCoordinatorFencedException"},
	{Name: "TRANSACTION_ABORTABLE", Exception: "TransactionAbortableException"},
	// The Java producer fails the records of an aborted transaction with this; Verity's
	// workloads complete an intended abort with the error "aborted".
	{Exception: "TransactionAbortedException", Class: ClassAborted},
	{Name: "COORDINATOR_NOT_AVAILABLE", Exception: "CoordinatorNotAvailableException"},
	{Name: "COORDINATOR_LOAD_IN_PROGRESS", Exception: "CoordinatorLoadInProgressException"},
	{Name: "NOT_COORDINATOR", Exception: "NotCoordinatorException"},
	{Name: "OFFSET_OUT_OF_RANGE", Exception: "OffsetOutOfRangeException"},
	{Name: "ILLEGAL_GENERATION", Exception: "IllegalGenerationException"},
	{Name: "UNKNOWN_MEMBER_ID", Exception: "UnknownMemberIdException"},
	{Name: "REBALANCE_IN_PROGRESS", Exception: "RebalanceInProgressException"},
	{Name: "UNKNOWN_SERVER_ERROR", Exception: "UnknownServerException"},
}

// kafkaErrorIndex finds a row of kafkaErrors by errorKey of any of its names; built the first
// time an error is classed, not at every start of the binary.
var kafkaErrorIndex = sync.OnceValue(func() map[string]*kafkaError {
	m := map[string]*kafkaError{}
	for i := range kafkaErrors {
		e := &kafkaErrors[i]
		for _, n := range []string{e.Name, e.Exception} {
			if n != "" {
				m[string(errorKey(nil, n))] = e
			}
		}
	}
	return m
})

// errorKey appends to dst the form in which the spellings of one error name agree:
// NOT_ENOUGH_REPLICAS, NotEnoughReplicas and NotEnoughReplicasException are all
// "notenoughreplicas".
func errorKey(dst []byte, name string) []byte {
	name = strings.TrimSuffix(name, "Exception")
	name = strings.TrimSuffix(name, "_EXCEPTION")
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '_':
		case 'A' <= c && c <= 'Z':
			dst = append(dst, c+'a'-'A')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// lookupError returns the row of kafkaErrors that name spells, if any.
func lookupError(name string) (*kafkaError, bool) {
	var buf [64]byte
	e, ok := kafkaErrorIndex()[string(errorKey(buf[:0], name))]
	return e, ok
}

// kafkaClass is the class of the Kafka error name that a Go client's text put in its place:
// the row's class when kafkaErrors lists it, else the name itself.
func kafkaClass(name string) string {
	if e, ok := lookupError(name); ok {
		return e.class()
	}
	return name
}

// ErrorClass names the error of an op's "error" text for counting: Kafka's protocol name of a
// broker error ("NOT_ENOUGH_REPLICAS"), however the text spells it, else a class of
// client-side failure (timeout, connection refused, connection lost, circuit breaker open, …),
// else "other". docs/history.md says what a text may carry.
func ErrorClass(text string) string {
	if text == "" {
		return ClassNone
	}
	// "kafka server: NOT_ENOUGH_REPLICAS: …" (the workloads' form), "… (kafka server:
	// REQUEST_TIMED_OUT)" (franz-go's), or "…: kafka server: Messages are rejected … (NOT_ENOUGH_REPLICAS)"
	// (a wrapped sarama error): Kafka's name is an upper-case token after "kafka server: " or in
	// the last parentheses.
	for rest := text; ; {
		_, after, ok := strings.Cut(rest, "kafka server: ")
		if !ok {
			break
		}
		if name := leadingErrorName(after); name != "" {
			return kafkaClass(name)
		}
		rest = after
	}
	if open := strings.LastIndexByte(text, '('); open >= 0 && strings.HasSuffix(strings.TrimSpace(text), ")") {
		inner := strings.TrimSuffix(strings.TrimSpace(text[open+1:]), ")")
		if name := leadingErrorName(inner); name == inner {
			return kafkaClass(name)
		}
	}
	// Any other client's words: a name kafkaErrors lists, anywhere in the text (the Java
	// client's "org.apache.kafka.common.errors.NotEnoughReplicasException: …", perhaps inside
	// an ExecutionException; a bare "NOT_ENOUGH_REPLICAS" or "NotEnoughReplicas").
	if e, ok := listedError(text); ok {
		return e.class()
	}
	low := strings.ToLower(text)
	switch {
	case strings.Contains(low, "aborted"):
		return ClassAborted
	case strings.Contains(low, "circuit breaker"):
		// sarama's producer refuses sends at once after a run of failures.
		return ClassCircuitBreaker
	case strings.Contains(low, "deadline") || strings.Contains(low, "timed out") || strings.Contains(low, "timeout"):
		return ClassTimeout
	case strings.Contains(low, "connection refused"):
		return ClassConnectionRefused
	case strings.Contains(low, "eof") || strings.Contains(low, "reset") || strings.Contains(low, "broken pipe") || strings.Contains(low, "closed") ||
		strings.Contains(low, "not connected"):
		return ClassConnectionLost
	case strings.Contains(low, "fenced"):
		return ClassFenced
	}
	return ClassOther
}

// listedError finds the first word of text that names an error of kafkaErrors. A word is a
// run of letters, digits, '_', '.' and '$'; what counts is its last part after a '.' or '$'
// (a Java class's simple name), and only when it is written as a name is: UPPER_SNAKE,
// CamelCase, or ending in "Exception" — so that plain words ("timeout", "Network") do not.
func listedError(text string) (*kafkaError, bool) {
	for i := 0; i < len(text); {
		if !wordByte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && wordByte(text[j]) {
			j++
		}
		word := strings.TrimRight(text[i:j], ".$")
		i = j
		if k := strings.LastIndexAny(word, ".$"); k >= 0 {
			word = word[k+1:]
		}
		if looksLikeErrorName(word) {
			if e, ok := lookupError(word); ok {
				return e, true
			}
		}
	}
	return nil, false
}

func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '$'
}

// looksLikeErrorName reports whether w is written as an error's name: UPPER_SNAKE (two or more
// characters), CamelCase (two capitals or more), or a Java exception's name.
func looksLikeErrorName(w string) bool {
	if len(w) < 2 || !('A' <= w[0] && w[0] <= 'Z') {
		return false
	}
	if strings.HasSuffix(w, "Exception") {
		return true
	}
	upper, lower := 0, 0
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case 'A' <= c && c <= 'Z':
			upper++
		case 'a' <= c && c <= 'z':
			lower++
		}
	}
	return lower == 0 || upper >= 2
}

// leadingErrorName is the Kafka error name s starts with (upper-case letters, digits and
// underscores, two or more, ended by ':', ')', a space or the end), or "".
func leadingErrorName(s string) string {
	end := strings.IndexFunc(s, func(r rune) bool { return !(r >= 'A' && r <= 'Z' || r == '_' || r >= '0' && r <= '9') })
	if end < 0 {
		end = len(s)
	}
	if end < 2 || (end < len(s) && !strings.ContainsRune(":) ", rune(s[end]))) {
		return ""
	}
	return s[:end]
}
