package io.verity.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A transactional producer: a KafkaProducer with a transactional.id, initialised when it opens
 * (initTransactions fences every earlier instance and aborts what it left open).
 */
final class TxnInstance {
  /** The commit texts of kclient.TxnNotSent and kclient.TxnAbortConfirmed. */
  static final String NOT_SENT = "commit not requested: ";
  static final String ABORT_CONFIRMED = "commit failed, then the coordinator accepted the abort: ";

  private final KafkaProducer<byte[], byte[]> producer;
  /** A record of the current transaction failed: the producer is in error and sends no commit. */
  private boolean failed;
  /** Why the instance cannot begin another transaction ("" when it can). */
  private String broken = "";

  static Properties config(Cluster cluster, JsonNode s) {
    Properties p = cluster.base(Wire.text(s.get("client_id")));
    JsonNode set = s.path("settings");
    Duration timeout = Wire.duration(s.get("timeout"), Duration.ofSeconds(60));
    Duration request = Wire.duration(s.get("request_timeout"), Duration.ofSeconds(30));
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, Wire.text(s.get("txn_id")));
    p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Long.toString(timeout.toMillis()));
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.RETRIES_CONFIG, Integer.toString(set.path("retries").asInt(Integer.MAX_VALUE)));
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(request.toMillis()));
    // Sent at once (Kafka 4's default lingers 5 ms), and delivery.timeout.ms at least
    // linger.ms + request.timeout.ms, as Kafka's client requires.
    p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(Math.max(request.toMillis(), 30_000)));
    // initTransactions, commitTransaction and abortTransaction wait at most this long; the
    // transaction timeout is long enough for the coordinator to have answered or aborted.
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(timeout.toMillis()));
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    return p;
  }

  static TxnInstance open(Cluster cluster, JsonNode s) throws Exception {
    KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config(cluster, s));
    try {
      producer.initTransactions();
    } catch (RuntimeException e) {
      producer.close(Duration.ZERO);
      throw e;
    }
    return new TxnInstance(producer);
  }

  TxnInstance(KafkaProducer<byte[], byte[]> producer) {
    this.producer = producer;
  }

  void handle(long id, String op, JsonNode a, Wire wire) {
    switch (op) {
      case "txn.begin":
        try {
          failed = false;
          producer.beginTransaction();
          wire.reply(id, null);
        } catch (RuntimeException e) {
          broken = "begin failed: " + e;
          wire.error(id, e, false);
        }
        return;
      case "txn.send":
        send(id, a, wire);
        return;
      case "txn.commit":
        wire.reply(id, commit());
        return;
      case "txn.abort":
        try {
          producer.abortTransaction();
          wire.reply(id, null);
        } catch (RuntimeException e) {
          broken = "abort failed: " + e;
          wire.error(id, e, false);
        }
        return;
      case "txn.ready":
        ObjectNode r = Wire.MAPPER.createObjectNode();
        r.put("ready", broken.isEmpty());
        r.put("why", broken.isEmpty() ? "ready" : broken);
        wire.reply(id, r);
        return;
      default:
        throw new UnsupportedOperationException(op);
    }
  }

  /** Writes the records and waits, within the deadline, for each answer; the first error is the reply's. */
  private void send(long id, JsonNode a, Wire wire) {
    long deadline = System.nanoTime() + Wire.duration(a.get("within"), Duration.ofSeconds(30)).toNanos();
    List<Future<RecordMetadata>> fs = new ArrayList<>();
    Throwable first = null;
    for (JsonNode r : a.path("records")) {
      try {
        fs.add(producer.send(new ProducerRecord<>(r.path("topic").asText(), r.path("partition").asInt(),
            r.has("key") ? Wire.bytes(r.path("key").asText()) : null, Wire.bytes(r.path("value").asText()))));
      } catch (RuntimeException e) {
        fs.add(null);
        if (first == null) {
          first = e;
        }
      }
    }
    ObjectNode res = Wire.MAPPER.createObjectNode();
    ArrayNode acked = res.putArray("acked");
    int unanswered = 0;
    for (Future<RecordMetadata> f : fs) {
      if (f == null) {
        acked.addNull();
        continue;
      }
      try {
        RecordMetadata md = f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        ObjectNode n = acked.addObject();
        n.put("partition", md.partition());
        n.put("offset", md.offset());
      } catch (ExecutionException e) {
        acked.addNull();
        if (first == null) {
          first = e.getCause();
        }
      } catch (TimeoutException e) {
        acked.addNull();
        unanswered++;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        acked.addNull();
        unanswered++;
      }
    }
    if (first == null && unanswered > 0) {
      first = new IllegalStateException(unanswered + " of " + fs.size() + " records unanswered after the delivery timeout");
    }
    if (first == null) {
      wire.reply(id, res);
      return;
    }
    failed = true;
    wire.reply(id, res, Outcomes.error(first));
  }

  /**
   * Commits, and says what is known of the outcome: ok when commitTransaction returned; when it
   * threw, an abort the coordinator accepts proves that the commit did not happen (it refuses
   * EndTxn(abort) once a commit is prepared), and Kafka's client refuses to abort while a commit
   * it could not confirm must be retried: then the outcome is unknown.
   */
  private ObjectNode commit() {
    ObjectNode r = Wire.MAPPER.createObjectNode();
    if (failed) {
      // In this state commitTransaction throws the record's error without sending EndTxn.
      String note = abortNote();
      r.put("outcome", Outcomes.FAIL);
      r.put("text", NOT_SENT + "a record of the transaction failed" + note);
      return r;
    }
    try {
      producer.commitTransaction();
      r.put("outcome", Outcomes.OK);
      return r;
    } catch (RuntimeException e) {
      String text = Outcomes.error(e).path("text").asText();
      try {
        producer.abortTransaction();
        r.put("outcome", Outcomes.FAIL);
        r.put("text", ABORT_CONFIRMED + text);
      } catch (RuntimeException ae) {
        broken = "the commit's outcome is unknown: " + text;
        r.put("outcome", Outcomes.INFO);
        r.put("text", "commit: " + text + "; abort: " + Outcomes.error(ae).path("text").asText());
      }
      return r;
    }
  }

  private String abortNote() {
    try {
      producer.abortTransaction();
      return "";
    } catch (RuntimeException e) {
      broken = "abort failed: " + e;
      return "; abort: " + Outcomes.error(e).path("text").asText();
    }
  }

  /** The offsets after a batch, with the generation that delivered them (KIP-447). */
  void sendOffsets(Map<TopicPartition, OffsetAndMetadata> offsets, ConsumerGroupMetadata group) {
    producer.sendOffsetsToTransaction(offsets, group);
  }

  void close() {
    producer.close(Duration.ofSeconds(10));
  }
}
