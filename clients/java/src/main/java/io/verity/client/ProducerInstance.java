package io.verity.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A plain producer. Its callbacks run on the client's I/O thread and must not block: they queue
 * each answer, and a thread of the instance's writes what is queued as one answers event.
 */
final class ProducerInstance {
  private final String handle;
  private final Wire wire;
  private final KafkaProducer<byte[], byte[]> producer;
  private final boolean acksAll;
  private final boolean noRetries;
  private final Metric retries;
  private final LinkedBlockingQueue<ObjectNode> answers = new LinkedBlockingQueue<>();
  private final Thread flusher;
  private final ObjectNode opened;
  private volatile boolean closing;

  /** Kafka's settings from the spec; what Kafka's client cannot do goes into warnings. */
  static Properties config(Cluster cluster, JsonNode a, List<String> warnings) {
    Properties p = cluster.base(Wire.text(a.get("client_id")));
    JsonNode s = a.path("settings");
    p.put(ProducerConfig.ACKS_CONFIG, s.path("acks").asText("all"));
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, Boolean.toString(s.path("idempotent").asBoolean()));
    p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, Integer.toString(s.path("max_in_flight").asInt(5)));
    p.put(ProducerConfig.RETRIES_CONFIG, Integer.toString(s.path("retries").asInt(Integer.MAX_VALUE)));
    Duration backoff = Wire.duration(a.get("retry_backoff"), Duration.ofMillis(100));
    Duration request = Wire.duration(a.get("request_timeout"), Duration.ofSeconds(30));
    Duration linger = Wire.duration(a.get("linger"), Duration.ZERO);
    Duration delivery = Wire.duration(a.get("delivery_timeout"), Duration.ofMinutes(2));
    if (delivery.compareTo(request.plus(linger)) < 0) {
      // Kafka refuses delivery.timeout.ms below linger.ms + request.timeout.ms.
      warnings.add("delivery_timeout " + delivery.toMillis() + "ms raised to linger + request_timeout, "
          + request.plus(linger).toMillis() + "ms, as Kafka's client requires");
      delivery = request.plus(linger);
    }
    p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, Long.toString(backoff.toMillis()));
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(request.toMillis()));
    p.put(ProducerConfig.LINGER_MS_CONFIG, Long.toString(linger.toMillis()));
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(delivery.toMillis()));
    if (a.path("batch_bytes").asInt(0) > 0) {
      p.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(a.path("batch_bytes").asInt()));
    }
    if (a.path("batch_messages").asInt(0) > 0) {
      warnings.add("batch_messages=" + a.path("batch_messages").asInt() + " ignored: Kafka's client bounds batches by bytes (batch_bytes) and linger only");
    }
    String compression = a.path("compression").asText("none");
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression.isEmpty() ? "none" : compression);
    // A send waits at most this long for room in a full buffer (or for metadata): then it
    // fails the record, never sent, rather than holding every other instance's requests back.
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    return p;
  }

  /** A topic's partitions, asked again while the topic is unknown, for a minute. */
  static List<PartitionInfo> partitionsFor(KafkaProducer<byte[], byte[]> producer, String topic) throws InterruptedException {
    long deadline = System.nanoTime() + java.time.Duration.ofMinutes(1).toNanos();
    while (true) {
      try {
        return producer.partitionsFor(topic);
      } catch (org.apache.kafka.common.errors.TimeoutException e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(250);
      }
    }
  }

  static ProducerInstance open(Cluster cluster, String handle, Wire wire, JsonNode a) throws Exception {
    List<String> warnings = new ArrayList<>();
    Properties p = config(cluster, a, warnings);
    KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
    try {
      ObjectNode res = Wire.MAPPER.createObjectNode();
      ObjectNode parts = res.putObject("partitions");
      for (JsonNode t : a.path("topics")) {
        ArrayNode ps = parts.putArray(t.asText());
        List<PartitionInfo> infos = partitionsFor(producer, t.asText());
        infos.stream().map(PartitionInfo::partition).sorted().forEach(ps::add);
      }
      if (!warnings.isEmpty()) {
        ArrayNode w = res.putArray("warnings");
        warnings.forEach(w::add);
      }
      return new ProducerInstance(handle, wire, producer, a, res);
    } catch (Exception e) {
      producer.close(Duration.ZERO);
      throw e;
    }
  }

  private ProducerInstance(String handle, Wire wire, KafkaProducer<byte[], byte[]> producer, JsonNode a, ObjectNode opened) {
    this.handle = handle;
    this.wire = wire;
    this.producer = producer;
    this.opened = opened;
    JsonNode s = a.path("settings");
    this.acksAll = s.path("acks").asText("all").equals("all") || s.path("acks").asText().equals("-1");
    this.noRetries = s.path("retries").asInt(1) == 0;
    this.retries = metric(producer.metrics(), "record-retry-total");
    this.flusher = Main.daemon(this::flush, "verity-" + handle + "-answers");
    this.flusher.start();
  }

  static Metric metric(Map<MetricName, ? extends Metric> ms, String name) {
    for (Map.Entry<MetricName, ? extends Metric> e : ms.entrySet()) {
      if (e.getKey().name().equals(name) && e.getKey().group().equals("producer-metrics")) {
        return e.getValue();
      }
    }
    return null;
  }

  private double retries() {
    if (retries == null) {
      return -1;
    }
    Object v = retries.metricValue();
    return v instanceof Number n ? n.doubleValue() : -1;
  }

  ObjectNode opened() {
    return opened;
  }

  void send(JsonNode a) {
    long tag = a.path("tag").asLong();
    JsonNode r = a.path("record");
    ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(r.path("topic").asText(), r.path("partition").asInt(),
        r.has("key") ? Wire.bytes(r.path("key").asText()) : null, Wire.bytes(r.path("value").asText()));
    double before = retries();
    Thread self = Thread.currentThread();
    AtomicBoolean returned = new AtomicBoolean();
    try {
      producer.send(rec, (md, e) -> {
        // A callback run by send itself, before it returned, failed the record before it
        // joined a batch: it was never sent.
        boolean appended = !(Thread.currentThread() == self && !returned.get());
        boolean once = noRetries || (before >= 0 && retries() == before);
        Outcomes.Outcome o = Outcomes.classify(e, appended, once, acksAll);
        ObjectNode n = Wire.MAPPER.createObjectNode();
        n.put("tag", tag);
        n.put("partition", md != null ? md.partition() : rec.partition());
        n.put("offset", e == null && md != null && md.hasOffset() ? md.offset() : -1);
        n.put("outcome", o.type());
        if (e != null) {
          n.set("error", Outcomes.error(e));
          n.put("rule", o.rule());
          n.put("why", o.why());
        }
        answers.add(n);
      });
    } catch (RuntimeException e) {
      // send itself threw (a closed producer, an interrupted wait): never sent.
      ObjectNode n = Wire.MAPPER.createObjectNode();
      n.put("tag", tag);
      n.put("partition", rec.partition());
      n.put("offset", -1);
      n.put("outcome", Outcomes.FAIL);
      n.set("error", Outcomes.error(e));
      n.put("rule", "not-sent");
      n.put("why", "KafkaProducer.send threw: the record was never sent");
      answers.add(n);
    } finally {
      returned.set(true);
    }
  }

  private void flush() {
    List<ObjectNode> batch = new ArrayList<>();
    try {
      while (true) {
        batch.add(answers.take());
        answers.drainTo(batch, 4096);
        if (closing) {
          return;
        }
        ArrayNode as = Wire.MAPPER.createArrayNode();
        batch.forEach(as::add);
        double r = retries();
        wire.answers(handle, as, r > 0 ? (long) r : 0);
        batch.clear();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  void close() {
    closing = true;
    producer.close(Duration.ofSeconds(10));
    flusher.interrupt();
  }
}
