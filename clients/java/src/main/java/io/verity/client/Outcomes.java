package io.verity.client;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TransactionAbortedException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.protocol.Errors;

/**
 * The Java client's send-error table: what an error the producer's callback received proves
 * about the record's append. The one rule is Verity's: fail only when the record was certainly
 * not written, info when it may have been. Written from the javadoc of KafkaProducer.send and of
 * each exception (kafka-clients 4.x), and from Kafka's protocol: what a broker's answer about a
 * batch says is the same whichever client carried it, and the rows below say it as
 * workloads/kclient.BrokerAnswers does (a Go test holds the two to each other through --table).
 */
final class Outcomes {
  static final String OK = "ok";
  static final String FAIL = "fail";
  static final String INFO = "info";

  /** A broker's answer about a batch, by Kafka's error code. */
  record BrokerRow(Errors error, String once, String onceAcksAll, boolean deterministic, String why) {}

  static final List<BrokerRow> BROKER = List.of(
      new BrokerRow(Errors.NOT_ENOUGH_REPLICAS, FAIL, null, false,
          "the leader compares the ISR with min.insync.replicas before it appends, and refused the batch"),
      new BrokerRow(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, INFO, null, false,
          "the leader appended the batch, then the ISR shrank below min.insync.replicas"),
      new BrokerRow(Errors.REQUEST_TIMED_OUT, INFO, null, false,
          "the leader may have appended the batch; the followers did not confirm in time (also the client's own TimeoutException)"),
      new BrokerRow(Errors.NOT_LEADER_OR_FOLLOWER, FAIL, INFO, false,
          "a broker that is not the leader appends nothing; with acks=all the leader may have appended and then lost leadership"),
      new BrokerRow(Errors.FENCED_LEADER_EPOCH, FAIL, null, false, "the request named an old leader epoch and was refused before any append"),
      new BrokerRow(Errors.KAFKA_STORAGE_ERROR, INFO, null, false, "the log directory failed, possibly during the append"),
      new BrokerRow(Errors.CORRUPT_MESSAGE, FAIL, null, false, "the batch failed its checksum and was refused"),
      new BrokerRow(Errors.MESSAGE_TOO_LARGE, FAIL, null, true, "the record is larger than the broker or topic allows"),
      new BrokerRow(Errors.RECORD_LIST_TOO_LARGE, FAIL, null, true, "the batch is larger than the broker allows"),
      new BrokerRow(Errors.INVALID_RECORD, FAIL, null, true, "the broker refused the record itself"),
      new BrokerRow(Errors.INVALID_TIMESTAMP, FAIL, null, true, "the record's timestamp is out of the topic's range"),
      new BrokerRow(Errors.INVALID_REQUIRED_ACKS, FAIL, null, true, "the producer's acks is not one Kafka accepts"),
      new BrokerRow(Errors.UNSUPPORTED_COMPRESSION_TYPE, FAIL, null, true, "the broker refused the batch's compression"),
      new BrokerRow(Errors.TOPIC_AUTHORIZATION_FAILED, FAIL, null, true, "not authorized to write the topic"),
      new BrokerRow(Errors.CLUSTER_AUTHORIZATION_FAILED, FAIL, null, true, "not authorized for idempotent writes"),
      new BrokerRow(Errors.INVALID_TOPIC_EXCEPTION, FAIL, null, true, "the topic name is invalid"),
      new BrokerRow(Errors.UNSUPPORTED_VERSION, FAIL, null, true, "the broker does not support the request"),
      new BrokerRow(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, FAIL, null, false,
          "the leader refused the batch's sequence number before appending it"),
      new BrokerRow(Errors.INVALID_PRODUCER_EPOCH, FAIL, null, false, "the leader refused the batch's producer epoch before appending it"),
      new BrokerRow(Errors.UNKNOWN_PRODUCER_ID, FAIL, null, false, "the leader knew no state for the producer id and refused the batch"));

  /**
   * Errors the producer raises itself for more than the batch a broker answered: a fatal error
   * (not authorized for idempotent writes, a request the broker does not support) fails every
   * incomplete batch, batches in flight included, whose records may be in the log.
   */
  static final List<Class<? extends Throwable>> FATAL_FOR_ALL = List.of(
      org.apache.kafka.common.errors.ClusterAuthorizationException.class,
      org.apache.kafka.common.errors.UnsupportedVersionException.class);

  /** An outcome with the row that decided it. */
  record Outcome(String type, String rule, String why) {}

  /**
   * The outcome of a send that ended with e. appended: the producer took the record into a batch
   * (send returned); once: no retry happened since, so the record went to the brokers at most
   * once.
   */
  static Outcome classify(Throwable e, boolean appended, boolean once, boolean acksAll) {
    if (e == null) {
      return new Outcome(OK, "", "");
    }
    if (!appended) {
      return new Outcome(FAIL, "not-sent", "KafkaProducer.send failed the record before it joined a batch: it was never sent");
    }
    Throwable c = cause(e);
    if (c instanceof TransactionAbortedException) {
      return new Outcome(FAIL, "transaction-aborted", "the transaction was aborted before the batch was sent");
    }
    if (c instanceof SerializationException) {
      return new Outcome(FAIL, "serialization", "the record could not be serialized: it was never sent");
    }
    for (Class<? extends Throwable> k : FATAL_FOR_ALL) {
      if (k.isInstance(c)) {
        return new Outcome(INFO, "fatal-for-all", "a fatal error the producer fails every incomplete batch with, "
            + "batches in flight included: the record may have been appended");
      }
    }
    if (c instanceof ApiException) {
      Errors err = Errors.forException(c);
      for (BrokerRow r : BROKER) {
        if (r.error() != err) {
          continue;
        }
        if (!r.deterministic() && !once) {
          return new Outcome(INFO, r.error().name(), "retried: an earlier attempt may have appended the record (" + r.why() + ")");
        }
        String t = acksAll && r.onceAcksAll() != null ? r.onceAcksAll() : r.once();
        return new Outcome(t, r.error().name(), r.why());
      }
    }
    return new Outcome(INFO, "unlisted", "an error the table does not list: the record may have been written");
  }

  /** The error behind wrappers (ExecutionException, a KafkaException that carries a cause). */
  static Throwable cause(Throwable e) {
    Throwable c = e;
    while ((c instanceof ExecutionException || c instanceof CompletionException
            || (c instanceof KafkaException && !(c instanceof ApiException)))
        && c.getCause() != null && c.getCause() != c) {
      c = c.getCause();
    }
    return c;
  }

  /** The protocol's error: Kafka's name and code for a broker's error, the exception's name otherwise. */
  static ObjectNode error(Throwable e) {
    Throwable c = cause(e);
    ObjectNode n = Wire.MAPPER.createObjectNode();
    String msg = c.getMessage() == null ? "" : c.getMessage();
    Errors err = c instanceof ApiException ? Errors.forException(c) : Errors.UNKNOWN_SERVER_ERROR;
    if (err != Errors.UNKNOWN_SERVER_ERROR || c instanceof UnknownServerException) {
      n.put("name", err.name());
      n.put("code", err.code());
      n.put("text", "kafka server: " + err.name() + ": " + msg);
    } else {
      n.put("name", c.getClass().getSimpleName());
      n.put("text", c.getClass().getSimpleName() + ": " + msg);
    }
    return n;
  }

  /** Prints the broker rows, one per line: code, name, once, once with acks=all, deterministic. */
  static void printTable(PrintStream out) {
    for (BrokerRow r : BROKER) {
      out.printf("%d\t%s\t%s\t%s\t%s%n", r.error().code(), r.error().name(), r.once(),
          r.onceAcksAll() == null ? "" : r.onceAcksAll(), r.deterministic());
    }
  }

  private Outcomes() {}
}
