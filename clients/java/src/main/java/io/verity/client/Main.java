package io.verity.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Kafka's Java client behind Verity's remote client protocol (docs/client-protocol.md): requests
 * on standard input, one JSON object per line; replies and events on standard output. Each
 * instance (producer, transactional producer, consumer, member, share consumer) runs its requests in order on a
 * thread of its own, so that one instance's wait holds no other back. The program exits when its
 * input ends, closing every instance still open.
 */
public final class Main {
  static final int VERSION = 1;

  public static void main(String[] args) throws Exception {
    if (args.length == 1 && args[0].equals("--table")) {
      Outcomes.printTable(System.out);
      return;
    }
    System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", System.getProperty("verity.log", "warn"));
    System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
    new Main().serve();
  }

  private final Wire wire = new Wire(System.out);
  private final Map<String, Instance> instances = new HashMap<>();
  private final ExecutorService global = Executors.newCachedThreadPool(r -> daemon(r, "verity-global"));
  private Cluster cluster;

  static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  void serve() throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
    String line;
    while ((line = in.readLine()) != null) {
      handle(line);
    }
    for (Instance inst : instances.values()) {
      inst.close(0);
    }
    for (Instance inst : instances.values()) {
      inst.awaitClosed(20, TimeUnit.SECONDS);
    }
    global.shutdownNow();
    System.out.flush();
    System.exit(0);
  }

  private void handle(String line) {
    JsonNode req;
    try {
      req = Wire.MAPPER.readTree(line);
    } catch (Exception e) {
      wire.refuse(0, "bad_request", "not a request: " + e.getMessage());
      return;
    }
    long id = req.path("id").asLong(0);
    if (req.path("v").asInt(0) != VERSION) {
      wire.refuse(id, "bad_version", "version " + req.path("v").asInt(0) + ": this program speaks " + VERSION);
      return;
    }
    String op = req.path("op").asText("");
    String handle = req.path("handle").asText("");
    JsonNode a = req.path("args");
    switch (op) {
      case "hello":
        hello(id, a);
        return;
      case "partitions":
      case "txn_protocol":
      case "share.configure":
      case "share.start_offsets":
        if (cluster == null) {
          wire.refuse(id, "no_hello", op + " before hello");
          return;
        }
        global.submit(() -> {
          try {
            wire.reply(id, global(op, a));
          } catch (Exception e) {
            wire.error(id, e, false);
          }
        });
        return;
      default:
    }
    if (!Instance.OPS.contains(op)) {
      wire.refuse(id, "unknown_op", "unknown op \"" + op + "\"");
      return;
    }
    if (cluster == null) {
      wire.refuse(id, "no_hello", op + " before hello");
      return;
    }
    if (handle.isEmpty()) {
      wire.refuse(id, "bad_request", op + " names no instance (handle)");
      return;
    }
    Instance inst = instances.get(handle);
    boolean opens = op.endsWith(".open");
    if (opens && inst != null) {
      wire.refuse(id, "bad_request", "instance " + handle + " is open already");
      return;
    }
    if (opens) {
      inst = new Instance(handle, cluster, wire);
      instances.put(handle, inst);
    } else if (inst == null) {
      wire.refuse(id, "unknown_instance", "no instance " + handle + " is open");
      return;
    }
    if (op.equals("close")) {
      instances.remove(handle);
      inst.close(id);
      return;
    }
    inst.submit(id, op, a);
  }

  private JsonNode global(String op, JsonNode a) throws Exception {
    switch (op) {
      case "partitions":
        return cluster.partitions(a);
      case "txn_protocol":
        return cluster.txnProtocol();
      case "share.configure":
        return cluster.configureShareGroup(a);
      default:
        return cluster.shareStartOffsets(a);
    }
  }

  private void hello(long id, JsonNode a) {
    if (cluster != null) {
      wire.refuse(id, "bad_request", "hello twice");
      return;
    }
    boolean speaks = false;
    for (JsonNode v : a.path("versions")) {
      speaks |= v.asInt() == VERSION;
    }
    if (!speaks) {
      wire.refuse(id, "bad_version", "versions " + a.path("versions") + ": this program speaks " + VERSION);
      return;
    }
    StringBuilder brokers = new StringBuilder();
    for (JsonNode b : a.path("brokers")) {
      if (brokers.length() > 0) {
        brokers.append(',');
      }
      brokers.append(b.asText());
    }
    cluster = new Cluster(brokers.toString(), a.path("txn_protocol_cap").asText(""));
    ObjectNode res = Wire.MAPPER.createObjectNode();
    res.put("version", VERSION);
    ObjectNode client = res.putObject("client");
    client.put("name", "java");
    client.put("library", "org.apache.kafka:kafka-clients");
    client.put("version", Cluster.clientVersion());
    wire.reply(id, res);
  }
}
