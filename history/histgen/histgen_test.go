package histgen_test

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/histgen"
)

func TestGenerateDeterministic(t *testing.T) {
	var a, b, c bytes.Buffer
	require.NoError(t, histgen.Generate(&a, 3000, 5))
	require.NoError(t, histgen.Generate(&b, 3000, 5))
	require.NoError(t, histgen.Generate(&c, 3000, 6))
	require.Equal(t, a.String(), b.String())
	require.NotEqual(t, a.String(), c.String())
}

// TestGenerateConsistent checks generated histories the way a checker would, and finds no
// anomaly: every acknowledged write is in the final log once, at its offset; nothing failed
// or aborted is visible to read_committed; polls agree with the final log, in log order and
// without skips; producers' acked sends are in send order; completions pair with invokes.
func TestGenerateConsistent(t *testing.T) {
	sizes := []int{10, 500, 60_000} // 60k events: a partition outgrows one final-read chunk
	if !testing.Short() {
		sizes = append(sizes, 300_000)
	}
	for _, n := range sizes {
		for _, seed := range []int64{1, 2} {
			t.Run(fmt.Sprintf("%d-ops-seed-%d", n, seed), func(t *testing.T) {
				var buf bytes.Buffer
				require.NoError(t, histgen.Generate(&buf, n, seed))
				st := check(t, &buf)
				minOps := 2 * histgen.Partitions * 2 // the final reads alone
				require.InDelta(t, max(n, minOps), st.ops, 60, "about nOps events")
				if n >= 60_000 {
					require.Positive(t, st.infoSends, "some sends end unknown")
					require.Positive(t, st.infoSeen, "some unknown sends did reach the log")
					require.Positive(t, st.aborted, "some transactions abort")
					require.Positive(t, st.gaps, "read_committed offsets have gaps")
					require.Positive(t, st.asyncOf, "async completions carry of")
					require.Positive(t, st.nemesis, "the nemesis acts")
					require.Greater(t, st.chunks, 2*histgen.Partitions, "big partitions are read in several chunks")
				}
			})
		}
	}
}

type stats struct {
	ops, infoSends, infoSeen, aborted, gaps, asyncOf, nemesis, chunks int
}

type loc struct {
	part int32
	off  int64
}

// check reads a generated history and fails t on any inconsistency.
func check(t *testing.T, in io.Reader) stats {
	t.Helper()
	r, err := history.NewReader(in)
	require.NoError(t, err)
	require.Equal(t, history.Version, r.Header().Version)

	var st stats
	var ops []history.Op
	var op history.Op
	for {
		err := r.Next(&op)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		require.EqualValues(t, len(ops), op.Index, "i is dense")
		ops = append(ops, op.Clone())
	}
	require.Zero(t, r.Torn())
	st.ops = len(ops)

	// Pair completions with invokes.
	open := map[history.Process][]int{} // invokes in flight per process, oldest first
	invokeOf := make([]int, len(ops))   // completion -> invoke
	for k, o := range ops {
		if o.Type == history.Invoke {
			open[o.Process] = append(open[o.Process], k)
			invokeOf[k] = -1
			continue
		}
		q := open[o.Process]
		require.NotEmpty(t, q, "op %d completes nothing", k)
		inv := q[0]
		if o.Of != nil {
			st.asyncOf++
			inv = int(*o.Of)
		} else {
			require.Len(t, q, 1, "op %d: a process with several ops in flight must say which it completes", k)
		}
		require.Contains(t, q, inv, "op %d completes an op that is not in flight", k)
		require.Equal(t, o.F, ops[inv].F, "op %d", k)
		invokeOf[k] = inv
		for j, x := range q {
			if x == inv {
				open[o.Process] = append(q[:j:j], q[j+1:]...)
				break
			}
		}
		if o.Process.Nemesis {
			st.nemesis++
		}
	}
	for p, q := range open {
		require.Empty(t, q, "process %s has ops in flight at the end", p)
	}

	// The final log, per isolation level.
	final := map[string]map[loc]string{history.ReadUncommitted: {}, history.ReadCommitted: {}}
	where := map[string]map[string]loc{history.ReadUncommitted: {}, history.ReadCommitted: {}}
	nextFrom := map[string]int64{}
	ends := map[string]int64{}
	for _, o := range ops {
		if o.F != history.FFinalRead || o.Type != history.OK {
			continue
		}
		fr := o.Value.FinalRead
		st.chunks++
		key := fmt.Sprint(fr.Partition, fr.Isolation)
		require.Equal(t, nextFrom[key], fr.From, "final reads of %s are consecutive", key)
		require.LessOrEqual(t, len(fr.Records), histgen.ChunkRecords)
		nextFrom[key], ends[key] = fr.End, fr.End
		last := fr.From - 1
		for _, rec := range fr.Records {
			require.Equal(t, fr.Partition, rec.Partition)
			require.Greater(t, *rec.Offset, last)
			require.Less(t, *rec.Offset, fr.End)
			if *rec.Offset > last+1 && fr.Isolation == history.ReadCommitted {
				st.gaps++
			}
			last = *rec.Offset
			_, dup := where[fr.Isolation][rec.Value]
			require.False(t, dup, "duplicate %s", rec.Value)
			final[fr.Isolation][loc{rec.Partition, *rec.Offset}] = rec.Value
			where[fr.Isolation][rec.Value] = loc{rec.Partition, *rec.Offset}
		}
	}
	for p := range int32(histgen.Partitions) {
		ru, rc := fmt.Sprint(p, history.ReadUncommitted), fmt.Sprint(p, history.ReadCommitted)
		require.Equal(t, ends[ru], ends[rc], "partition %d: no transaction open, so LSO = HW", p)
	}
	for l, v := range final[history.ReadCommitted] {
		require.Equal(t, v, final[history.ReadUncommitted][l], "read_committed agrees with read_uncommitted at %v", l)
	}

	// Sends and transactions against the final log; producers' order per partition.
	lastOff := map[string]int64{}
	for k, o := range ops {
		if o.Type == history.Invoke {
			continue
		}
		switch o.F {
		case history.FSend:
			rec := o.Value.Send
			at, seen := where[history.ReadCommitted][rec.Value]
			switch o.Type {
			case history.OK:
				require.True(t, seen, "op %d: acked %s lost", k, rec.Value)
				require.Equal(t, loc{rec.Partition, *rec.Offset}, at, "op %d: %s at its acked offset", k, rec.Value)
				key := fmt.Sprint(o.Process, rec.Partition)
				if prev, ok := lastOff[key]; ok {
					require.Greater(t, *rec.Offset, prev, "op %d: %s's sends in order", k, o.Process)
				}
				lastOff[key] = *rec.Offset
			case history.Fail:
				require.False(t, seen, "op %d: failed %s is in the log", k, rec.Value)
			case history.Info:
				st.infoSends++
				if seen {
					st.infoSeen++
				}
			}
		case history.FTxn:
			txn := ops[invokeOf[k]].Value.Txn
			n := 0
			for _, rec := range txn.Records {
				if _, ok := where[history.ReadCommitted][rec.Value]; ok {
					n++
				}
				_, ok := where[history.ReadUncommitted][rec.Value]
				require.True(t, ok, "op %d: every transactional record reaches the log", k)
			}
			switch o.Type {
			case history.OK:
				require.Equal(t, len(txn.Records), n, "op %d: committed transaction fully visible", k)
				for _, rec := range o.Value.Txn.Records {
					require.Equal(t, loc{rec.Partition, *rec.Offset}, where[history.ReadCommitted][rec.Value])
				}
			case history.Fail:
				st.aborted++
				require.Equal(t, 0, n, "op %d: aborted transaction invisible", k)
			case history.Info:
				require.True(t, n == 0 || n == len(txn.Records), "op %d: transaction all or nothing", k)
			}
		}
	}

	// Polls: at the offsets of the final log, in log order, without skips, and read_committed
	// sees nothing aborted.
	seen := map[string][]int64{}
	isoOf := map[history.Process]string{}
	for _, o := range ops {
		if o.F != history.FPoll || o.Type != history.OK {
			continue
		}
		iso := o.Value.Poll.Isolation
		isoOf[o.Process] = iso
		for _, rec := range o.Value.Poll.Records {
			require.Equal(t, final[iso][loc{rec.Partition, *rec.Offset}], rec.Value, "poll sees the final log")
			key := fmt.Sprint(o.Process, " ", rec.Partition)
			seen[key] = append(seen[key], *rec.Offset)
		}
	}
	visible := map[string][]int64{} // offsets per partition and isolation, in order
	for _, o := range ops {
		if o.F == history.FFinalRead && o.Type == history.OK {
			key := fmt.Sprint(o.Value.FinalRead.Partition, o.Value.FinalRead.Isolation)
			for _, rec := range o.Value.FinalRead.Records {
				visible[key] = append(visible[key], *rec.Offset)
			}
		}
	}
	for p, iso := range isoOf {
		for part := range int32(histgen.Partitions) {
			got := seen[fmt.Sprint(p, " ", part)]
			all := visible[fmt.Sprint(part, iso)]
			require.LessOrEqual(t, len(got), len(all))
			require.True(t, slices.Equal(all[:len(got)], got), "consumer %s partition %d reads the log in order without skips", p, part)
		}
	}
	return st
}
