package harness_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
	"github.com/verity-kafka/verity/kafkatoxic"
	"github.com/verity-kafka/verity/metrics"
)

// TestNodeAndLinkControls exercises pause/resume, disk loss, kills and the links' rule, toxics,
// replication cut apart from the quorum (and the ELR it leaves), and an isolated leader's own
// view, on one cluster.
func TestNodeAndLinkControls(t *testing.T) {
	c := harnesstest.Start(t, harness.Spec{Nodes: 3})
	ctx := withTimeout(t, 12*time.Minute)
	const tp = "controls"
	require.NoError(t, c.CreateTopic(ctx, harness.TopicSpec{Name: tp, Partitions: 1, RF: 3, MinISR: 2}))
	p0, err := c.DescribePartition(ctx, tp, 0)
	require.NoError(t, err)
	leader, fs := int(p0.Leader), followers(p0)
	prod := newProducer(t, c, tp, 0, sarama.WaitForAll)
	acks := prod.mustSend(30)
	require.ErrorContains(t, c.PowerCut(ctx, leader), "Spec.PowerLoss", "no power cut without the lazy filesystem")

	t.Run("pause freezes a follower out of the ISR, resume brings it back", func(t *testing.T) {
		require.NoError(t, c.Pause(ctx, fs[0]))
		out, err := c.WaitPartition(ctx, tp, 0, func(p harness.PartitionState) bool {
			// A follower that has every record is in sync however long it is frozen: writes
			// make it fall behind. Until the ISR drops it an acks=all send may time out, the
			// longer the busier the machine; only the acknowledged ones are kept.
			ok, _ := prod.send(1)
			acks = append(acks, ok...)
			return !has(p.ISR, fs[0])
		})
		require.NoError(t, err)
		t.Logf("paused %d: ISR %v", fs[0], out.ISR)
		// The leader's JMX gauges say what the ISR says; the paused node answers nothing.
		got := waitMetrics(t, c, leader, func(m map[metrics.Name]float64) bool { return m[metrics.UnderReplicated] > 0 })
		require.Zero(t, got[metrics.UnderMinISR], "ISR %v is not below min ISR 2", out.ISR)
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = c.ReadMetrics(pctx, fs[0])
		cancel()
		require.Error(t, err, "a paused node's agent must not answer")
		require.NoError(t, c.Resume(ctx, fs[0]))
		back, err := c.WaitPartition(ctx, tp, 0, func(p harness.PartitionState) bool { return has(p.ISR, fs[0]) })
		require.NoError(t, err)
		t.Logf("resumed %d: ISR %v", fs[0], back.ISR)
		waitMetrics(t, c, leader, func(m map[metrics.Name]float64) bool { return m[metrics.UnderReplicated] == 0 })
		active := 0.0
		for _, id := range c.Controllers() {
			m, err := c.ReadMetrics(ctx, id)
			require.NoError(t, err)
			active += m[metrics.ActiveController]
		}
		require.Equal(t, 1.0, active, "exactly one active controller")
	})

	t.Run("wipe disk: the node comes back empty and refills", func(t *testing.T) {
		victim := fs[1]
		require.NoError(t, c.WipeDisk(ctx, victim))
		// The node formats empty storage again (its log says so a second time), registers, fetches
		// everything from the leader and rejoins the ISR.
		var size int64
		formats := 0
		back, err := c.WaitPartition(ctx, tp, 0, func(p harness.PartitionState) bool {
			log, err := c.NodeLog(ctx, victim)
			require.NoError(t, err)
			formats = strings.Count(log, "Formatting metadata directory")
			size = c.ReplicaSize(ctx, victim, tp, 0)
			return formats == 2 && has(p.ISR, victim) && size > 0
		})
		require.NoError(t, err, "wiped node %d should format anew (%d formats seen), refill (%d bytes) and rejoin the ISR", victim, formats, size)
		t.Logf("wiped node %d: storage formatted anew, refilled to %d bytes, ISR %v", victim, size, back.ISR)
	})

	// refusedInto checks every link into node id: refused, but for those in accepting.
	refusedInto := func(t *testing.T, id int, refused bool, accepting ...harness.Link) {
		t.Helper()
		for _, l := range c.Links() {
			if l.To == id {
				r, err := c.Refused(l)
				require.NoError(t, err)
				require.Equal(t, refused && !slices.Contains(accepting, l), r, "link %s into node %d: refused", l, id)
			}
		}
	}

	t.Run("a killed node's address refuses at once, as a crashed process's host does", func(t *testing.T) {
		victim := fs[0]
		addr := c.Bootstrap()[slices.Index(c.Brokers(), victim)]
		require.NoError(t, c.Kill(ctx, victim))
		into := func(refused bool, accepting ...harness.Link) {
			t.Helper()
			refusedInto(t, victim, refused, accepting...)
		}
		into(true)
		// Toxiproxy dials the upstream inside its accept loop: with the proxy still listening,
		// one dial to the dead container could hang and leave every later connection
		// unanswered in the backlog (seen in runs, not on every kill). Refusing proxies close
		// each connection at once.
		for i := range 2 {
			conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				var ne net.Error
				require.False(t, errors.As(err, &ne) && ne.Timeout(), "connection %d to killed node %d: the dial timed out (%v): a black hole, not a crash", i, victim, err)
				t.Logf("connection %d to killed node %d (%s): %v", i, victim, addr, err)
				continue
			}
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "connection %d to killed node %d: nothing answered and nothing closed it (%v): clients would see a black hole, not a crash", i, victim, err)
			t.Logf("connection %d to killed node %d (%s): %v", i, victim, addr, err)
		}
		// The one rule (acceptsWhen): a link into a stopped node refuses whatever heals it, and
		// a link cut to refuse refuses whatever starts its node, until it is healed.
		for _, l := range c.Links() {
			if l.To == victim {
				require.NoError(t, c.Heal(ctx, l))
			}
		}
		into(true)
		require.NoError(t, c.HealAll(ctx))
		into(true)
		held := harness.Link{From: leader, To: victim}
		require.NoError(t, c.Cut(ctx, held, harness.CutRefuse))
		require.NoError(t, c.Start(ctx, victim))
		open := slices.DeleteFunc(c.Links(), func(l harness.Link) bool { return l == held })
		into(true, open...)
		require.NoError(t, c.Heal(ctx, held))
		into(false)
		_, err := c.WaitPartition(ctx, tp, 0, func(p harness.PartitionState) bool { return has(p.ISR, victim) })
		require.NoError(t, err, "node %d started again should rejoin the ISR", victim)
	})

	// A whole clean stop, and that it keeps the node's links accepting, is checked by nemesis'
	// clean-stop step on its cluster: a clean shutdown is slow under load, and once is enough.
	t.Run("a stop cut short by its context ends as a kill, and the node starts again", func(t *testing.T) {
		victim := fs[1]
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		err := c.Stop(short, victim)
		require.ErrorContains(t, err, "killed it instead", "a clean shutdown takes seconds; 200 ms cannot be enough")
		require.Equal(t, harness.NodeStopped, c.NodeStates()[victim], "the node is down and known to be")
		require.NoError(t, c.Start(ctx, victim))
		_, err = c.WaitPartition(ctx, tp, 0, func(p harness.PartitionState) bool { return has(p.ISR, victim) })
		require.NoError(t, err, "node %d started again should rejoin the ISR", victim)
		refusedInto(t, victim, false)
		// The latency subtest next measures a baseline: it starts on a settled cluster.
		require.NoError(t, c.WaitHealthy(ctx))
	})

	t.Run("latency toxic on the client link slows produce by at least its delay", func(t *testing.T) {
		const delay = 300 * time.Millisecond
		// latencies sends 7 records one at a time and returns their round trips, sorted.
		latencies := func() []time.Duration {
			var ds []time.Duration
			for range 7 {
				start := time.Now()
				acks = append(acks, prod.mustSend(1)...)
				ds = append(ds, time.Since(start))
			}
			slices.Sort(ds)
			return ds
		}
		median := func(ds []time.Duration) time.Duration { return ds[len(ds)/2] }
		latencies() // warm the connections up after the faults above
		base := median(latencies())
		link := harness.Link{From: harness.ClientEndpoint, To: leader}
		name, err := c.AddToxic(ctx, link, harness.Latency("downstream", delay, 0))
		require.NoError(t, err)
		under := latencies()
		require.NoError(t, c.RemoveToxic(ctx, link, name))
		t.Logf("median produce latency: %s before, %s (fastest %s) with a %s toxic on %s", base, median(under), under[0], delay, link)
		require.GreaterOrEqual(t, under[0], delay, "every round trip under the toxic carries its delay")
		// Without the toxic a round trip quicker than its delay comes: at once on a quiet
		// machine, within the deadline on a busy one (a round trip's time is no promise there).
		fastest, deadline := time.Duration(math.MaxInt64), time.Now().Add(2*time.Minute)
		for fastest >= delay && time.Now().Before(deadline) {
			fastest = min(fastest, latencies()[0])
		}
		require.Less(t, fastest, delay, "removing the toxic should remove its delay: no round trip in 2 minutes was quicker than %s "+
			"(the fastest took %s; the median before the toxic %s)", delay, fastest, base)
	})

	t.Run("every toxic type goes on a link and comes off", func(t *testing.T) {
		link := harness.Link{From: fs[0], To: leader}
		for _, tx := range []harness.Toxic{
			harness.Latency("upstream", 50*time.Millisecond, 10*time.Millisecond),
			harness.Bandwidth("downstream", 512),
			harness.Timeout("upstream", 5*time.Second),
			harness.ResetPeer("upstream", 5*time.Second),
			harness.SlowClose("downstream", time.Second),
			harness.LimitData("downstream", 1<<20),
		} {
			name, err := c.AddToxic(ctx, link, tx)
			require.NoError(t, err, "adding %s", tx.Type)
			require.NoError(t, c.RemoveToxic(ctx, link, name), "removing %s", tx.Type)
		}
	})

	t.Run("a topic is created though the broker the admin client asks refuses clients", func(t *testing.T) {
		// The subtests above restarted two brokers; the fallback needs them answering clients,
		// which a healthy cluster's brokers do.
		require.NoError(t, c.WaitHealthy(ctx))
		adm, err := c.Admin()
		require.NoError(t, err)
		ctrl, err := adm.Controller()
		require.NoError(t, err)
		link := harness.Link{From: harness.ClientEndpoint, To: int(ctrl.ID())}
		require.NoError(t, c.Cut(ctx, link, harness.CutRefuse))
		// The link comes back a few seconds on, so that the wait for the new partition's
		// leader ends even when that leader is the cut broker; the request itself must have
		// gone through another broker by then, or CreateTopic has already failed.
		healed := make(chan error, 1)
		go func() {
			time.Sleep(3 * time.Second)
			healed <- c.Heal(context.WithoutCancel(ctx), link)
		}()
		created := c.CreateTopic(ctx, harness.TopicSpec{Name: "controls-fallback", Partitions: 1, RF: 3, MinISR: 2})
		require.NoError(t, <-healed, "the link comes back whatever CreateTopic did, so that the next subtests start on a whole cluster")
		require.NoError(t, created, "broker %d refuses clients", ctrl.ID())
	})

	t.Run("an open transaction holds the LSO below the high watermark", func(t *testing.T) {
		const txTopic = "controls-txn"
		require.NoError(t, c.CreateTopic(ctx, harness.TopicSpec{Name: txTopic, Partitions: 1, RF: 3, MinISR: 2}))
		cfg := harness.SaramaConfig("controls-txn")
		cfg.Producer.Transaction.ID = "controls-txn"
		cfg.Producer.Idempotent = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Return.Successes = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		tp, err := sarama.NewSyncProducer(c.Bootstrap(), cfg)
		require.NoError(t, err)
		defer tp.Close()
		require.NoError(t, tp.BeginTxn())
		_, first, err := tp.SendMessage(&sarama.ProducerMessage{Topic: txTopic, Value: sarama.StringEncoder("open")})
		require.NoError(t, err)
		open, err := c.Offsets(ctx, txTopic, 0)
		require.NoError(t, err)
		require.Equal(t, first, open.LastStable, "the LSO stops at the open transaction's first offset")
		require.Greater(t, open.HighWatermark, open.LastStable)
		require.NoError(t, tp.CommitTxn())
		done, err := c.WaitOffsets(ctx, txTopic, 0, func(o harness.Offsets) bool { return o.LastStable == o.HighWatermark })
		require.NoError(t, err, "after the commit the LSO reaches the HW")
		t.Logf("open transaction: earliest %d, LSO %d, HW %d; committed: LSO %d, HW %d (the marker takes an offset)",
			open.Earliest, open.LastStable, open.HighWatermark, done.LastStable, done.HighWatermark)
	})

	t.Run("the Kafka request toxic drops one Produce, holds another past its client's giving up, and loses a third's answer", func(t *testing.T) {
		const rt = "controls-requests"
		require.NoError(t, c.CreateTopic(ctx, harness.TopicSpec{Name: rt, Partitions: 1, RF: 3, MinISR: 2}))
		p, err := c.DescribePartition(ctx, rt, 0)
		require.NoError(t, err)
		cfg := harness.SaramaConfig("controls-requests")
		cfg.Producer.RequiredAcks, cfg.Producer.Return.Successes = sarama.WaitForAll, true
		cfg.Producer.Retry.Max, cfg.Producer.Timeout, cfg.Net.ReadTimeout = 0, 2*time.Second, 3*time.Second
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		// A producer per send: one whose request went unanswered has given up its connection.
		send := func(v string) error {
			prod, err := sarama.NewSyncProducer(c.Bootstrap(), cfg)
			require.NoError(t, err)
			defer prod.Close()
			_, _, err = prod.SendMessage(&sarama.ProducerMessage{Topic: rt, Value: sarama.StringEncoder(v)})
			return err
		}
		require.NoError(t, send("warm"))
		link := harness.Link{From: harness.ClientEndpoint, To: int(p.Leader)}
		produce := int16(0) // Kafka's ApiKey of Produce

		name, err := c.AddToxic(ctx, link, harness.KafkaRequest(&kafkatoxic.Toxic{Action: kafkatoxic.Drop, Request: kafkatoxic.Request{Key: produce}, Nth: 1}))
		require.NoError(t, err)
		require.Error(t, send("dropped"), "the broker never saw the request: no answer")
		require.NoError(t, send("after-drop"), "only the first Produce is dropped")
		require.NoError(t, c.RemoveToxic(ctx, link, name))

		name, err = c.AddToxic(ctx, link, harness.KafkaRequest(&kafkatoxic.Toxic{Action: kafkatoxic.Hold, Request: kafkatoxic.Request{Key: produce}, Nth: 1}))
		require.NoError(t, err)
		require.Error(t, send("held"), "the client gives up on a held request")
		require.NoError(t, c.RemoveToxic(ctx, link, name), "removing the toxic releases the request")

		// The held request reaches the broker after its client gave up on it: appended, late.
		_, err = c.WaitOffsets(ctx, rt, 0, func(o harness.Offsets) bool { return o.HighWatermark >= 3 })
		require.NoError(t, err, "the released request is appended")
		require.Equal(t, map[int64]string{0: "warm", 1: "after-drop", 2: "held"}, readAll(t, ctx, c, rt, 0))

		// drop-response: the broker carries the request out, and the connection that would have
		// brought its answer is closed behind it.
		name, err = c.AddToxic(ctx, link, harness.KafkaRequest(&kafkatoxic.Toxic{Action: kafkatoxic.DropResponse, Request: kafkatoxic.Request{Key: produce}, Nth: 1}))
		require.NoError(t, err)
		require.Error(t, send("unanswered"), "the client hears nothing back: its connection closes")
		require.NoError(t, c.RemoveToxic(ctx, link, name))
		_, err = c.WaitOffsets(ctx, rt, 0, func(o harness.Offsets) bool { return o.HighWatermark >= 4 })
		require.NoError(t, err, "the request whose answer was lost was appended")
		require.Equal(t, map[int64]string{0: "warm", 1: "after-drop", 2: "held", 3: "unanswered"}, readAll(t, ctx, c, rt, 0))
	})

	t.Run("a held EndTxn released into the producer's next transaction ends it early (KAFKA-17754, protocol v1)", func(t *testing.T) {
		const xt = "controls-late-endtxn"
		require.NoError(t, c.CreateTopic(ctx, harness.TopicSpec{Name: xt, Partitions: 1, RF: 3, MinISR: 2}))
		cfg := harness.SaramaConfig("controls-late-endtxn")
		cfg.Producer.Transaction.ID = "controls-late-endtxn"
		cfg.Producer.Idempotent, cfg.Producer.RequiredAcks, cfg.Producer.Return.Successes = true, sarama.WaitForAll, true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Timeout, cfg.Net.ReadTimeout = 2*time.Second, 4*time.Second
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		client, err := sarama.NewClient(c.Bootstrap(), cfg)
		require.NoError(t, err)
		defer client.Close()
		coord, err := client.TransactionCoordinator(cfg.Producer.Transaction.ID)
		require.NoError(t, err)
		prod, err := sarama.NewSyncProducerFromClient(client)
		require.NoError(t, err)
		defer prod.Close()
		send := func(v string) {
			_, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: xt, Value: sarama.StringEncoder(v)})
			require.NoError(t, err)
		}

		require.NoError(t, prod.BeginTxn())
		send("t1")
		link := harness.Link{From: harness.ClientEndpoint, To: int(coord.ID())}
		endTxn := int16(26) // Kafka's ApiKey of EndTxn
		name, err := c.AddToxic(ctx, link, harness.KafkaRequest(&kafkatoxic.Toxic{Action: kafkatoxic.Hold, Request: kafkatoxic.Request{Key: endTxn}, Nth: 1}))
		require.NoError(t, err)
		require.NoError(t, prod.CommitTxn(), "the client gives up on the held EndTxn and commits with its retry")
		require.NoError(t, prod.BeginTxn())
		send("t2")
		require.NoError(t, c.RemoveToxic(ctx, link, name), "the heal releases the first EndTxn(commit)")
		_, err = c.WaitOffsets(ctx, xt, 0, func(o harness.Offsets) bool { return o.LastStable == o.HighWatermark })
		require.NoError(t, err, "the released commit ended the open transaction: the LSO reaches the high watermark")
		require.Error(t, prod.AbortTxn(), "the transaction its client means to abort is already committed")

		rc := harness.SaramaConfig("controls-late-endtxn-read")
		rc.Consumer.IsolationLevel = sarama.ReadCommitted
		cons, err := sarama.NewConsumer(c.Bootstrap(), rc)
		require.NoError(t, err)
		defer cons.Close()
		pc, err := cons.ConsumePartition(xt, 0, sarama.OffsetOldest)
		require.NoError(t, err)
		defer pc.Close()
		var seen []string
		for len(seen) < 2 {
			select {
			case m := <-pc.Messages():
				seen = append(seen, string(m.Value))
			case <-ctx.Done():
				t.Fatalf("read_committed read %v: %v", seen, ctx.Err())
			}
		}
		require.Equal(t, []string{"t1", "t2"}, seen, "a read_committed reader sees the record of the transaction its client aborted")
	})

	const elr = "controls-elr"
	t.Run("replication cut alone: the followers leave the ISR into the ELR, the quorum holds", func(t *testing.T) {
		require.NoError(t, c.CreateTopic(ctx, harness.TopicSpec{Name: elr, Partitions: 1, RF: 3, MinISR: 2}))
		p, err := c.DescribePartition(ctx, elr, 0)
		require.NoError(t, err)
		newProducer(t, c, elr, 0, sarama.WaitForAll).mustSend(5)
		lead, fols := int(p.Leader), followers(p)
		for _, f := range fols {
			l := harness.Link{From: f, To: lead}
			ts, err := c.TrafficOf(l)
			require.NoError(t, err)
			require.Equal(t, []harness.Traffic{harness.TrafficReplication, harness.TrafficController}, ts, "combined nodes: %s carries both", l)
			// The followers' Fetch requests go to the leader's INTERNAL listener: cut there,
			// they stop replicating, and their heartbeats and votes still flow.
			require.NoError(t, c.CutTraffic(ctx, l, harness.TrafficReplication, harness.CutBlackhole))
		}
		require.Empty(t, c.Cuts(), "no link is cut whole")
		require.Len(t, c.TrafficCuts(), len(fols))
		// A follower that has every record counts as caught up however long it has not
		// fetched: a write the leader alone takes (acks=1) puts them behind. The leader then
		// drops them from the ISR after replica.lag.time.max.ms, through the controllers; below
		// min.insync.replicas the controller keeps them as eligible.
		newProducer(t, c, elr, 0, sarama.WaitForLocal).mustSend(1)
		shrunk, err := c.WaitPartition(ctx, elr, 0, func(p harness.PartitionState) bool {
			return slices.Equal(p.ISR, []int32{int32(lead)}) && len(p.ELR) > 0
		})
		require.NoError(t, err, "the ISR should shrink to the leader %d and the followers %v go into the ELR", lead, fols)
		t.Logf("replication to %d cut: ISR %v, ELR %v, last known ELR %v (answered by %d)", lead, shrunk.ISR, shrunk.ELR, shrunk.LastKnownELR, shrunk.AnsweredBy)
		for _, e := range shrunk.ELR {
			require.True(t, has([]int32{int32(fols[0]), int32(fols[1])}, int(e)), "ELR %v holds followers %v only", shrunk.ELR, fols)
		}
		reg, err := c.RegisteredBrokers(ctx)
		require.NoError(t, err)
		require.Equal(t, []int32{1, 2, 3}, reg, "no broker is fenced: their controller traffic flows")
		require.Equal(t, []int{1, 2, 3}, c.TrustedBrokers(), "every broker still follows the metadata log")
		for _, f := range fols {
			require.NoError(t, c.HealTraffic(ctx, harness.Link{From: f, To: lead}, harness.TrafficReplication))
		}
		require.Empty(t, c.TrafficCuts())
		back, err := c.WaitPartition(ctx, elr, 0, func(p harness.PartitionState) bool { return len(p.ISR) == 3 && len(p.ELR) == 0 })
		require.NoError(t, err, "healed, the followers rejoin the ISR and leave the ELR")
		t.Logf("healed: ISR %v, ELR %v", back.ISR, back.ELR)
	})

	t.Run("an isolated leader's own view: still the leader, at an epoch the others left", func(t *testing.T) {
		p, err := c.WaitPartition(ctx, elr, 0, func(p harness.PartitionState) bool { return p.Leader >= 0 && len(p.ISR) == 3 })
		require.NoError(t, err)
		old := int(p.Leader)
		require.NoError(t, c.Isolate(ctx, old, harness.CutBlackhole))
		require.NotContains(t, c.TrustedBrokers(), old, "Describe does not ask a broker cut off from the quorum")
		moved, err := c.WaitPartition(ctx, elr, 0, func(p harness.PartitionState) bool { return p.Leader >= 0 && int(p.Leader) != old })
		require.NoError(t, err, "the others should elect a leader other than the isolated %d", old)
		require.NotEqual(t, int32(old), moved.AnsweredBy, "the answer comes from a broker in touch with the quorum")
		own, err := c.DescribeFrom(ctx, old, elr)
		require.NoError(t, err, "the isolated broker still answers clients")
		require.Len(t, own, 1)
		t.Logf("isolated %d: the cluster says leader %d epoch %d ISR %v (from %d); %d says leader %d epoch %d ISR %v",
			old, moved.Leader, moved.LeaderEpoch, moved.ISR, moved.AnsweredBy, old, own[0].Leader, own[0].LeaderEpoch, own[0].ISR)
		require.Equal(t, int32(old), own[0].AnsweredBy)
		require.Equal(t, int32(old), own[0].Leader, "cut off from the quorum, it never learns that it was replaced")
		require.Less(t, own[0].LeaderEpoch, moved.LeaderEpoch)
		require.NoError(t, c.HealAll(ctx))
		_, err = c.WaitPartition(ctx, elr, 0, func(p harness.PartitionState) bool { return len(p.ISR) == 3 })
		require.NoError(t, err, "healed, node %d rejoins the ISR", old)
		mine, err := c.DescribeFrom(ctx, old, elr)
		require.NoError(t, err)
		require.GreaterOrEqual(t, mine[0].LeaderEpoch, moved.LeaderEpoch, "healed, node %d follows the metadata again", old)
	})

	mustReadBack(t, ctx, c, tp, 0, acks)
	require.NoError(t, c.WaitHealthy(ctx))
}

// TestStartErrors: bad starts give one clear error and leave nothing behind.
func TestStartErrors(t *testing.T) {
	harnesstest.RequireDocker(t)
	ctx := withTimeout(t, 3*time.Minute)
	t.Run("image missing", func(t *testing.T) {
		_, err := harness.Start(ctx, harness.Spec{RunID: "t-noimage", KafkaImage: "verity/no-such-image:0"})
		require.Error(t, err)
		require.True(t, errors.Is(err, harness.ErrImage), "%v", err)
		require.Contains(t, err.Error(), "not present")
		left, err := harness.Leftovers(ctx, "t-noimage")
		require.NoError(t, err)
		require.Zero(t, left)
	})
	t.Run("not ready in time", func(t *testing.T) {
		_, err := harness.Start(ctx, harness.Spec{RunID: "t-slow", ReadyTimeout: 2 * time.Second, ArtifactDir: t.TempDir()})
		require.Error(t, err)
		require.Contains(t, err.Error(), "not ready within 2s")
		require.Contains(t, err.Error(), "ReadyTimeout")
		left, err := harness.Leftovers(ctx, "t-slow")
		require.NoError(t, err)
		require.Zero(t, left, "a failed start must remove what it started")
	})
	t.Run("bad spec", func(t *testing.T) {
		_, err := harness.Start(ctx, harness.Spec{HeapMB: 4096})
		require.ErrorContains(t, err, "HeapMB")
	})
}

// TestEngineUnreachable runs Start in a child process whose DOCKER_HOST points at a closed port on
// this machine (the engine address is read once per process; a unix socket path that does not
// exist would make testcontainers fall back to the default socket).
func TestEngineUnreachable(t *testing.T) {
	if os.Getenv("VERITY_CHILD_ENGINE") == "1" {
		c, err := harness.Start(context.Background(), harness.Spec{})
		if err == nil {
			_ = c.Close(context.Background())
			t.Fatal("Start succeeded with no engine")
		}
		t.Logf("ERR: %v", err)
		if !errors.Is(err, harness.ErrEngine) {
			t.Fatalf("not ErrEngine: %v", err)
		}
		return
	}
	harnesstest.RequireDocker(t)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestEngineUnreachable$", "-test.v")
	cmd.Env = append(os.Environ(), "VERITY_CHILD_ENGINE=1", "DOCKER_HOST=tcp://127.0.0.1:9")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child: %s", out)
	require.Contains(t, string(out), "no Docker engine answers")
	require.Contains(t, string(out), "make engine")
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "ERR:") {
			t.Log(strings.TrimSpace(l))
		}
	}
}

// TestReap: what a killed run leaves behind is found by its label and removed.
func TestReap(t *testing.T) {
	harnesstest.RequireDocker(t)
	ctx := withTimeout(t, 3*time.Minute)
	c, err := harness.Start(ctx, harness.Spec{Nodes: 1, RunID: "t-reap", ArtifactDir: t.TempDir(), NoSignalCleanup: true})
	require.NoError(t, err)
	// Simulate a killed process: nothing calls Close; Reap finds the run by its label.
	left, err := harness.Leftovers(ctx, "t-reap")
	require.NoError(t, err)
	require.Equal(t, harness.Removed{Containers: 3, Networks: 2, Volumes: 1}, left)
	// This process started the run and still runs: a reap keeps it unless told --all.
	runs, err := harness.Reap(ctx, harness.ReapOptions{Run: "t-reap"})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.True(t, runs[0].Kept(), "a run of a live process is kept: %+v", runs[0])
	require.Contains(t, runs[0].Alive, "still runs")
	require.Equal(t, left, runs[0].Found)
	require.False(t, runs[0].Removed.Any())
	runs, err = harness.Reap(ctx, harness.ReapOptions{Run: "t-reap", All: true, DryRun: true})
	require.NoError(t, err)
	require.False(t, runs[0].Removed.Any(), "a dry run removes nothing")
	again, err := harness.Leftovers(ctx, "t-reap")
	require.NoError(t, err)
	require.Equal(t, left, again)
	runs, err = harness.Reap(ctx, harness.ReapOptions{Run: "t-reap", All: true})
	require.NoError(t, err)
	require.Equal(t, left, runs[0].Removed)
	left, err = harness.Leftovers(ctx, "t-reap")
	require.NoError(t, err)
	require.Zero(t, left)
	// Close after Reap finds nothing left to remove. It cannot save the node logs either (the
	// containers are gone) and says so in its error; anything else in that error (removing,
	// closing the engine client) is a real failure.
	if err := c.Close(ctx); err != nil {
		for _, e := range joined(err) {
			if msg := e.Error(); !strings.HasPrefix(msg, "reading the log of ") || !strings.Contains(msg, "No such container") {
				t.Errorf("Close after Reap: %q is not about the log of a removed container", msg)
			}
		}
		t.Logf("Close after Reap: %v", err)
	}
	left, err = harness.Leftovers(ctx, "t-reap")
	require.NoError(t, err)
	require.Zero(t, left)
}

// joined flattens the errors that errors.Join combined (at any depth) into the single errors.
func joined(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, joined(e)...)
	}
	return out
}

// TestInterruptCleansUp: a process that gets SIGINT (Ctrl-C) while its cluster runs removes the
// cluster before it exits. The child starts a one-node cluster and waits; the parent interrupts it.
func TestInterruptCleansUp(t *testing.T) {
	if os.Getenv("VERITY_CHILD_INTERRUPT") == "1" {
		c, err := harness.Start(context.Background(), harness.Spec{Nodes: 1, RunID: "t-sigint", ArtifactDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("READY", c.RunID())
		<-t.Context().Done() // never returns normally: the signal handler removes the cluster and re-raises
		return
	}
	harnesstest.RequireDocker(t)
	ctx := withTimeout(t, 3*time.Minute)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestInterruptCleansUp$", "-test.v")
	cmd.Env = append(os.Environ(), "VERITY_CHILD_INTERRUPT=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "READY") {
			ready = true
			break
		}
	}
	require.True(t, ready, "the child never reported its cluster ready")
	left, err := harness.Leftovers(ctx, "t-sigint")
	require.NoError(t, err)
	require.NotZero(t, left, "the child's cluster should be running before the interrupt")
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	go func() { _, _ = io.Copy(io.Discard, out) }()
	// The handler removes the cluster, then re-raises the signal: the child must end by SIGINT,
	// not exit on its own (which would mean the handler did not run as designed) nor be killed
	// by the context's deadline.
	werr := cmd.Wait()
	t.Logf("child after SIGINT: %v", werr)
	var exitErr *exec.ExitError
	require.ErrorAs(t, werr, &exitErr, "the child should end by the re-raised signal")
	ws, ok := exitErr.Sys().(syscall.WaitStatus)
	require.True(t, ok, "wait status %T", exitErr.Sys())
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGINT, "the child should end by SIGINT, not %v", werr)
	left, err = harness.Leftovers(ctx, "t-sigint")
	require.NoError(t, err)
	require.Zero(t, left, "SIGINT must remove the cluster before the process exits")
}

// TestPanicCleansUp: a test that panics with a running cluster still removes it (harnesstest
// wires Close to t.Cleanup, which the testing package runs before it reports the panic).
func TestPanicCleansUp(t *testing.T) {
	if os.Getenv("VERITY_CHILD_PANIC") == "1" {
		harnesstest.Start(t, harness.Spec{Nodes: 1, RunID: "t-panic"})
		panic("a test panicked while its cluster ran")
	}
	harnesstest.RequireDocker(t)
	ctx := withTimeout(t, 3*time.Minute)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPanicCleansUp$")
	cmd.Env = append(os.Environ(), "VERITY_CHILD_PANIC=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the child must fail")
	require.Contains(t, string(out), "a test panicked while its cluster ran")
	left, err := harness.Leftovers(ctx, "t-panic")
	require.NoError(t, err)
	require.Zero(t, left, "a panicking test must still remove its cluster")
}

// waitMetrics reads node id's metrics until ok holds (bounded by the test's deadline) and
// returns the last reading.
func waitMetrics(t *testing.T, c *harness.Cluster, id int, ok func(map[metrics.Name]float64) bool) map[metrics.Name]float64 {
	t.Helper()
	ctx := withTimeout(t, time.Minute)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		m, err := c.ReadMetrics(ctx, id)
		if err == nil && ok(m) {
			return m
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %d's metrics never met the condition: last %v, %v", id, m, err)
		case <-tick.C:
		}
	}
}
