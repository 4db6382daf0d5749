package io.verity.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A share-group member (KIP-932): Kafka's KafkaShareConsumer with explicit acknowledgement, kept
 * to the seam's rules (workloads/kclient/share.go), as franz-go's is (workloads/kclient/franz/share.go).
 * Every call to the consumer is on the instance's thread, as the client requires.
 *
 * <p>Held records: in explicit mode the client refuses a poll until every record of the last one
 * is acknowledged, and so does the seam; share.poll refuses while the member holds records. A
 * poll that returns more than share.poll's max keeps the rest (acquired, not yet handed out) for
 * the next share.poll, which hands them out before polling the client again.
 *
 * <p>Marks: share.ack only notes the acknowledgements; share.commit hands them to the client
 * (acknowledge) and commits them (commitSync), so that what the client could send on its own
 * (with a poll, or when it closes) is only ever what a commit already sent.
 */
final class ShareInstance {
  private final KafkaShareConsumer<byte[], byte[]> consumer;
  /** Records the client returned and share.poll has not handed out yet. */
  private final Deque<ConsumerRecord<byte[], byte[]>> pending = new ArrayDeque<>();
  /** Records handed out and not yet acknowledged with a final type, by place. */
  private final Map<Place, ConsumerRecord<byte[], byte[]>> held = new TreeMap<>();
  /** The acknowledgements since the last commit, in the order share.ack gave them. */
  private final List<Mark> marked = new ArrayList<>();

  record Place(String topic, int partition, long offset) implements Comparable<Place> {
    @Override
    public int compareTo(Place o) {
      int c = topic.compareTo(o.topic);
      if (c != 0) {
        return c;
      }
      c = Integer.compare(partition, o.partition);
      return c != 0 ? c : Long.compare(offset, o.offset);
    }

    @Override
    public String toString() {
      return topic + "-" + partition + "@" + offset;
    }
  }

  private record Mark(Place at, String type) {}

  /**
   * The errors that prove a partition's acknowledgements were not applied, as franz-go's
   * AckNotApplied reads them: the broker checks the batches against the records' states, and the
   * session, before it changes anything, and rolls every change back when one fails.
   */
  static final Set<Errors> NOT_APPLIED = EnumSet.of(Errors.INVALID_RECORD_STATE, Errors.INVALID_SHARE_SESSION_EPOCH,
      Errors.SHARE_SESSION_NOT_FOUND, Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_TOPIC_OR_PARTITION,
      Errors.UNKNOWN_TOPIC_ID, Errors.INVALID_REQUEST, Errors.GROUP_AUTHORIZATION_FAILED, Errors.TOPIC_AUTHORIZATION_FAILED);

  private ShareInstance(KafkaShareConsumer<byte[], byte[]> consumer) {
    this.consumer = consumer;
  }

  static ShareInstance open(Cluster cluster, JsonNode s) {
    String group = Wire.text(s.get("group"));
    List<String> topics = new ArrayList<>();
    s.path("topics").forEach(t -> topics.add(t.asText()));
    if (group.isEmpty() || topics.isEmpty()) {
      throw new IllegalArgumentException("a share consumer needs a group and topics");
    }
    Properties p = cluster.base(Wire.text(s.get("client_id")));
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    int maxRecords = s.path("max_records").asInt(0);
    if (maxRecords > 0) {
      // record_limit: the broker acquires no more than max.poll.records for a fetch, so that
      // what the member holds is what its polls return (franz-go's ShareMaxRecordsStrict).
      p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(maxRecords));
      p.put(ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, "record_limit");
    }
    KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p);
    try {
      c.subscribe(topics);
    } catch (RuntimeException e) {
      c.close(Duration.ZERO);
      throw e;
    }
    return new ShareInstance(c);
  }

  /** What the client acquires within wait, at most max records, each with its delivery count. */
  ObjectNode poll(JsonNode a) {
    if (!held.isEmpty()) {
      throw new IllegalStateException(held.size() + " records of an earlier poll are not acknowledged (first "
          + held.keySet().iterator().next() + "); polling would be refused");
    }
    int max = a.path("max").asInt(500);
    ObjectNode res = Wire.MAPPER.createObjectNode();
    ArrayNode ds = res.putArray("deliveries");
    if (pending.isEmpty()) {
      // The client's poll returns as soon as it has records, or when wait ends.
      consumer.poll(Wire.duration(a.get("wait"), Duration.ofMillis(200))).forEach(pending::add);
    }
    while (ds.size() < max && !pending.isEmpty()) {
      ConsumerRecord<byte[], byte[]> r = pending.poll();
      held.put(new Place(r.topic(), r.partition(), r.offset()), r);
      ObjectNode d = ds.addObject();
      d.set("record", Wire.recordEvent(r, 0).get("record"));
      d.put("count", r.deliveryCount().map(Short::intValue).orElse(1));
    }
    return res;
  }

  /** Notes records the member holds with a type, for the next commit. */
  void ack(JsonNode a) {
    String type = a.path("type").asText("");
    ackType(type);
    List<Place> adding = new ArrayList<>();
    for (JsonNode r : a.path("records")) {
      Place at = new Place(r.path("topic").asText(), r.path("partition").asInt(), r.path("offset").asLong());
      if (!held.containsKey(at)) {
        throw new IllegalArgumentException(type + " " + at + ": the member does not hold it");
      }
      if (adding.contains(at) || marked.stream().anyMatch(m -> m.at().equals(at))) {
        throw new IllegalArgumentException(type + " " + at + ": already marked since the last commit");
      }
      adding.add(at);
    }
    adding.forEach(at -> marked.add(new Mark(at, type)));
  }

  private static AcknowledgeType ackType(String type) {
    switch (type) {
      case "accept":
        return AcknowledgeType.ACCEPT;
      case "release":
        return AcknowledgeType.RELEASE;
      case "reject":
        return AcknowledgeType.REJECT;
      case "renew":
        return AcknowledgeType.RENEW;
      default:
        throw new IllegalArgumentException("acknowledgement type \"" + type + "\": want accept, release, reject or renew");
    }
  }

  /**
   * Acknowledges what was marked and commits it, waiting at most within: one result per partition
   * with acknowledgements, sorted by topic and partition, by the rules of franz-go's AckOutcome.
   */
  ObjectNode commit(JsonNode a) {
    ObjectNode res = Wire.MAPPER.createObjectNode();
    ArrayNode results = res.putArray("results");
    if (marked.isEmpty()) {
      return res;
    }
    List<Mark> marks = new ArrayList<>(marked);
    marked.clear();
    Map<TopicPartition, List<Mark>> byPartition = new TreeMap<>(ConsumerInstance::compare);
    for (Mark m : marks) {
      byPartition.computeIfAbsent(new TopicPartition(m.at().topic(), m.at().partition()), k -> new ArrayList<>()).add(m);
    }
    Map<TopicPartition, Optional<KafkaException>> answers = new LinkedHashMap<>();
    String noAnswer = "no answer for the acknowledgements";
    double closedBefore = connectionsClosed();
    try {
      for (Mark m : marks) {
        consumer.acknowledge(held.get(m.at()), ackType(m.type()));
        if (!m.type().equals("renew")) {
          held.remove(m.at());
        }
      }
      Map<TopicIdPartition, Optional<KafkaException>> got = consumer.commitSync(Wire.duration(a.get("within"), Duration.ofSeconds(30)));
      got.forEach((tip, e) -> answers.put(tip.topicPartition(), e));
    } catch (RuntimeException e) {
      // A timeout, a wakeup, or an acknowledgement the client refused: what was sent is unknown.
      noAnswer += ": " + Outcomes.error(e).path("text").asText();
      System.err.println("verity-java-client: share commit: " + e);
    }
    // Kafka's client sends acknowledgements again after a connection was lost (a retriable
    // error), and the second attempt is refused with INVALID_RECORD_STATE when the first was
    // applied: a refusal after a lost connection proves nothing.
    boolean relayed = connectionsClosed() != closedBefore;
    for (Map.Entry<TopicPartition, List<Mark>> e : byPartition.entrySet()) {
      ObjectNode r = results.addObject();
      r.put("topic", e.getKey().topic());
      r.put("partition", e.getKey().partition());
      ArrayNode acks = r.putArray("acks");
      for (Mark m : e.getValue()) {
        acks.addObject().put("offset", m.at().offset()).put("type", m.type());
      }
      Optional<KafkaException> answer = answers.get(e.getKey());
      if (answer == null) {
        r.put("outcome", Outcomes.INFO);
        ObjectNode err = r.putObject("error");
        err.put("name", "NoAnswer");
        err.put("text", noAnswer);
      } else if (answer.isEmpty()) {
        r.put("outcome", Outcomes.OK);
      } else {
        Throwable c = Outcomes.cause(answer.get());
        ObjectNode err = Outcomes.error(c);
        boolean proven = c instanceof ApiException && NOT_APPLIED.contains(Errors.forException(c));
        if (proven && relayed) {
          err.put("text", err.path("text").asText() + " (after a lost connection: a resent request may have been refused because the first was applied)");
        }
        r.put("outcome", proven && !relayed ? Outcomes.FAIL : Outcomes.INFO);
        r.set("error", err);
      }
    }
    return res;
  }

  /** The connections the client closed so far (its selector's connection-close-total). */
  private double connectionsClosed() {
    double n = 0;
    for (Map.Entry<MetricName, ? extends Metric> m : consumer.metrics().entrySet()) {
      if (m.getKey().name().equals("connection-close-total") && m.getValue().metricValue() instanceof Double d) {
        n += d;
      }
    }
    return n;
  }

  /**
   * Ends the member as a crash would, as near as Kafka's client allows. Its close sends what is
   * acknowledged and releases the records the member holds, and it has no way to drop its
   * connections from outside (franz-go's seam cuts them through its dialer). close(Duration.ZERO)
   * after a wakeup is the nearest: it waits for nothing, and the client holds no acknowledgement
   * that share.commit did not send already (share.ack only notes them), so what reaches the
   * brokers is at most the release of the records held, which a crash's closed connection does
   * too: they are delivered again at once, with a higher count. What differs is that the member
   * may leave its group at once rather than when its session times out.
   */
  void close() {
    pending.clear();
    held.clear();
    marked.clear();
    consumer.wakeup();
    consumer.close(Duration.ZERO);
  }
}
