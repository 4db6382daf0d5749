package workloads

import (
	"slices"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

func TestValuesAreProcessAndCount(t *testing.T) {
	v := NewValues(3)
	require.Equal(t, "3-1", v.Next())
	require.Equal(t, "3-2", v.Next())
	for range 1739 {
		v.Next()
	}
	require.Equal(t, "3-1742", v.Next())
	require.Equal(t, int64(1742), v.Count())
	require.Equal(t, "3-1742", ValueOf(3, 1742))
	require.Equal(t, "12-1", NewValues(12).Next(), "process 12's values cannot be confused with process 1's")
}

func TestProcessesAreUnique(t *testing.T) {
	ps := NewProcesses(7)
	require.Equal(t, 7, ps.Next())
	require.Equal(t, 8, ps.Next())
}

func draw(seed int64, p, n int) []uint64 {
	r := NewRand(seed, p)
	out := make([]uint64, n)
	for i := range out {
		out[i] = r.Uint64()
	}
	return out
}

func TestNewRandIsReproducibleAndPerProcess(t *testing.T) {
	require.Equal(t, draw(42, 3, 100), draw(42, 3, 100), "one seed and process give one stream")
	require.NotEqual(t, draw(42, 3, 100), draw(42, 4, 100), "processes get their own streams")
	require.NotEqual(t, draw(42, 3, 100), draw(43, 3, 100), "seeds differ")
	require.NotEqual(t, draw(0, 0, 10), draw(0, 1, 10))
}

var parts = map[string]int32{"a": 3, "b": 2, "c": 5}

func TestChooserIsReproducible(t *testing.T) {
	for _, mode := range []Partitioning{PartitionRandom, PartitionKey, PartitionRoundRobin, PartitionFixed} {
		cfg, _, err := ProducerConfig{Topics: []string{"a", "b", "c"}, Partitioning: mode, Partition: 1}.Resolved(Sarama())
		require.NoError(t, err)
		seq := func(seed int64) []target {
			ch := newChooser(NewRand(seed, 1), cfg, parts)
			var ts []target
			for range 200 {
				tg, err := ch.next()
				require.NoError(t, err)
				require.Less(t, tg.partition, parts[tg.topic], "%s: partition in range", mode)
				ts = append(ts, tg)
			}
			return ts
		}
		require.Equal(t, seq(7), seq(7), "%s: one seed, one sequence", mode)
		if mode == PartitionRandom || mode == PartitionKey {
			require.NotEqual(t, seq(7), seq(8), mode)
		}
	}
}

func TestKeyPartitioningIsTheJavaClients(t *testing.T) {
	// The partitioner the chooser uses, against the Java client's own numbers: partition =
	// toPositive(Utils.murmur2(key)) % n, with the murmur2 values of Kafka's UtilsTest.
	for _, c := range []struct {
		key  string
		hash int32 // Utils.murmur2
	}{{"21", -973932308}, {"foobar", -790332482}, {"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829}, {"abc", 479470107}} {
		for _, n := range []int32{7, 12} {
			p, err := sarama.NewMurmur2Partitioner("c").Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(c.key)}, n)
			require.NoError(t, err)
			require.Equal(t, (c.hash&0x7fffffff)%n, p, "key %q, %d partitions", c.key, n)
		}
	}
	cfg, _, err := ProducerConfig{Topics: []string{"c"}, Partitioning: PartitionKey, Keys: 4}.Resolved(Sarama())
	require.NoError(t, err)
	ch := newChooser(NewRand(1, 1), cfg, parts)
	byKey := map[string]int32{}
	java := sarama.NewMurmur2Partitioner("c")
	for range 100 {
		tg, err := ch.next()
		require.NoError(t, err)
		want, err := java.Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(tg.key)}, 5)
		require.NoError(t, err)
		require.Equal(t, want, tg.partition, "key %s", tg.key)
		if p, ok := byKey[tg.key]; ok {
			require.Equal(t, p, tg.partition, "one key, one partition")
		}
		byKey[tg.key] = tg.partition
	}
	require.Len(t, byKey, 4)
}

func TestPlanTxnIsReproducibleAndSpansTopics(t *testing.T) {
	topics := []string{"a", "b", "c"}
	plans := func(seed int64) []txnPlan {
		r := NewRand(seed, 5)
		var ps []txnPlan
		for range 500 {
			ps = append(ps, planTxn(r, topics, parts, 4, 0.2, 0.1))
		}
		return ps
	}
	a, b := plans(99), plans(99)
	require.Equal(t, a, b, "one seed, one sequence of transactions")
	require.NotEqual(t, a, plans(100))
	aborts, zombies, sizes := 0, 0, map[int]int{}
	for _, pl := range a {
		n := len(pl.targets)
		require.True(t, n >= 1 && n <= 4)
		sizes[n]++
		if n >= 2 {
			require.NotEqual(t, pl.targets[0].topic, pl.targets[1].topic, "two or more records span two topics")
		}
		for _, tg := range pl.targets {
			require.Less(t, tg.partition, parts[tg.topic])
		}
		if pl.abort {
			aborts++
		}
		if pl.fenceAt >= 0 {
			zombies++
			require.Less(t, pl.fenceAt, n, "a zombie sends at least one record after the fence")
		}
	}
	require.Len(t, sizes, 4, "every size 1..k occurs")
	require.InDelta(t, 100, aborts, 40, "about 20%% aborts")
	require.InDelta(t, 50, zombies, 30, "about 10%% zombies")
	touched := map[string]bool{}
	for _, pl := range a {
		for _, tg := range pl.targets {
			touched[tg.topic+string(rune('0'+tg.partition))] = true
		}
	}
	require.Greater(t, len(touched), 6, "transactions spread over partitions of several topics")
	require.True(t, slices.ContainsFunc(a, func(pl txnPlan) bool { return len(pl.targets) == 4 }))
}
