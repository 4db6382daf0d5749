package results

import (
	"testing"
)

// An error counts as one class whichever client's words a history has for it: the Go clients'
// texts as the workloads write them, the Java client's exceptions, Kafka's bare protocol name
// and its CamelCase spelling.
func TestErrorClassAcrossClients(t *testing.T) {
	const java = "org.apache.kafka.common.errors."
	for _, c := range []struct {
		class  string
		goText string   // what a Verity run writes for the error (sarama's or franz-go's)
		others []string // the same error in other clients' words
	}{
		{"NOT_ENOUGH_REPLICAS", "kafka server: NOT_ENOUGH_REPLICAS: Messages are rejected since there are fewer in-sync replicas than required.", []string{
			java + "NotEnoughReplicasException: Messages are rejected since there are fewer in-sync replicas than required.",
			"NOT_ENOUGH_REPLICAS", "NotEnoughReplicas", "NotEnoughReplicasException",
			"java.util.concurrent.ExecutionException: " + java + "NotEnoughReplicasException: Messages are rejected",
			"class " + java + "NotEnoughReplicasException: Messages are rejected",
		}},
		{"NOT_ENOUGH_REPLICAS_AFTER_APPEND", "kafka server: NOT_ENOUGH_REPLICAS_AFTER_APPEND: Messages are written to the log, but to fewer in-sync replicas than required.", []string{
			java + "NotEnoughReplicasAfterAppendException: Messages are written to the log, but to fewer in-sync replicas than required.",
			"NOT_ENOUGH_REPLICAS_AFTER_APPEND", "NotEnoughReplicasAfterAppend",
		}},
		{"NOT_LEADER_OR_FOLLOWER", "kafka server: NOT_LEADER_OR_FOLLOWER: For requests intended only for the leader, this error indicates that the broker is not the current leader.", []string{
			java + "NotLeaderOrFollowerException: For requests intended only for the leader, this error indicates that the broker is not the current leader.",
			java + "NotLeaderForPartitionException: This server is not the leader for that topic-partition.",
			"NOT_LEADER_OR_FOLLOWER", "NotLeaderOrFollower", "NOT_LEADER_FOR_PARTITION",
		}},
		{"REQUEST_TIMED_OUT", "context deadline exceeded (kafka server: REQUEST_TIMED_OUT)", []string{
			"REQUEST_TIMED_OUT", "RequestTimedOut", "REQUEST_TIMED_OUT: The request timed out.",
		}},
		// The Java client's TimeoutException is its own timeout as often as the broker's.
		{ClassTimeout, "context deadline exceeded", []string{
			java + "TimeoutException: Expiring 1 record(s) for verity-0:120001 ms has passed since batch creation",
			java + "TimeoutException: The request timed out.", "TimeoutException",
		}},
		{"PRODUCER_FENCED", "kafka server: PRODUCER_FENCED (error code 90)", []string{
			java + "ProducerFencedException: There is a newer producer with the same transactionalId which fences the current one.",
			"org.apache.kafka.common.KafkaException: " + java + "ProducerFencedException: There is a newer producer",
			"PRODUCER_FENCED", "ProducerFenced",
		}},
		{"INVALID_PRODUCER_EPOCH", "kafka server: INVALID_PRODUCER_EPOCH: Producer attempted to produce with an old epoch.", []string{
			java + "InvalidProducerEpochException: Producer attempted to produce with an old epoch.",
			"INVALID_PRODUCER_EPOCH", "InvalidProducerEpoch",
		}},
		{"OUT_OF_ORDER_SEQUENCE_NUMBER", "kafka server: OUT_OF_ORDER_SEQUENCE_NUMBER: The broker received an out of order sequence number.", []string{
			java + "OutOfOrderSequenceException: The broker received an out of order sequence number.",
			"OUT_OF_ORDER_SEQUENCE_NUMBER", "OutOfOrderSequence",
		}},
		{"UNKNOWN_PRODUCER_ID", "kafka server: UNKNOWN_PRODUCER_ID: This exception is raised by the broker if it could not locate the producer metadata.", []string{
			java + "UnknownProducerIdException: This exception is raised by the broker if it could not locate the producer metadata",
			"UNKNOWN_PRODUCER_ID", "UnknownProducerId",
		}},
		{"CONCURRENT_TRANSACTIONS", "kafka server: CONCURRENT_TRANSACTIONS: The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.", []string{
			java + "ConcurrentTransactionsException: The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.",
			"CONCURRENT_TRANSACTIONS", "ConcurrentTransactions",
		}},
		{ClassAborted, "aborted", []string{
			java + "TransactionAbortedException: Failing batch since transaction was aborted",
			"TransactionAborted", "TransactionAbortedException",
		}},
		{ClassConnectionLost, "EOF", []string{
			java + "NetworkException: The server disconnected before a response was received.",
			"NETWORK_EXCEPTION", "NetworkException", "kafka server: NETWORK_EXCEPTION: The server disconnected before a response was received.",
			java + "DisconnectException", "DisconnectException: connection to node 2 was lost", "write tcp 10.0.0.1:4000->10.0.0.2:9092: write: broken pipe",
		}},
	} {
		if got := ErrorClass(c.goText); got != c.class {
			t.Errorf("ErrorClass(%q) = %q, want %q", c.goText, got, c.class)
		}
		for _, text := range c.others {
			if got := ErrorClass(text); got != c.class {
				t.Errorf("ErrorClass(%q) = %q, want %q (as for %q)", text, got, c.class, c.goText)
			}
		}
	}
}

// Plain words are not error names: a text without one keeps its class by its words.
func TestErrorClassIgnoresPlainWords(t *testing.T) {
	for text, want := range map[string]string{
		"Network is unreachable":           ClassOther,
		"Timeout while waiting for leader": ClassTimeout,
		"EOF":                              ClassConnectionLost,
		"org.apache.kafka.common.KafkaException: Cannot execute transactional method because we are in an error state": ClassOther,
		"kafka server: UNKNOWN_TOPIC_ID: This server does not host this topic ID.":                                     "UNKNOWN_TOPIC_ID",
	} {
		if got := ErrorClass(text); got != want {
			t.Errorf("ErrorClass(%q) = %q, want %q", text, got, want)
		}
	}
}

// Every spelling of every name in kafkaErrors finds its own row: no two rows share a name.
func TestKafkaErrorsNamesAreDistinct(t *testing.T) {
	seen := map[string]int{} // errorKey -> row
	for i, e := range kafkaErrors {
		if e.class() == "" {
			t.Errorf("%+v has no class", e)
		}
		for _, n := range []string{e.Name, e.Exception} {
			if n == "" {
				continue
			}
			k := string(errorKey(nil, n))
			if prev, dup := seen[k]; dup && prev != i {
				t.Errorf("%+v and %+v share the name %s", kafkaErrors[prev], e, k)
			}
			seen[k] = i
			if got, ok := lookupError(n); !ok || got != &kafkaErrors[i] {
				t.Errorf("%s: found %+v", n, got)
			}
		}
	}
}
