package io.verity.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.common.TopicPartition;

/** The program's output: one JSON message per line, written whole by one writer at a time. */
final class Wire {
  static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Pattern DURATION = Pattern.compile("^([0-9]+(?:\\.[0-9]+)?)(ms|s|m|h)$");

  private final OutputStream out;

  Wire(PrintStream out) {
    this.out = new BufferedOutputStream(out, 1 << 16);
  }

  synchronized void write(ObjectNode m) {
    m.put("v", Main.VERSION);
    try {
      out.write(MAPPER.writeValueAsBytes(m));
      out.write('\n');
      out.flush();
    } catch (IOException e) {
      System.err.println("verity-java-client: writing a message: " + e);
    }
  }

  void reply(long id, JsonNode result) {
    ObjectNode m = MAPPER.createObjectNode();
    m.put("id", id);
    m.set("result", result == null ? MAPPER.createObjectNode() : result);
    write(m);
  }

  /** A reply with an error (and, for txn.send, a result too). */
  void reply(long id, JsonNode result, ObjectNode error) {
    ObjectNode m = MAPPER.createObjectNode();
    m.put("id", id);
    if (result != null) {
      m.set("result", result);
    }
    m.set("error", error);
    write(m);
  }

  void refuse(long id, String name, String text) {
    ObjectNode e = MAPPER.createObjectNode();
    e.put("name", name);
    e.put("text", text);
    reply(id, null, e);
  }

  void error(long id, Throwable t, boolean permanent) {
    ObjectNode e = Outcomes.error(t);
    if (permanent) {
      e.put("permanent", true);
    }
    reply(id, null, e);
  }

  void answers(String handle, ArrayNode answers, long retries) {
    ObjectNode m = MAPPER.createObjectNode();
    m.put("event", "answers");
    m.put("handle", handle);
    if (retries > 0) {
      m.put("retries", retries);
    }
    m.set("answers", answers);
    write(m);
  }

  /** A duration as the protocol writes it: a number and a unit of ms, s, m or h. */
  static Duration duration(JsonNode n, Duration dflt) {
    if (n == null || n.isMissingNode() || n.isNull()) {
      return dflt;
    }
    Matcher m = DURATION.matcher(n.asText());
    if (!m.matches()) {
      throw new IllegalArgumentException("duration \"" + n.asText() + "\": want a number and a unit of ms, s, m or h");
    }
    double v = Double.parseDouble(m.group(1));
    double ms;
    switch (m.group(2)) {
      case "ms":
        ms = v;
        break;
      case "s":
        ms = v * 1000;
        break;
      case "m":
        ms = v * 60_000;
        break;
      default:
        ms = v * 3_600_000;
    }
    return Duration.ofNanos((long) (ms * 1_000_000));
  }

  /** A record event of a poll: the record with its offset and leader epoch, and its handle. */
  static ObjectNode recordEvent(org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> r, long handle) {
    ObjectNode ev = MAPPER.createObjectNode();
    ev.put("kind", "record");
    ObjectNode rec = ev.putObject("record");
    rec.put("topic", r.topic());
    rec.put("partition", r.partition());
    if (r.key() != null) {
      rec.put("key", new String(r.key(), StandardCharsets.UTF_8));
    }
    rec.put("value", r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8));
    rec.put("offset", r.offset());
    ev.put("epoch", r.leaderEpoch().orElse(-1));
    ev.put("handle", handle);
    return ev;
  }

  /** An assigned event: the member's whole assignment, owned, after a rebalance. */
  static ObjectNode assignedEvent(ConsumerGroupMetadata meta, Collection<TopicPartition> owned) {
    ObjectNode ev = MAPPER.createObjectNode();
    ev.put("kind", "assigned");
    ObjectNode claims = ev.putObject("claims");
    claims.put("generation", meta.generationId());
    claims.put("member", meta.memberId());
    ObjectNode parts = claims.putObject("partitions");
    owned.stream().sorted(ConsumerInstance::compare)
        .forEach(tp -> (parts.has(tp.topic()) ? (ArrayNode) parts.get(tp.topic()) : parts.putArray(tp.topic())).add(tp.partition()));
    return ev;
  }

  static String text(JsonNode n) {
    return n == null || n.isNull() ? "" : n.asText("");
  }

  static byte[] bytes(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }
}
