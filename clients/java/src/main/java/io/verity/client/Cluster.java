package io.verity.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.utils.AppInfoParser;

/** The cluster hello named, and what the program as a whole answers about it. */
final class Cluster {
  final String brokers;
  /** The transaction-protocol cap: "v1", or "" for the best the client and cluster support. */
  final String txnCap;

  Cluster(String brokers, String txnCap) {
    this.brokers = brokers;
    this.txnCap = txnCap;
  }

  static String clientVersion() {
    return AppInfoParser.getVersion();
  }

  /** Kafka's client speaks KIP-890's protocol from 4.0, when the cluster finalised transaction.version 2. */
  static boolean clientSpeaksV2() {
    String v = clientVersion();
    try {
      return Integer.parseInt(v.substring(0, v.indexOf('.'))) >= 4;
    } catch (RuntimeException e) {
      return false;
    }
  }

  Properties base(String clientId) {
    Properties p = new Properties();
    p.put("bootstrap.servers", brokers);
    p.put("client.id", clientId);
    // Fault tests: a broker that does not answer a connection in 5 s is cut off.
    p.put("socket.connection.setup.timeout.ms", "5000");
    p.put("socket.connection.setup.timeout.max.ms", "5000");
    p.put("metadata.max.age.ms", "5000");
    p.put("reconnect.backoff.max.ms", "1000");
    return p;
  }

  private Admin admin(String clientId) {
    Properties p = base(clientId);
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    return Admin.create(p);
  }

  /** Each topic's partitions, asked again while a topic created a moment ago is unknown, for a minute. */
  JsonNode partitions(JsonNode a) throws Exception {
    List<String> topics = new ArrayList<>();
    for (JsonNode t : a.path("topics")) {
      topics.add(t.asText());
    }
    long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
    try (Admin admin = admin(Wire.text(a.get("client_id")))) {
      while (true) {
        try {
          Map<String, TopicDescription> ds = admin.describeTopics(topics).allTopicNames().get();
          ObjectNode res = Wire.MAPPER.createObjectNode();
          ObjectNode parts = res.putObject("partitions");
          for (String t : topics) {
            ArrayNode ps = parts.putArray(t);
            ds.get(t).partitions().stream().map(TopicPartitionInfo::partition).sorted().forEach(ps::add);
          }
          return res;
        } catch (ExecutionException e) {
          if (!(e.getCause() instanceof RetriableException) || System.nanoTime() > deadline) {
            throw e;
          }
          Thread.sleep(250);
        }
      }
    }
  }

  /** What the client will speak with this cluster within the cap. */
  JsonNode txnProtocol() throws Exception {
    String p = "v1";
    if (clientSpeaksV2()) {
      try (Admin admin = admin("verity-features-p0")) {
        FinalizedVersionRange tv = admin.describeFeatures().featureMetadata().get().finalizedFeatures().get("transaction.version");
        if (tv != null && tv.maxVersionLevel() >= 2) {
          p = "v2";
        }
      }
    }
    if (p.equals("v2") && txnCap.equals("v1")) {
      throw new IllegalStateException("Kafka's Java client speaks the transaction protocol the cluster finalised (transaction.version 2): "
          + "it cannot be kept to v1; run the cluster with transaction.version=1 instead");
    }
    ObjectNode res = Wire.MAPPER.createObjectNode();
    res.put("txn_protocol", p);
    return res;
  }

  /**
   * share.configure: sets the share group's configs that a names, with IncrementalAlterConfigs
   * on its GROUP resource (the group need not exist yet).
   */
  JsonNode configureShareGroup(JsonNode a) throws Exception {
    String group = Wire.text(a.get("group"));
    List<AlterConfigOp> ops = new ArrayList<>();
    String start = Wire.text(a.get("start"));
    if (!start.isEmpty()) {
      ops.add(set("share.auto.offset.reset", start));
    }
    if (a.hasNonNull("lock_duration")) {
      ops.add(set("share.record.lock.duration.ms", Long.toString(Wire.duration(a.get("lock_duration"), null).toMillis())));
    }
    int limit = a.path("delivery_limit").asInt(0);
    if (limit > 0) {
      ops.add(set("share.delivery.count.limit", Integer.toString(limit)));
    }
    if (!ops.isEmpty()) {
      try (Admin admin = admin(Wire.text(a.get("client_id")))) {
        admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops)).all().get();
      }
    }
    return null;
  }

  private static AlterConfigOp set(String name, String value) {
    return new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET);
  }

  /**
   * share.start_offsets: the share-partition start offset of each partition of the topics, as the
   * group's coordinator reports it (DescribeShareGroupOffsets); a partition the group has not
   * initialised is left out.
   */
  JsonNode shareStartOffsets(JsonNode a) throws Exception {
    String group = Wire.text(a.get("group"));
    List<String> topics = new ArrayList<>();
    a.path("topics").forEach(t -> topics.add(t.asText()));
    ObjectNode res = Wire.MAPPER.createObjectNode();
    ObjectNode offsets = res.putObject("offsets");
    try (Admin admin = admin(Wire.text(a.get("client_id")))) {
      Collection<TopicPartition> tps = new ArrayList<>();
      for (TopicDescription d : admin.describeTopics(topics).allTopicNames().get().values()) {
        d.partitions().forEach(p -> tps.add(new TopicPartition(d.name(), p.partition())));
      }
      Map<TopicPartition, SharePartitionOffsetInfo> got = admin.listShareGroupOffsets(
          Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(tps))).partitionsToOffsetInfo(group).get();
      got.forEach((tp, info) -> {
        if (info == null || info.startOffset() < 0) {
          return; // not initialised: the group has not read the partition yet
        }
        ObjectNode t = offsets.has(tp.topic()) ? (ObjectNode) offsets.get(tp.topic()) : offsets.putObject(tp.topic());
        t.put(Integer.toString(tp.partition()), info.startOffset());
      });
    }
    return res;
  }
}
