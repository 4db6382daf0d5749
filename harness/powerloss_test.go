package harness_test

import (
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
	"github.com/verity-kafka/verity/lazyfs/control"
)

// A node on the lazy filesystem keeps, through a kill, every record it acknowledged (the page
// cache survives a crashed process), and loses, through a power cut, the records that no fsync
// had made durable: with Kafka's default flush settings that is everything appended since the
// last segment roll or restart. The partition has one replica, so nothing can come back from
// another broker.
func TestPowerLoss(t *testing.T) {
	c := harnesstest.Start(t, harness.Spec{Nodes: 3, PowerLoss: true})
	ctx := withTimeout(t, 6*time.Minute)
	for _, id := range c.Brokers() {
		log, err := c.NodeLog(ctx, id)
		require.NoError(t, err)
		require.Contains(t, log, "lazyfs: mounted /var/lib/kafka/data", "node %d says it runs on the lazy filesystem", id)
	}
	const tp = "power"
	require.NoError(t, c.CreateTopic(ctx, harness.TopicSpec{Name: tp, Partitions: 1, RF: 1, MinISR: 1}))
	p0, err := c.DescribePartition(ctx, tp, 0)
	require.NoError(t, err)
	holder := int(p0.Leader)
	prod := newProducer(t, c, tp, 0, sarama.WaitForAll)
	kept := prod.mustSend(40)
	backUp := func(t *testing.T) {
		t.Helper()
		_, err := c.WaitPartition(ctx, tp, 0, func(p harness.PartitionState) bool { return int(p.Leader) == holder })
		require.NoError(t, err, "node %d leads its partition again", holder)
	}

	t.Run("a kill keeps every acknowledged record", func(t *testing.T) {
		require.NoError(t, c.Kill(ctx, holder))
		require.NoError(t, c.Start(ctx, holder))
		backUp(t)
		_, cut := c.Dropped(holder)
		require.False(t, cut, "a kill is not a power cut")
		mustReadBack(t, ctx, c, tp, 0, kept)
	})

	t.Run("a power cut loses the acknowledged records that were not fsynced", func(t *testing.T) {
		lost := prod.mustSend(40)
		require.Error(t, c.PowerCut(ctx, 999), "no such node")
		require.NoError(t, c.PowerCut(ctx, holder))
		require.NoError(t, c.Start(ctx, holder))
		d, cut := c.Dropped(holder)
		require.True(t, cut)
		require.Positive(t, d.Bytes, "the segment's unsynced tail was dropped")
		t.Logf("node %d dropped %d bytes in %d files", holder, d.Bytes, d.Files)
		log, err := c.NodeLog(ctx, holder)
		require.NoError(t, err)
		require.Contains(t, log, "lazyfs: power loss: dropped")
		backUp(t)
		got := readAll(t, ctx, c, tp, 0)
		for _, a := range kept {
			require.Equal(t, a.value, got[a.offset], "record %s, kept through the kill, survives the power cut", a.value)
		}
		missing := 0
		for _, a := range lost {
			if got[a.offset] != a.value {
				missing++
			}
		}
		t.Logf("%d of %d records acknowledged after the restart are gone", missing, len(lost))
		require.Equal(t, len(lost), missing, "no fsync covered them: every one is gone")
	})

	// A disk fault is seen by Kafka itself: the broker's append fails with the errno the lazy
	// filesystem returned, the rule's status names the file, and clearing the rule and starting
	// the node (a broker halts when its only log directory fails) brings the partition back.
	diskFault := func(t *testing.T, topic string, rule control.DiskFault, javaError string) {
		require.NoError(t, c.CreateTopic(ctx, harness.TopicSpec{Name: topic, Partitions: 1, RF: 1, MinISR: 1}))
		p, err := c.DescribePartition(ctx, topic, 0)
		require.NoError(t, err)
		node := int(p.Leader)
		dp := newProducer(t, c, topic, 0, sarama.WaitForAll)
		before := dp.mustSend(5)
		rule.Path = topic + "-0/**"
		require.NoError(t, c.SetDiskFaults(ctx, node, control.Faults{Rules: []control.DiskFault{rule}}))
		ok, errs := dp.send(3)
		require.Empty(t, ok, "no append succeeds while every write to %s fails", topic)
		t.Logf("sends while the fault held: %v", errs)
		st, err := c.ClearDiskFaults(ctx, node)
		require.NoError(t, err)
		require.Len(t, st.Rules, 1)
		require.Positive(t, st.Rules[0].Hits, "the rule failed a call: %+v", st)
		require.NotEmpty(t, st.Rules[0].Paths)
		require.True(t, strings.HasPrefix(st.Rules[0].Paths[0], topic+"-0/"), "it hit the partition's files: %v", st.Rules[0].Paths)
		var log string
		require.Eventually(t, func() bool {
			log, err = c.NodeLog(ctx, node)
			return err == nil && strings.Contains(log, javaError)
		}, 2*time.Minute, time.Second, "node %d logs %q", node, javaError)
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, javaError) || strings.Contains(line, "Shutdown broker because") {
				t.Logf("node %d: %s", node, line)
			}
		}
		require.NoError(t, c.Restore(ctx))
		_, err = c.WaitPartition(ctx, topic, 0, func(p harness.PartitionState) bool { return int(p.Leader) == node })
		require.NoError(t, err, "node %d leads %s-0 again", node, topic)
		mustReadBack(t, ctx, c, topic, 0, before)
	}
	t.Run("an EIO on a partition's writes reaches the broker", func(t *testing.T) {
		diskFault(t, "eio", control.DiskFault{Kind: control.KindError, Op: control.OpWrite}, "Input/output error")
	})
	t.Run("a full disk under a partition reaches the broker as ENOSPC", func(t *testing.T) {
		diskFault(t, "enospc", control.DiskFault{Kind: control.KindFull}, "No space left on device")
	})
}

// Kafka 4.3.1 writes a new node's bootstrap.checkpoint (the storage format's record of
// metadata.version) without an fsync, and renames it into place without syncing the file:
// BatchFileWriter.close writes and closes its channel, BootstrapDirectory.writeBinaryFile moves
// it. A later directory fsync (the meta.properties write) makes its name durable. A power cut
// before the page cache is written back leaves the name with no content, and the node cannot
// start again ("No FeatureLevelRecord for metadata.version"). KeepBootUnsynced keeps the
// format's writes unsynced, as on a machine that lost power within a minute of formatting;
// the default syncs every node once the cluster is ready, which TestPowerLoss relies on.
func TestPowerLossRightAfterFormat(t *testing.T) {
	c := harnesstest.Start(t, harness.Spec{Nodes: 1, PowerLoss: true, KeepBootUnsynced: true})
	ctx := withTimeout(t, 3*time.Minute)
	require.NoError(t, c.PowerCut(ctx, 1))
	require.NoError(t, c.Start(ctx, 1), "the filesystem mounts; Kafka then fails")
	d, _ := c.Dropped(1)
	t.Logf("node 1 dropped %d bytes in %d files", d.Bytes, d.Files)
	var log string
	require.Eventually(t, func() bool {
		var err error
		log, err = c.NodeLog(ctx, 1)
		return err == nil && strings.Contains(log, "Exiting Kafka due to fatal exception")
	}, 2*time.Minute, time.Second, "Kafka 4.3.1 does not start again")
	require.Contains(t, log, "No FeatureLevelRecord for metadata.version was found in the bootstrap metadata from the binary bootstrap metadata file: /var/lib/kafka/data/bootstrap.checkpoint")
}
