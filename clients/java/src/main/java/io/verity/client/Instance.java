package io.verity.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.config.ConfigException;

/**
 * One instance and the thread that runs its requests in order. The queue is bounded: a producer
 * whose client pushes back fills it, and then the program stops reading its input, which is the
 * backpressure Verity's writes feel.
 */
final class Instance {
  /** The requests an instance takes. */
  static final java.util.Set<String> OPS = java.util.Set.of("producer.open", "producer.send", "txn.open", "txn.begin",
      "txn.send", "txn.commit", "txn.abort", "txn.ready", "close", "consumer.open", "consumer.poll", "consumer.recorded",
      "consumer.seek", "member.open", "member.poll", "member.add_offsets", "member.rewind", "share.open", "share.poll",
      "share.ack", "share.commit");

  private record Req(long id, String op, JsonNode args) {}

  private static final Req CLOSE = new Req(-1, "close", null);

  private final String handle;
  private final Cluster cluster;
  private final Wire wire;
  private final BlockingQueue<Req> queue = new ArrayBlockingQueue<>(1024);
  private final CountDownLatch closed = new CountDownLatch(1);
  private ProducerInstance producer;
  private TxnInstance txn;
  private ConsumerInstance consumer;
  private MemberInstance member;
  private ShareInstance share;

  Instance(String handle, Cluster cluster, Wire wire) {
    this.handle = handle;
    this.cluster = cluster;
    this.wire = wire;
    Main.daemon(this::run, "verity-" + handle).start();
  }

  void submit(long id, String op, JsonNode args) {
    try {
      queue.put(new Req(id, op, args));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  void close(long id) {
    submit(id == 0 ? CLOSE.id() : id, "close", null);
  }

  void awaitClosed(long t, TimeUnit u) {
    try {
      closed.await(t, u);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void run() {
    try {
      while (true) {
        Req r = queue.take();
        if (r.op().equals("close")) {
          closeAll();
          if (r.id() > 0) {
            wire.reply(r.id(), null);
          }
          return;
        }
        try {
          handle(r);
        } catch (Exception e) {
          boolean opens = r.op().endsWith(".open");
          if (r.op().equals("producer.send") || r.op().equals("consumer.recorded")) {
            System.err.println("verity-java-client: " + r.op() + " on " + handle + ": " + e);
          } else if (e instanceof IllegalArgumentException || e instanceof UnsupportedOperationException) {
            wire.reply(r.id(), null, bad(r.op() + ": " + e.getMessage(), opens));
          } else {
            // An open the client refuses for its configuration fails the same way every time.
            wire.error(r.id(), e, opens && Outcomes.cause(e) instanceof ConfigException);
          }
          if (opens) {
            // A failed open leaves nothing to close: the instance's thread ends.
            closeAll();
            return;
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      closed.countDown();
    }
  }

  private static com.fasterxml.jackson.databind.node.ObjectNode bad(String text, boolean permanent) {
    var e = Wire.MAPPER.createObjectNode();
    e.put("name", "bad_request");
    e.put("text", text);
    if (permanent) {
      e.put("permanent", true);
    }
    return e;
  }

  private void closeAll() {
    if (producer != null) {
      producer.close();
    }
    if (txn != null) {
      txn.close();
    }
    if (consumer != null) {
      consumer.close();
    }
    if (member != null) {
      member.close();
    }
    if (share != null) {
      share.close();
    }
  }

  private TxnInstance txnOf(String op) {
    if (member != null) {
      return member.txn();
    }
    if (txn == null) {
      throw new UnsupportedOperationException("instance " + handle + " is not a transactional producer or a member");
    }
    return txn;
  }

  private void handle(Req r) throws Exception {
    JsonNode a = r.args() == null ? Wire.MAPPER.createObjectNode() : r.args();
    switch (r.op()) {
      case "producer.open":
        producer = ProducerInstance.open(cluster, handle, wire, a);
        wire.reply(r.id(), producer.opened());
        return;
      case "producer.send":
        if (producer == null) {
          throw new UnsupportedOperationException("not a producer");
        }
        producer.send(a);
        return;
      case "txn.open":
        txn = TxnInstance.open(cluster, a);
        wire.reply(r.id(), null);
        return;
      case "txn.begin":
      case "txn.send":
      case "txn.commit":
      case "txn.abort":
      case "txn.ready":
        txnOf(r.op()).handle(r.id(), r.op(), a, wire);
        return;
      case "consumer.open":
        consumer = ConsumerInstance.open(cluster, a);
        wire.reply(r.id(), null);
        return;
      case "consumer.poll":
        wire.reply(r.id(), consumer().poll(a));
        return;
      case "consumer.recorded":
        consumer().recorded(a);
        return;
      case "consumer.seek":
        consumer().seek(a);
        wire.reply(r.id(), null);
        return;
      case "member.open":
        member = MemberInstance.open(cluster, a);
        wire.reply(r.id(), null);
        return;
      case "member.poll":
      case "member.add_offsets":
      case "member.rewind":
        if (member == null) {
          throw new UnsupportedOperationException("not a member");
        }
        member.handle(r.id(), r.op(), a, wire);
        return;
      case "share.open":
        share = ShareInstance.open(cluster, a);
        wire.reply(r.id(), null);
        return;
      case "share.poll":
        wire.reply(r.id(), share().poll(a));
        return;
      case "share.ack":
        share().ack(a);
        wire.reply(r.id(), null);
        return;
      case "share.commit":
        wire.reply(r.id(), share().commit(a));
        return;
      default:
        throw new UnsupportedOperationException("not an instance's request");
    }
  }

  private ShareInstance share() {
    if (share == null) {
      throw new UnsupportedOperationException("not a share consumer");
    }
    return share;
  }

  private ConsumerInstance consumer() {
    if (consumer == null) {
      throw new UnsupportedOperationException("not a consumer");
    }
    return consumer;
  }
}
