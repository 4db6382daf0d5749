package io.verity.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.consumer.NoOffsetForPartitionException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A consumer, in a group or on assigned partitions. Every call to the KafkaConsumer is on the
 * instance's thread (the rebalance listener runs inside poll), as the client requires.
 *
 * <p>Positions: auto.offset.reset=none, so that Kafka's client reports a log truncated under the
 * position (KIP-320: LogTruncationException, with where the logs diverge) instead of resetting in
 * silence; the program then resets itself and says so as a data_loss event. A partition with no
 * position yet starts at the oldest offset (the newest with from_newest).
 *
 * <p>Commits, in a group: only the records Verity said it recorded, asynchronously about every
 * second, synchronously before partitions are revoked and when the consumer closes; so a commit
 * never runs ahead of the history. With store_positions Verity keeps the positions (a sink's
 * store): nothing is committed, and the partitions an assignment adds stay paused until
 * consumer.seek places them.
 */
final class ConsumerInstance {
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final boolean group;
  private final boolean fromNewest;
  private final boolean storePositions;
  /** With store_positions: the partitions assigned since the last seek, paused until it. */
  private final Set<TopicPartition> held = new TreeSet<>(ConsumerInstance::compare);
  /** Control events the listener reported, for the next poll's result. */
  private final List<ObjectNode> queued = new ArrayList<>();
  /** Records polled beyond a poll's max, handed out by the next. */
  private final Deque<ConsumerRecord<byte[], byte[]>> pending = new ArrayDeque<>();
  private final Set<TopicPartition> owned = new TreeSet<>(ConsumerInstance::compare);
  private final Map<Long, ConsumerRecord<byte[], byte[]>> polled = new HashMap<>();
  private final Map<TopicPartition, OffsetAndMetadata> recorded = new HashMap<>();
  private long nextHandle;
  private boolean pollFailed;
  private long lastCommit = System.nanoTime();

  static int compare(TopicPartition a, TopicPartition b) {
    int c = a.topic().compareTo(b.topic());
    return c != 0 ? c : Integer.compare(a.partition(), b.partition());
  }

  static ConsumerInstance open(Cluster cluster, JsonNode s) {
    Properties p = cluster.base(Wire.text(s.get("client_id")));
    String isolation = s.path("isolation").asText("read_uncommitted");
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    String group = Wire.text(s.get("group"));
    if (!group.isEmpty()) {
      p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
      groupProtocol(p, s.path("group_protocol").asText("classic"), false);
      if (s.hasNonNull("max_poll_interval")) {
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, Long.toString(Wire.duration(s.get("max_poll_interval"), null).toMillis()));
      }
    }
    ConsumerInstance c = new ConsumerInstance(new KafkaConsumer<>(p), !group.isEmpty(), s.path("from_newest").asBoolean(),
        s.path("store_positions").asBoolean());
    try {
      if (c.group) {
        List<String> topics = new ArrayList<>();
        s.path("topics").forEach(t -> topics.add(t.asText()));
        c.consumer.subscribe(topics, c.listener());
      } else {
        c.assign(s.path("assign"));
      }
    } catch (RuntimeException e) {
      c.consumer.close(Duration.ZERO);
      throw e;
    }
    return c;
  }

  /**
   * The group protocol's settings: classic, with sarama's and franz-go's session timeout (so that
   * the clients' members rebalance alike) and, for a member, the eager range assignor; or
   * KIP-848's consumer protocol, where the coordinator assigns and times sessions, and Kafka's
   * client refuses those settings.
   */
  static void groupProtocol(Properties p, String protocol, boolean eager) {
    if (protocol.equals("consumer")) {
      p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
      return;
    }
    p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
    p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "3000");
    if (eager) {
      p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, org.apache.kafka.clients.consumer.RangeAssignor.class.getName());
    }
  }

  private ConsumerInstance(KafkaConsumer<byte[], byte[]> consumer, boolean group, boolean fromNewest, boolean storePositions) {
    this.consumer = consumer;
    this.group = group;
    this.fromNewest = fromNewest;
    this.storePositions = storePositions;
  }

  private void assign(JsonNode assign) {
    List<TopicPartition> tps = new ArrayList<>();
    assign.fields().forEachRemaining(t -> t.getValue().fieldNames().forEachRemaining(
        p -> tps.add(new TopicPartition(t.getKey(), Integer.parseInt(p)))));
    consumer.assign(tps);
    for (TopicPartition tp : tps) {
      JsonNode pos = assign.path(tp.topic()).path(Integer.toString(tp.partition()));
      long off = pos.path("offset").asLong(-1);
      int epoch = pos.path("epoch").asInt(-1);
      if (off >= 0) {
        // With the epoch, the client validates the position before fetching (KIP-320).
        consumer.seek(tp, new OffsetAndMetadata(off, epoch >= 0 ? Optional.of(epoch) : Optional.empty(), ""));
      } else {
        start(List.of(tp));
      }
    }
  }

  private void start(Collection<TopicPartition> tps) {
    if (fromNewest) {
      consumer.seekToEnd(tps);
    } else {
      consumer.seekToBeginning(tps);
    }
  }

  private ConsumerRebalanceListener listener() {
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> parts) {
        commitSync(parts);
        // Records not handed out yet belong to the partitions' next owner.
        pending.removeIf(r -> parts.contains(new TopicPartition(r.topic(), r.partition())));
        if (!parts.isEmpty() && owned.removeAll(parts)) {
          queue();
        }
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> parts) {
        owned.addAll(parts);
        if (storePositions) {
          // Fetched only once consumer.seek has placed them.
          consumer.pause(parts);
          held.addAll(parts);
        }
        queue(); // noted even when nothing was added: the member joined a new generation
      }

      @Override
      public void onPartitionsLost(Collection<TopicPartition> parts) {
        pending.removeIf(r -> parts.contains(new TopicPartition(r.topic(), r.partition())));
        // Their next owner commits them now: a later commit of ours would move the group back.
        recorded.keySet().removeAll(parts);
        boolean changed = !owned.isEmpty();
        owned.clear();
        if (changed) {
          queue();
        }
      }
    };
  }

  private void queue() {
    queued.add(Wire.assignedEvent(consumer.groupMetadata(), owned));
  }

  /** What arrives within wait, at most max records, in order, with the control events before the records that followed them. */
  ObjectNode poll(JsonNode a) {
    int max = a.path("max").asInt(500);
    long deadline = System.nanoTime() + Wire.duration(a.get("wait"), Duration.ofMillis(200)).toNanos();
    polled.clear(); // what the last poll returned and nobody recorded is not committed
    ObjectNode res = Wire.MAPPER.createObjectNode();
    ArrayNode events = res.putArray("events");
    int n = 0;
    while (n < max) {
      if (pending.isEmpty()) {
        long left = deadline - System.nanoTime();
        if (left <= 0 && n > 0) {
          break;
        }
        List<ObjectNode> losses = new ArrayList<>();
        try {
          consumer.poll(Duration.ofNanos(Math.max(left, 0))).forEach(pending::add);
        } catch (LogTruncationException e) {
          truncated(e, losses);
        } catch (OffsetOutOfRangeException e) {
          outOfRange(e.offsetOutOfRangePartitions(), losses);
        } catch (NoOffsetForPartitionException e) {
          start(e.partitions());
        } catch (RuntimeException e) {
          // What this poll gathered is answered: the records taken are past the position.
          System.err.println("verity-java-client: consumer poll: " + e);
          pollFailed = true;
        }
        // The listener ran inside poll, before the error that poll threw.
        queued.forEach(events::add);
        queued.clear();
        losses.forEach(events::add);
        if (pollFailed) {
          pollFailed = false;
          break;
        }
        if (pending.isEmpty() && System.nanoTime() >= deadline) {
          break;
        }
      }
      while (n < max && !pending.isEmpty()) {
        events.add(record(pending.poll()));
        n++;
      }
    }
    commitIfDue();
    return res;
  }

  private ObjectNode record(ConsumerRecord<byte[], byte[]> r) {
    long h = ++nextHandle;
    polled.put(h, r);
    return Wire.recordEvent(r, h);
  }

  /** A log truncated under the position: the client found where the logs diverge, or not. */
  private void truncated(LogTruncationException e, List<ObjectNode> events) {
    Map<TopicPartition, OffsetAndMetadata> divergent = e.divergentOffsets();
    for (Map.Entry<TopicPartition, Long> o : e.offsetOutOfRangePartitions().entrySet()) {
      TopicPartition tp = o.getKey();
      OffsetAndMetadata d = divergent.get(tp);
      if (d != null) {
        consumer.seek(tp, d);
        events.add(loss(tp, o.getValue(), -1, d.offset(), d.leaderEpoch().orElse(-1)));
      } else {
        events.add(loss(tp, o.getValue(), -1, restart(tp), -1));
      }
    }
  }

  private void outOfRange(Map<TopicPartition, Long> parts, List<ObjectNode> events) {
    for (Map.Entry<TopicPartition, Long> o : parts.entrySet()) {
      events.add(loss(o.getKey(), o.getValue(), -1, restart(o.getKey()), -1));
    }
  }

  /**
   * Moves tp to its start (the oldest offset, the newest with from_newest) and says where that
   * is: -1 when the cluster does not say within 10 s (position() could block for a minute, and
   * throw another partition's error).
   */
  private long restart(TopicPartition tp) {
    start(List.of(tp));
    try {
      Map<TopicPartition, Long> o = fromNewest ? consumer.endOffsets(List.of(tp), Duration.ofSeconds(10))
          : consumer.beginningOffsets(List.of(tp), Duration.ofSeconds(10));
      return o.getOrDefault(tp, -1L);
    } catch (RuntimeException e) {
      return -1;
    }
  }

  private static ObjectNode loss(TopicPartition tp, long offset, int epoch, long resetTo, int resetEpoch) {
    ObjectNode ev = Wire.MAPPER.createObjectNode();
    ev.put("kind", "data_loss");
    ObjectNode l = ev.putObject("loss");
    l.put("topic", tp.topic());
    l.put("partition", tp.partition());
    l.put("offset", offset);
    l.put("epoch", epoch);
    l.put("reset_to", resetTo);
    l.put("reset_epoch", resetEpoch);
    return ev;
  }

  /**
   * Places the held partitions the consumer still owns at the offsets given (a partition left out
   * starts at its start, as a group with nothing committed would), and resumes them.
   */
  void seek(JsonNode a) {
    if (!storePositions) {
      throw new UnsupportedOperationException("seek without store_positions: the group's committed offsets place its partitions");
    }
    JsonNode offsets = a.path("offsets");
    List<TopicPartition> place = new ArrayList<>();
    Set<TopicPartition> assigned = consumer.assignment();
    for (TopicPartition tp : held) {
      if (!assigned.contains(tp)) {
        continue;
      }
      JsonNode off = offsets.path(tp.topic()).path(Integer.toString(tp.partition()));
      if (off.isIntegralNumber()) {
        consumer.seek(tp, off.asLong());
      } else {
        start(List.of(tp));
      }
      place.add(tp);
    }
    held.clear();
    consumer.resume(place);
  }

  void recorded(JsonNode a) {
    for (JsonNode h : a.path("handles")) {
      ConsumerRecord<byte[], byte[]> r = polled.remove(h.asLong());
      if (r != null && group && !storePositions) {
        recorded.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1, r.leaderEpoch(), ""));
      }
    }
  }

  private void commitIfDue() {
    if (!group || recorded.isEmpty() || System.nanoTime() - lastCommit < 1_000_000_000L) {
      return;
    }
    lastCommit = System.nanoTime();
    consumer.commitAsync(new HashMap<>(recorded), (offsets, e) -> {
      if (e != null) {
        System.err.println("verity-java-client: committing the recorded offsets: " + e);
      }
    });
  }

  private void commitSync(Collection<TopicPartition> parts) {
    Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
    for (TopicPartition tp : parts) {
      if (recorded.containsKey(tp)) {
        offs.put(tp, recorded.remove(tp));
      }
    }
    if (offs.isEmpty()) {
      return;
    }
    try {
      consumer.commitSync(offs, Duration.ofSeconds(10));
    } catch (RuntimeException e) {
      // Not committed: the partitions' next owner reads them again, which is allowed.
      System.err.println("verity-java-client: committing the recorded records of revoked partitions: " + e);
    }
  }

  void close() {
    try {
      if (group) {
        commitSync(new HashSet<>(recorded.keySet()));
      }
    } finally {
      consumer.close(Duration.ofSeconds(10));
    }
  }
}
