package io.verity.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A read-process-write member: a KafkaConsumer in the input's group at read_committed, and a
 * transactional producer whose transactions carry the consumed offsets with the consumer's group
 * metadata (sendOffsetsToTransaction(offsets, groupMetadata), KIP-447). After a transaction that
 * did not commit, Kafka's consumer does not rewind by itself (KAFKA-17582): rewind seeks every
 * owned partition back to its committed offset.
 */
final class MemberInstance {
  private final TxnInstance txn;
  private final KafkaConsumer<byte[], byte[]> consumer;
  /** Events the listener reported, for the next poll's result. */
  private final Deque<ObjectNode> queued = new ArrayDeque<>();
  /** Records polled beyond a poll's max, handed out by the next. */
  private final Deque<ConsumerRecord<byte[], byte[]>> pending = new ArrayDeque<>();
  /** A revocation came during the poll: rewind before answering. */
  private boolean rewindAfterPoll;

  static MemberInstance open(Cluster cluster, JsonNode s) throws Exception {
    TxnInstance txn = TxnInstance.open(cluster, s.path("txn"));
    Properties p = cluster.base(Wire.text(s.get("consumer_client_id")));
    p.put(ConsumerConfig.GROUP_ID_CONFIG, Wire.text(s.get("group")));
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, s.path("isolation").asText("read_committed"));
    // Offsets move only inside transactions: never by auto-commit.
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    // Classic: eager, like the Go clients' members: every generation revokes and hands out the
    // whole assignment, so that each assigned event carries the generation's complete claims.
    ConsumerInstance.groupProtocol(p, s.path("group_protocol").asText("classic"), true);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    KafkaConsumer<byte[], byte[]> consumer;
    try {
      consumer = new KafkaConsumer<>(p);
    } catch (RuntimeException e) {
      txn.close();
      throw e;
    }
    MemberInstance m = new MemberInstance(txn, consumer);
    consumer.subscribe(List.of(Wire.text(s.get("input"))), m.listener());
    return m;
  }

  private MemberInstance(TxnInstance txn, KafkaConsumer<byte[], byte[]> consumer) {
    this.txn = txn;
    this.consumer = consumer;
  }

  TxnInstance txn() {
    return txn;
  }

  private ConsumerRebalanceListener listener() {
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> parts) {
        if (!parts.isEmpty()) {
          revoked();
        }
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> parts) {
        ObjectNode ev = Wire.assignedEvent(consumer.groupMetadata(), consumer.assignment());
        // The role drops its batch at an assignment too: under the consumer protocol (KIP-848)
        // the member keeps the positions of what it retains, past those records.
        pending.clear();
        rewindAfterPoll = true;
        queued.add(ev);
      }

      @Override
      public void onPartitionsLost(Collection<TopicPartition> parts) {
        revoked();
      }
    };
  }

  /**
   * Partitions were revoked: what was handed out is read again from the committed offsets (the
   * role drops its batch). Under the consumer protocol (KIP-848) the member keeps the positions
   * of the partitions it retains, past records the role dropped, so the poll seeks every owned
   * partition back to its committed offset before it answers.
   */
  private void revoked() {
    pending.clear();
    rewindAfterPoll = true;
    ObjectNode ev = Wire.MAPPER.createObjectNode();
    ev.put("kind", "revoked");
    queued.add(ev);
  }

  void handle(long id, String op, JsonNode a, Wire wire) {
    switch (op) {
      case "member.poll":
        try {
          wire.reply(id, poll(a));
        } catch (RuntimeException e) {
          // Whatever broke the poll, this instance's position can no longer be trusted.
          ObjectNode err = Outcomes.error(e);
          err.put("replace", true);
          wire.reply(id, null, err);
        }
        return;
      case "member.add_offsets":
        try {
          txn.sendOffsets(offsets(a.path("records")), consumer.groupMetadata());
          wire.reply(id, null);
        } catch (RuntimeException e) {
          wire.error(id, e, false);
        }
        return;
      case "member.rewind":
        try {
          rewind();
          wire.reply(id, null);
        } catch (RuntimeException e) {
          ObjectNode err = Outcomes.error(e);
          err.put("replace", true);
          wire.reply(id, null, err);
        }
        return;
      default:
        throw new UnsupportedOperationException(op);
    }
  }

  /** Returns as soon as something came (or wait passed): events first, then at most max records. */
  private ObjectNode poll(JsonNode a) {
    int max = a.path("max").asInt(20);
    boolean bounded = a.has("wait");
    long deadline = bounded ? System.nanoTime() + Wire.duration(a.get("wait"), Duration.ZERO).toNanos() : Long.MAX_VALUE;
    ObjectNode res = Wire.MAPPER.createObjectNode();
    ArrayNode events = res.putArray("events");
    while (pending.isEmpty() && queued.isEmpty()) {
      long left = deadline - System.nanoTime();
      if (bounded && left <= 0) {
        return res;
      }
      consumer.poll(Duration.ofNanos(Math.min(Math.max(left, 0), Duration.ofSeconds(1).toNanos()))).forEach(pending::add);
      if (rewindAfterPoll) {
        rewindAfterPoll = false;
        rewind();
      }
      if (!queued.isEmpty()) {
        // The records of this poll came after the rebalance: they are kept, after its events.
        break;
      }
    }
    while (!queued.isEmpty()) {
      events.add(queued.poll());
    }
    for (int n = 0; n < max && !pending.isEmpty(); n++) {
      ConsumerRecord<byte[], byte[]> r = pending.poll();
      // A member's records need no handle (nothing is recorded back): 1 keeps the schema's.
      events.add(Wire.recordEvent(r, 1));
    }
    return res;
  }

  private static Map<TopicPartition, OffsetAndMetadata> offsets(JsonNode records) {
    Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
    for (JsonNode r : records) {
      TopicPartition tp = new TopicPartition(r.path("topic").asText(), r.path("partition").asInt());
      long next = r.path("offset").asLong() + 1;
      OffsetAndMetadata cur = out.get(tp);
      if (cur == null || cur.offset() < next) {
        out.put(tp, new OffsetAndMetadata(next));
      }
    }
    return out;
  }

  /** Seeks every owned partition back to its committed offset (the oldest when none). */
  private void rewind() {
    pending.clear();
    Set<TopicPartition> owned = consumer.assignment();
    if (owned.isEmpty()) {
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(owned, Duration.ofSeconds(30));
    for (TopicPartition tp : owned) {
      OffsetAndMetadata c = committed.get(tp);
      if (c != null) {
        consumer.seek(tp, c);
      } else {
        consumer.seekToBeginning(List.of(tp));
      }
    }
  }

  void close() {
    try {
      consumer.close(Duration.ofSeconds(10));
    } finally {
      txn.close();
    }
  }
}
