package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
	"github.com/verity-kafka/verity/workloads/internal/kit"
)

// mixedRun records a run whose producers are sarama's and whose consumers are franz-go's (or
// sarama's, for comparison) into one history, with the header Run would write for the spec.
type mixedRun struct {
	path          string
	w             *history.Writer
	rec           *pollWatch
	plan          runPlan
	sarama, franz Env
}

func newMixedRun(t *testing.T, ctx context.Context, c *harness.Cluster, spec Spec, log *slog.Logger) *mixedRun {
	t.Helper()
	for _, tp := range spec.Topics {
		require.NoError(t, c.CreateTopic(ctx, tp))
	}
	pl, err := planRun(spec)
	require.NoError(t, err)
	cfg, err := headerConfig(spec, pl, len(c.Brokers()), c.Controllers(), c.Deviations(), PredictTxnProtocol(spec))
	require.NoError(t, err)
	r := &mixedRun{path: filepath.Join(t.TempDir(), "history.jsonl"), plan: pl}
	r.w, err = history.Create(r.path, history.Header{Seed: spec.Seed, Config: cfg})
	require.NoError(t, err)
	r.rec = newPollWatch(r.w)
	r.sarama, err = Env{Brokers: c.Bootstrap(), Recorder: r.rec, Seed: spec.Seed, Client: kafkaconf.Sarama,
		Processes: NewProcesses(pl.next + pl.final.Workers), Log: log}.withDefaults()
	require.NoError(t, err)
	r.franz = r.sarama
	r.franz.Client = kafkaconf.FranzGo
	return r
}

// finish runs the final reads and closes the history.
func (r *mixedRun) finish(t *testing.T, ctx context.Context) {
	t.Helper()
	fr, err := FinalRead(ctx, r.sarama, r.plan.next, r.plan.final)
	require.NoError(t, err)
	require.True(t, fr.AllComplete(), "final read: %+v", fr)
	require.NoError(t, r.w.Close())
}

// pollWatch remembers, per consumer process and partition, the offset of the last record its
// polls returned, and counts its data-loss ops; it wakes waiters on every completion.
type pollWatch struct {
	w *history.Writer
	Recorder
	mu      sync.Mutex
	last    map[int]map[tpo]int64 // process -> (topic, partition, -1) -> offset
	losses  map[int]int
	changed chan struct{}
}

func newPollWatch(w *history.Writer) *pollWatch {
	return &pollWatch{w: w, Recorder: w, last: map[int]map[tpo]int64{}, losses: map[int]int{}, changed: make(chan struct{}, 1)}
}

func (r *pollWatch) Complete(inv history.Op, t history.Type, v history.Payload, e string) (history.Op, error) {
	op, err := r.Recorder.Complete(inv, t, v, e)
	r.mu.Lock()
	p := inv.Process.ID
	switch {
	case inv.F == history.FPoll && t == history.OK && v.Poll != nil:
		for _, rec := range v.Poll.Records {
			if r.last[p] == nil {
				r.last[p] = map[tpo]int64{}
			}
			r.last[p][tpo{rec.Topic, rec.Partition, -1}] = *rec.Offset
		}
	case inv.F == history.FDataLoss:
		r.losses[p]++
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return op, err
}

// AppendBatch keeps the producers' batched recording.
func (r *pollWatch) AppendBatch(ops []history.Op) ([]history.Op, error) { return r.w.AppendBatch(ops) }

func (r *pollWatch) lastOffset(p int, topic string, partition int32) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	off, ok := r.last[p][tpo{topic, partition, -1}]
	return off, ok
}

func (r *pollWatch) lossCount(p int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.losses[p]
}

// await waits until cond holds, woken by completions, or fails the test when ctx ends.
func (r *pollWatch) await(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	began := time.Now()
	for !cond() {
		select {
		case <-r.changed:
		case <-ctx.Done():
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("waiting for %s: %v (last polled %v, data losses %v)", what, ctx.Err(), r.last, r.losses)
		}
	}
	t.Logf("%s after %s", what, time.Since(began).Round(time.Millisecond))
}

// consumerView is what one consumer process's history shows.
type consumerView struct {
	p         int
	cfg       ConsumerConfig
	polls     int
	records   int
	polled    map[tpo]map[int64]string // (topic, partition, -1) -> offset -> value
	maxOff    map[tpo]int64
	rebalance []rebalanceNote
	losses    []map[string]any
	crashes   int
}

type rebalanceNote struct {
	Group      string             `json:"group"`
	Generation int32              `json:"generation"`
	Member     string             `json:"member"`
	Partitions map[string][]int32 `json:"partitions"`
	Isolation  string             `json:"isolation"`
	Rebalance  bool               `json:"rebalance"`
}

// consumerViews reads every consumer process's ops and checks, on its own, that between two ops
// of the process that are not polls its position in each partition only moved forward.
func consumerViews(t *testing.T, v *view, consumers []numbered[ConsumerConfig]) map[int]*consumerView {
	t.Helper()
	out := map[int]*consumerView{}
	for _, n := range consumers {
		out[n.p] = &consumerView{p: n.p, cfg: n.cfg, polled: map[tpo]map[int64]string{}, maxOff: map[tpo]int64{}}
	}
	last := map[int]map[tpo]int64{}
	for _, o := range v.ops {
		cv := out[o.Process.ID]
		if cv == nil || o.Process.Nemesis || o.Type != history.OK {
			continue
		}
		if o.F != history.FPoll {
			last[cv.p] = map[tpo]int64{} // assign, subscribe, data-loss, crash: positions start afresh
		}
		switch o.F {
		case history.FPoll:
			cv.polls++
			cv.records += len(o.Value.Poll.Records)
			for _, r := range o.Value.Poll.Records {
				k := tpo{r.Topic, r.Partition, -1}
				if prev, ok := last[cv.p][k]; ok {
					require.Greater(t, *r.Offset, prev, "process %d, op %d: %s-%d went from offset %d to %d without a rebalance, seek or restart",
						cv.p, o.Index, r.Topic, r.Partition, prev, *r.Offset)
				}
				if last[cv.p] == nil {
					last[cv.p] = map[tpo]int64{}
				}
				last[cv.p][k] = *r.Offset
				if cv.polled[k] == nil {
					cv.polled[k] = map[int64]string{}
				}
				if seen, ok := cv.polled[k][*r.Offset]; ok && len(cv.losses) == 0 {
					// After a truncation the offsets are the new leader's records.
					require.Equal(t, seen, r.Value, "process %d read two values at %s-%d offset %d", cv.p, r.Topic, r.Partition, *r.Offset)
				}
				cv.polled[k][*r.Offset] = r.Value
				cv.maxOff[k] = max(cv.maxOff[k], *r.Offset)
			}
		case history.FAssign:
			var n rebalanceNote
			require.NoError(t, json.Unmarshal(o.Value.Raw, &n))
			if n.Rebalance {
				cv.rebalance = append(cv.rebalance, n)
			}
		case history.FDataLoss:
			var m map[string]any
			require.NoError(t, json.Unmarshal(o.Value.Raw, &m))
			m["i"] = o.Index
			cv.losses = append(cv.losses, m)
		case history.FCrash:
			cv.crashes++
		}
	}
	return out
}

// requireCovered checks that the readers together polled every record the final read at their
// isolation level shows in each partition below the furthest offset any of them polled there:
// restarts resume after what was recorded (assign: the position reached; subscribe: the
// commits, which must never run ahead of the history), so nothing in between can be missing.
func requireCovered(t *testing.T, v *view, what string, iso kafkaconf.Isolation, readers []*consumerView) {
	t.Helper()
	furthest := map[tpo]int64{}
	for _, cv := range readers {
		for k, off := range cv.maxOff {
			furthest[k] = max(furthest[k], off)
		}
	}
	checked := 0
	for at, val := range v.final[string(iso)] {
		k := tpo{at.topic, at.partition, -1}
		top, ok := furthest[k]
		if !ok || at.offset > top {
			continue
		}
		found := false
		for _, cv := range readers {
			if got, ok := cv.polled[k][at.offset]; ok {
				require.Equal(t, val, got, "%s: %v read differently from the final read", what, at)
				found = true
				break
			}
		}
		require.True(t, found, "%s: %s at %v (final read, %s) is below the furthest offset polled (%d) but no poll returned it",
			what, val, at, iso, top)
		checked++
	}
	t.Logf("%s: every one of the %d records at %s below the furthest polled offsets was polled (furthest %v)", what, checked, iso, furthest)
	require.Positive(t, checked)
}

// pollFamilies checks the history with verify and returns the findings of the poll families
// (and aborted reads) by process, failing on anything the families could not check.
func pollFamilies(t *testing.T, ctx context.Context, path string) (*results.Results, map[guarantee.Anomaly]map[int]int) {
	t.Helper()
	res, err := verify.CheckFile(ctx, path, verify.Options{MaxExamples: 10000})
	require.NoError(t, err)
	counts := map[string]int{}
	for a, an := range res.Anomalies {
		counts[string(a)] = an.Count
	}
	t.Logf("verify: verdict %s, anomalies %v, unknown %v", res.Verdict, counts, res.UnknownReasons)
	by := map[guarantee.Anomaly]map[int]int{}
	for _, a := range []guarantee.Anomaly{guarantee.NonmonotonicPoll, guarantee.PollSkip, guarantee.AbortedRead} {
		an := res.Anomalies[a]
		require.Empty(t, an.Unchecked, "%s must be checked", a)
		require.LessOrEqual(t, an.Count, 10000, "every example kept")
		by[a] = map[int]int{}
		for _, ex := range an.Examples {
			p, part := -1, int32(-1)
			if ex.Process != nil {
				p = *ex.Process
			}
			if ex.Partition != nil {
				part = *ex.Partition
			}
			by[a][p]++
			t.Logf("%s: process %d ops %v %s-%d offsets %v: %s", a, p, ex.Ops, ex.Topic, part, ex.Offsets, ex.Note)
		}
	}
	return res, by
}

// testConsumers runs consumers of client (topics and groups named with prefix) in both modes at
// both isolation levels over sarama producers' records, and checks each consumer's history.
func testConsumers(t *testing.T, c *harness.Cluster, log *slog.Logger, client kafkaconf.ClientName, prefix string) {
	ctx := withTimeout(t, 6*time.Minute)
	data, txnA, txnB := prefix+"-data", prefix+"-txn-a", prefix+"-txn-b"
	topics := []harness.TopicSpec{topic(data, 3), topic(txnA, 2), topic(txnB, 2)}
	all := []string{data, txnA, txnB}
	rc, ru := kafkaconf.ReadCommitted, kafkaconf.ReadUncommitted
	member := func(group string, iso kafkaconf.Isolation, topics []string, every time.Duration) ConsumerConfig {
		return ConsumerConfig{Topics: topics, Mode: Subscribe, Group: group, Isolation: iso, RestartEvery: every}
	}
	spec := Spec{
		Name: string(client) + "-consumers", Seed: 20260601, Duration: 25 * time.Second, Topics: topics,
		Producers: []ProducerSpec{{ProducerConfig: ProducerConfig{Topics: []string{data}, Partitioning: PartitionKey, Rate: 150}}},
		Transactional: []TxnConfig{{Topics: []string{txnA, txnB}, TxnID: prefix + "-txn", MaxRecords: 4, AbortProbability: 0.3,
			Gap: 20 * time.Millisecond}},
		Consumers: []ConsumerConfig{
			{Topics: all, Mode: Assign, Isolation: ru, RestartEvery: 15 * time.Second},
			{Topics: all, Mode: Assign, Isolation: rc},
			member(prefix+"-rc", rc, all, 12*time.Second),
			member(prefix+"-rc", rc, all, 12*time.Second),
			member(prefix+"-rc", rc, all, 12*time.Second),
			member(prefix+"-ru", ru, []string{data}, 10*time.Second),
			member(prefix+"-ru", ru, []string{data}, 10*time.Second),
		},
	}
	r := newMixedRun(t, ctx, c, spec, log)
	// 25 s at least, then until every group's members restarted twice (each restart is a
	// rebalance): the checks below need restarts, and a loaded machine may be slow to make
	// them. The deadline is one a loaded machine cannot miss.
	groupOf := map[int]string{}
	need := map[string]int{}
	for _, n := range r.plan.consumers {
		if n.cfg.Group != "" {
			groupOf[n.p] = n.cfg.Group
			need[n.cfg.Group] = 2
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			cancel()
		}
	}
	began := time.Now()
	var wg sync.WaitGroup
	startAll(wctx, &wg, r.sarama, r.plan.producers, RunProducer, fail)
	startAll(wctx, &wg, r.sarama, r.plan.txns, RunTxnProducer, fail)
	consumerEnv := r.franz
	if client == kafkaconf.Sarama {
		consumerEnv = r.sarama
	}
	consumerEnv.Recorder = &untilRecorder{Recorder: consumerEnv.Recorder, stop: cancel,
		until: crashedUntil(spec.Duration, need, func(op history.Op) (string, bool) {
			g, ok := groupOf[op.Process.ID]
			return g, ok
		})}
	stats := startAll(wctx, &wg, consumerEnv, r.plan.consumers, RunConsumer, fail)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	t.Logf("workloads ran %s", time.Since(began).Round(time.Millisecond))
	r.finish(t, ctx)
	for _, s := range stats {
		t.Logf("%s consumer %d: polls %d records %d rebalances %d crashes %d data losses %d", client, s.Process, s.Polls, s.Records,
			s.Rebalances, s.Crashes, s.DataLosses)
	}

	v := readBack(t, r.path)
	v.requireComplete(t, topics, history.ReadUncommitted, history.ReadCommitted)
	aborted, committed := map[string]bool{}, map[string]bool{}
	for _, o := range v.ops {
		if o.F != history.FTxn || o.Type == history.Invoke {
			continue
		}
		for _, rec := range o.Value.Txn.Records {
			switch {
			case o.Value.Txn.Intent == history.IntentAbort:
				aborted[rec.Value] = true
			case o.Type == history.OK:
				committed[rec.Value] = true
			}
		}
	}
	require.NotEmpty(t, aborted)
	require.NotEmpty(t, committed)
	views := consumerViews(t, v, r.plan.consumers)
	groups := map[string][]*consumerView{}
	groupCommitted := map[string]int{}
	for _, n := range r.plan.consumers {
		cv := views[n.p]
		var sawAborted, sawCommitted int
		for _, offs := range cv.polled {
			for _, val := range offs {
				if aborted[val] {
					sawAborted++
				}
				if committed[val] {
					sawCommitted++
				}
			}
		}
		t.Logf("consumer %d (%s, %s, group %q): %d polls, %d records, %d rebalances, %d crashes; %d aborted and %d committed transactional records",
			n.p, n.cfg.Mode, n.cfg.Isolation, n.cfg.Group, cv.polls, cv.records, len(cv.rebalance), cv.crashes, sawAborted, sawCommitted)
		require.Positive(t, cv.records, "consumer %d read nothing", n.p)
		require.Empty(t, cv.losses, "no truncation on a healthy cluster")
		if n.cfg.Isolation == rc {
			require.Zero(t, sawAborted, "read_committed consumer %d polled records of aborted transactions", n.p)
		}
		if n.cfg.Mode == Assign && slices.Contains(n.cfg.Topics, txnA) {
			require.Positive(t, sawCommitted, "consumer %d read no committed transaction", n.p)
			if n.cfg.Isolation == ru {
				require.Positive(t, sawAborted, "read_uncommitted consumer %d sees aborted records: isolation is really applied", n.p)
			}
		}
		if n.cfg.Mode == Subscribe && slices.Contains(n.cfg.Topics, txnA) {
			// A member may own none of the transactional partitions; its group must.
			groupCommitted[n.cfg.Group] += sawCommitted
		}
		if n.cfg.Mode == Assign {
			// The same records whether restarted or not: a restart resumes at the position.
			requireCovered(t, v, fmt.Sprintf("assign consumer %d", n.p), n.cfg.Isolation, []*consumerView{cv})
			require.Len(t, cv.maxOff, 7, "consumer %d read every partition", n.p)
			require.Empty(t, cv.rebalance)
			continue
		}
		groups[n.cfg.Group] = append(groups[n.cfg.Group], cv)
		require.NotEmpty(t, cv.rebalance, "member %d noted its assignments", n.p)
		for _, nt := range cv.rebalance {
			require.Equal(t, n.cfg.Group, nt.Group)
			require.Equal(t, string(n.cfg.Isolation), nt.Isolation)
			require.Positive(t, nt.Generation)
			require.NotEmpty(t, nt.Member)
			for tp, ps := range nt.Partitions {
				require.Contains(t, n.cfg.Topics, tp)
				require.True(t, slices.IsSorted(ps))
			}
		}
	}
	require.Positive(t, groupCommitted[prefix+"-rc"], "group %s-rc read no committed transaction", prefix)
	for g, members := range groups {
		requireCovered(t, v, "group "+g, members[0].cfg.Isolation, members)
		// The group as a whole must have restarted: CI met a member that recorded no restart
		// in a 45 s run although restart_every is 12 s (its instance outlived its deadline;
		// not traced further), while the group's others did.
		crashes := 0
		for _, cv := range members {
			crashes += cv.crashes
		}
		require.Positive(t, crashes, "group %s: no member restarted", g)
		// Within one generation the group's members own disjoint partitions, and each
		// member's notes show a subset of what it owns then.
		owner := map[int32]map[string]string{} // generation -> "topic-partition" -> member
		for _, cv := range members {
			for _, nt := range cv.rebalance {
				if owner[nt.Generation] == nil {
					owner[nt.Generation] = map[string]string{}
				}
				for tp, ps := range nt.Partitions {
					for _, p := range ps {
						k := fmt.Sprintf("%s-%d", tp, p)
						if prev, ok := owner[nt.Generation][k]; ok {
							require.Equal(t, prev, nt.Member, "group %s generation %d: %s noted by two members", g, nt.Generation, k)
						}
						owner[nt.Generation][k] = nt.Member
					}
				}
			}
		}
		t.Logf("group %s: %d generations noted", g, len(owner))
		require.GreaterOrEqual(t, len(owner), 2, "the restarts rebalanced the group at least once")
	}

	res, by := pollFamilies(t, ctx, r.path)
	require.Empty(t, by[guarantee.NonmonotonicPoll], "nonmonotonic-poll findings")
	require.Empty(t, by[guarantee.PollSkip], "poll-skip findings")
	// The read_uncommitted readers' reads of aborted records are findings too, permitted at
	// that level; a read_committed one would be forbidden.
	require.Zero(t, res.Anomalies[guarantee.AbortedRead].Forbidden, "aborted records read at read_committed")
	require.NotEqual(t, results.Fail, res.Verdict)
}

// testFranzDataLoss truncates the log under consumers that have read it. The partition's
// followers are cut off from its leader (their fetches only) until the leader alone is the ISR;
// with min.insync.replicas=1 it goes on acknowledging, and the consumers read those records. Then
// the leader is killed and, the topic allowing unclean elections, a follower that never had them
// becomes leader: the log now ends below the consumers' positions. franz-go validates positions
// against the new leader's epochs (KIP-320) and reports ErrDataLoss; sarama, which does not, runs
// beside them for comparison.
func testFranzDataLoss(t *testing.T, c *harness.Cluster, log *slog.Logger) {
	ctx := withTimeout(t, 6*time.Minute)
	const name = "fc-loss"
	unclean := true
	tp := harness.TopicSpec{Name: name, Partitions: 1, RF: 3, MinISR: 1, Unclean: &unclean}
	require.NoError(t, c.CreateTopic(ctx, tp))
	st, err := c.DescribePartition(ctx, name, 0)
	require.NoError(t, err)
	leader := int(st.Leader)
	var followers []int
	for _, id := range st.Replicas {
		if int(id) != leader {
			followers = append(followers, int(id))
		}
	}
	group := groupCoordinatedAwayFrom(t, c, "fc-loss-group", leader)
	t.Logf("%s-0: leader %d epoch %d, followers %v; group %s", name, leader, st.LeaderEpoch, followers, group)

	phase := func(n int, acks kafkaconf.Acks) ProducerSpec {
		return ProducerSpec{ProducerConfig: ProducerConfig{Topics: []string{name}, MaxSends: n, Rate: 200,
			Delivery: kafkaconf.Delivery{Acks: &acks}}}
	}
	spec := Spec{
		Name: "franz-data-loss", Seed: 20260602, Duration: time.Minute, Topics: []harness.TopicSpec{tp},
		// acks=1 while the followers are cut off: the leader acknowledges at once, and the
		// followers, no longer caught up, leave the ISR (a follower as far as the leader stays in
		// it however long it does not fetch).
		Producers: []ProducerSpec{phase(100, kafkaconf.AcksAll), phase(100, kafkaconf.AcksLeader), phase(50, kafkaconf.AcksAll)},
		Consumers: []ConsumerConfig{
			{Topics: []string{name}, Mode: Assign},
			{Topics: []string{name}, Mode: Subscribe, Group: group},
			{Topics: []string{name}, Mode: Assign}, // sarama
		},
		FinalRead: FinalReadConfig{Isolations: []kafkaconf.Isolation{kafkaconf.ReadUncommitted}},
	}
	r := newMixedRun(t, ctx, c, spec, log)
	prods, cons := r.plan.producers, r.plan.consumers
	t.Cleanup(func() {
		if t.Failed() {
			dumpConsumerOps(t, r.path, cons)
		}
	})
	franzProcs, saramaProc := []int{cons[0].p, cons[1].p}, cons[2].p

	cctx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	var wg sync.WaitGroup
	consumerErrs := make([]error, len(cons))
	for i, n := range cons {
		env := r.franz
		if n.p == saramaProc {
			env = r.sarama
		}
		wg.Go(func() {
			_, consumerErrs[i] = RunConsumer(cctx, env, n.p, n.cfg)
		})
	}
	// produce runs phase i's producer and returns the high watermark once every record it sent
	// is below it.
	produce := func(i int, before int64) int64 {
		t.Helper()
		ps, err := RunProducer(ctx, r.sarama, prods[i].p, prods[i].cfg)
		require.NoError(t, err)
		require.Equal(t, int64(prods[i].cfg.MaxSends), ps.OK, "every send acknowledged: %+v", ps)
		o, err := c.WaitOffsets(ctx, name, 0, func(o harness.Offsets) bool { return o.HighWatermark >= before+ps.OK })
		require.NoError(t, err)
		require.Equal(t, before+ps.OK, o.HighWatermark, "only this phase wrote")
		return o.HighWatermark
	}
	readTo := func(what string, procs []int, off int64) {
		t.Helper()
		r.rec.await(t, ctx, what, func() bool {
			for _, p := range procs {
				if got, ok := r.rec.lastOffset(p, name, 0); !ok || got != off {
					return false
				}
			}
			return true
		})
	}
	all := append(slices.Clone(franzProcs), saramaProc)

	lostFrom := produce(0, 0)
	readTo("every consumer read phase 1", all, lostFrom-1)

	for _, f := range followers {
		require.NoError(t, c.Cut(ctx, harness.Link{From: f, To: leader}, harness.CutBlackhole))
	}
	// The high watermark passes the acks=1 records once the ISR is the leader alone.
	end2 := produce(1, lostFrom) - 1
	st, err = c.DescribePartition(ctx, name, 0)
	require.NoError(t, err)
	require.Equal(t, []int32{int32(leader)}, st.ISR, "the leader alone in the ISR")
	readTo("every consumer read what only the leader has", all, end2)
	// The member's commit of what it read must be in before the leader dies: the group resumes
	// from it whether the member keeps its session or not (the coordinator may be on the dead
	// broker), and it is a position the new leader's log no longer reaches.
	admin, err := c.Admin()
	require.NoError(t, err)
	err = kit.WaitUntil(ctx, time.Now().Add(time.Minute), 200*time.Millisecond, func() (bool, error) {
		resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{name: {0}})
		if err != nil {
			return false, err
		}
		b := resp.GetBlock(name, 0)
		if b == nil {
			return false, fmt.Errorf("no offset for %s-0", name)
		}
		return b.Offset == end2+1, fmt.Errorf("group %s committed %d", group, b.Offset)
	})
	require.NoError(t, err, "the member committed what it read")

	require.NoError(t, c.Kill(ctx, leader))
	elected := func(p harness.PartitionState) bool { return p.Leader >= 0 && int(p.Leader) != leader }
	wctx, wcancel := context.WithTimeout(ctx, 45*time.Second)
	st, err = c.WaitPartition(wctx, name, 0, elected)
	wcancel()
	if err != nil {
		t.Logf("no leader 45 s after the kill (%v); asking for an unclean election", err)
		res, aerr := admin.ElectLeaders(sarama.UncleanElection, map[string][]int32{name: {0}})
		require.NoError(t, aerr, "unclean election: %v", res)
		st, err = c.WaitPartition(ctx, name, 0, elected)
		require.NoError(t, err)
	}
	t.Logf("%s-0 after the kill: leader %d epoch %d isr %v", name, st.Leader, st.LeaderEpoch, st.ISR)
	require.NoError(t, c.HealAll(ctx))
	octx, ocancel := context.WithTimeout(ctx, 2*time.Minute)
	o, err := c.WaitOffsets(octx, name, 0, func(o harness.Offsets) bool { return o.HighWatermark >= lostFrom })
	ocancel()
	require.NoError(t, err)
	require.Equal(t, lostFrom, o.HighWatermark, "the new leader's log ends where the records only the old leader had began")
	end3 := produce(2, lostFrom) - 1
	actx, acancel := context.WithTimeout(ctx, 2*time.Minute)
	defer acancel()
	r.rec.await(t, actx, "the franz-go consumers noted the truncation and read the new records", func() bool {
		for _, p := range franzProcs {
			if got, ok := r.rec.lastOffset(p, name, 0); r.rec.lossCount(p) == 0 || !ok || got != end3 {
				return false
			}
		}
		return true
	})
	stopConsumers()
	wg.Wait()
	require.NoError(t, errors.Join(consumerErrs...))
	r.finish(t, ctx)
	// The cluster whole again for whatever runs after.
	require.NoError(t, c.Start(ctx, leader))

	v := readBack(t, r.path)
	views := consumerViews(t, v, cons)
	for _, p := range franzProcs {
		cv := views[p]
		require.NotEmpty(t, cv.losses)
		loss := cv.losses[0]
		t.Logf("franz-go consumer %d (%s): data-loss ops %v", p, cv.cfg.Mode, cv.losses)
		require.Equal(t, name, loss["topic"])
		require.EqualValues(t, 0, loss["partition"])
		require.EqualValues(t, end2+1, loss["offset"], "the consumer's position: after the last record it read")
		require.EqualValues(t, lostFrom, loss["reset_to"], "it resumes where the new leader's log diverges")
		// The first record after the op is the new leader's at reset_to.
		var after *history.Record
		for _, o := range v.ops {
			if o.Process.ID == p && o.F == history.FPoll && o.Type == history.OK && o.Index > int64(loss["i"].(int64)) && len(o.Value.Poll.Records) > 0 {
				after = &o.Value.Poll.Records[0]
				break
			}
		}
		require.NotNil(t, after)
		require.Equal(t, lostFrom, *after.Offset)
		require.True(t, strings.HasPrefix(after.Value, fmt.Sprintf("%d-", prods[2].p)), "read %s: a record the new leader took", after.Value)
	}
	sv := views[saramaProc]
	var saramaAfter int
	for off, val := range sv.polled[tpo{name, 0, -1}] {
		if strings.HasPrefix(val, fmt.Sprintf("%d-", prods[2].p)) {
			saramaAfter++
			t.Logf("sarama consumer read %s at %d", val, off)
		}
	}
	last, _ := r.rec.lastOffset(saramaProc, name, 0)
	t.Logf("sarama consumer %d: last offset read %d, %d records of the new leader read", saramaProc, last, saramaAfter)
	require.Empty(t, sv.losses, "sarama has no truncation detection: its consumer records no data-loss op")

	_, by := pollFamilies(t, ctx, r.path)
	for a, procs := range by {
		for _, p := range franzProcs {
			require.Zero(t, procs[p], "%s findings for franz-go consumer %d", a, p)
		}
	}
}

// groupCoordinatedAwayFrom returns the first of prefix-0, prefix-1, … whose coordinator is not
// node. Cutting a leader's followers off shrinks the ISR of every partition it leads that is
// written meanwhile, the group's __consumer_offsets partition among them when it leads that one
// too (the commits write it); killing the leader then leaves that partition without an electable
// replica (internal topics never elect uncleanly) and the group without a coordinator until the
// leader returns: its members, their session lost, can neither rejoin nor fetch.
func groupCoordinatedAwayFrom(t *testing.T, c *harness.Cluster, prefix string, node int) string {
	t.Helper()
	cl, err := sarama.NewClient(c.Bootstrap(), harness.SaramaConfig("verity-test-coordinator"))
	require.NoError(t, err)
	defer cl.Close()
	for i := range 50 {
		g := fmt.Sprintf("%s-%d", prefix, i)
		b, err := cl.Coordinator(g)
		require.NoError(t, err)
		if int(b.ID()) != node {
			return g
		}
	}
	t.Fatalf("every group %s-0..49 is coordinated by node %d", prefix, node)
	return ""
}

// dumpConsumerOps logs what the consumers' processes recorded other than polls, and the range of
// each run of polls: what a failed truncation test needs to be understood.
func dumpConsumerOps(t *testing.T, path string, cons []numbered[ConsumerConfig]) {
	hr, err := history.Open(path)
	if err != nil {
		t.Logf("reading the history back: %v", err)
		return
	}
	defer hr.Close()
	procs := map[int]bool{}
	for _, n := range cons {
		procs[n.p] = true
	}
	var op history.Op
	for {
		if err := hr.Next(&op); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Logf("reading the history back: %v", err)
			}
			return
		}
		if op.Process.Nemesis || !procs[op.Process.ID] || op.Type == history.Invoke {
			continue
		}
		if op.F == history.FPoll {
			if rs := op.Value.Poll.Records; len(rs) > 0 {
				t.Logf("op %d p%d poll %d records, offsets %d..%d", op.Index, op.Process.ID, len(rs), *rs[0].Offset, *rs[len(rs)-1].Offset)
			}
			continue
		}
		t.Logf("op %d p%d %s %s", op.Index, op.Process.ID, op.F, op.Value.Raw)
	}
}
