package workloads

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
	kfranz "github.com/verity-kafka/verity/workloads/kclient/franz"
)

// wireLog is a slog handler that counts the requests franz-go writes ("wrote EndTxn v4", at
// WireLevel) and passes info and above to the test's log.
type wireLog struct {
	mu    *sync.Mutex
	wrote map[string]map[int]int // request -> version -> count
	inner slog.Handler
	show  slog.Level
}

func newWireLog(t *testing.T) *wireLog { return newWireLogShowing(t, slog.LevelInfo) }

// newWireLogShowing passes the lines at show and above to the test's log (slog.LevelDebug:
// franz-go's info lines too).
func newWireLogShowing(t *testing.T, show slog.Level) *wireLog {
	return &wireLog{mu: &sync.Mutex{}, wrote: map[string]map[int]int{}, show: show,
		inner: slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: show})}
}

func (h *wireLog) Enabled(_ context.Context, l slog.Level) bool { return l >= WireLevel }

func (h *wireLog) Handle(ctx context.Context, r slog.Record) error {
	if rest, ok := strings.CutPrefix(r.Message, "wrote "); ok && r.Level == WireLevel {
		if name, v, ok := strings.Cut(rest, " v"); ok {
			if n, err := strconv.Atoi(v); err == nil {
				h.mu.Lock()
				if h.wrote[name] == nil {
					h.wrote[name] = map[int]int{}
				}
				h.wrote[name][n]++
				h.mu.Unlock()
			}
		}
	}
	if r.Level >= h.show {
		return h.inner.Handle(ctx, r)
	}
	return nil
}

func (h *wireLog) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.inner = h.inner.WithAttrs(as)
	return &c
}

func (h *wireLog) WithGroup(name string) slog.Handler {
	c := *h
	c.inner = h.inner.WithGroup(name)
	return &c
}

// versions are the versions of request name that franz-go wrote, and how often.
func (h *wireLog) versions(name string) map[int]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[int]int{}
	for v, n := range h.wrote[name] {
		out[v] = n
	}
	return out
}

func (h *wireLog) summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, name := range []string{"InitProducerID", "AddPartitionsToTxn", "Produce", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"} {
		fmt.Fprintf(&b, "%s %v; ", name, h.wrote[name])
	}
	return b.String()
}

// requireProtocol checks, from the requests franz-go wrote, that it spoke protocol p: under v1,
// EndTxn up to v4 and partitions added by AddPartitionsToTxn before Produce v11 or below; under
// v2 (KIP-890), EndTxn v5 and up and no AddPartitionsToTxn, partitions added by Produce v12+.
func requireProtocol(t *testing.T, h *wireLog, p kafkaconf.TxnProtocol, offsets bool) {
	t.Helper()
	t.Logf("requests franz-go wrote: %s", h.summary())
	ends, produces, adds := h.versions("EndTxn"), h.versions("Produce"), h.versions("AddPartitionsToTxn")
	require.NotEmpty(t, ends, "franz-go wrote no EndTxn")
	require.NotEmpty(t, produces)
	requireVersions(t, "EndTxn", ends, p, 4)
	requireVersions(t, "Produce", produces, p, 11)
	if p == kafkaconf.TxnProtocolV1 {
		require.NotEmpty(t, adds, "v1 adds partitions with AddPartitionsToTxn")
	} else {
		require.Empty(t, adds, "KIP-890 adds partitions with the produce itself")
	}
	if !offsets {
		return
	}
	commits, addOffsets := h.versions("TxnOffsetCommit"), h.versions("AddOffsetsToTxn")
	require.NotEmpty(t, commits)
	requireVersions(t, "TxnOffsetCommit", commits, p, 4)
	if p == kafkaconf.TxnProtocolV1 {
		require.NotEmpty(t, addOffsets, "v1 adds the group's offsets partition with AddOffsetsToTxn")
	} else {
		require.Empty(t, addOffsets, "KIP-890 adds the offsets partition with TxnOffsetCommit v5")
	}
}

// requireVersions: every version of request name that franz-go wrote is at most maxV1 under
// the v1 cap and above it under KIP-890.
func requireVersions(t *testing.T, name string, vs map[int]int, p kafkaconf.TxnProtocol, maxV1 int) {
	t.Helper()
	for v := range vs {
		if p == kafkaconf.TxnProtocolV1 {
			require.LessOrEqual(t, v, maxV1, "%s v%d under the v1 cap", name, v)
		} else {
			require.Greater(t, v, maxV1, "%s v%d under KIP-890", name, v)
		}
	}
}

// franzEnv is an Env for franz-go under protocol cap p, recording into a new history.
func franzEnv(t *testing.T, c *harness.Cluster, seed int64, p kafkaconf.TxnProtocol, h slog.Handler) (Env, *history.Writer, string) {
	t.Helper()
	return clientEnv(t, c, kafkaconf.FranzGo, seed, p, h)
}

// clientEnv is an Env for client, recording into a new history file of the test's.
func clientEnv(t *testing.T, c *harness.Cluster, client kafkaconf.ClientName, seed int64, p kafkaconf.TxnProtocol, h slog.Handler) (Env, *history.Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path, history.Header{Seed: seed})
	require.NoError(t, err)
	env, err := Env{Brokers: c.Bootstrap(), Recorder: w, Seed: seed, Processes: NewProcesses(100),
		Client: client, TxnProtocol: p, Log: slog.New(h)}.withDefaults()
	require.NoError(t, err)
	if env.kafka().IsProgram() {
		prog, err := StartProgram(t.Context(), env, "", nil, testLog{t})
		require.NoError(t, err, "starting the %s client program", client)
		t.Cleanup(func() { require.NoError(t, prog.Close()) })
		env.Program = prog
	}
	return env, w, path
}

// finalRead scans topics with sarama's final read into the history, and closes it.
func finalRead(t *testing.T, ctx context.Context, env Env, w *history.Writer, topics ...string) {
	t.Helper()
	env.Client = kafkaconf.Sarama
	fr, err := FinalRead(ctx, env, 50, FinalReadConfig{Topics: topics})
	require.NoError(t, err)
	require.True(t, fr.AllComplete(), "final read: %+v", fr)
	require.NoError(t, w.Close())
}

// testFranzEndAnnounced checks what the franz-go member's Commit relies on: franz-go v1.22.3 logs "ending
// transaction" with its commit flag before it sends EndTxn, once per EndTransaction.
func testFranzEndAnnounced(t *testing.T, c *harness.Cluster) {
	ctx := withTimeout(t, 2*time.Minute)
	tp := topic("fz-announce", 1)
	require.NoError(t, c.CreateTopic(ctx, tp))
	var mu sync.Mutex
	var ends []bool
	lg := kfranz.NewLog(slog.New(newWireLog(t)), func(commit bool) {
		mu.Lock()
		defer mu.Unlock()
		ends = append(ends, commit)
	})
	cl, err := kgo.NewClient(append(kfranz.Base(c.Bootstrap(), "verity-announce"), kgo.TransactionalID("fz-announce"),
		kgo.WithLogger(lg), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	require.NoError(t, err)
	defer cl.Close()
	for _, end := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		require.NoError(t, cl.BeginTransaction())
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: tp.Name, Value: []byte("v")}).FirstErr())
		require.NoError(t, cl.EndTransaction(ctx, end))
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []bool{true, false}, ends, "one announcement per EndTransaction, with its commit flag")
}

// testFranzTxns: committed transactions are wholly visible at read_committed, aborted ones are in
// the log but invisible, and franz-go speaks the expected protocol.
func testFranzTxns(t *testing.T, c *harness.Cluster, name string, capP, want kafkaconf.TxnProtocol) {
	ctx := withTimeout(t, 4*time.Minute)
	topics := []harness.TopicSpec{topic("fz-txn-a-"+name, 2), topic("fz-txn-b-"+name, 2)}
	for _, tp := range topics {
		require.NoError(t, c.CreateTopic(ctx, tp))
	}
	wl := newWireLog(t)
	env, w, path := franzEnv(t, c, 11, capP, wl)
	got, err := txnProtocol(ctx, env)
	require.NoError(t, err)
	t.Logf("transaction protocol for franz-go with cap %q: %s", capP, got)
	require.Equal(t, want, got)

	began := time.Now()
	st, err := RunTxnProducer(ctx, env, 1, TxnConfig{Topics: []string{topics[0].Name, topics[1].Name}, TxnID: "txns-" + name,
		MaxRecords: 4, AbortProbability: 0.3, MaxTxns: 40})
	require.NoError(t, err)
	t.Logf("txn stats after %s: %+v", time.Since(began).Round(time.Millisecond), st)
	require.Zero(t, st.Failed+st.Unknown+st.Crashes, "a healthy cluster fails no transaction")
	require.Greater(t, st.Committed, int64(15))
	require.Greater(t, st.Aborted, int64(4))
	requireProtocol(t, wl, want, false)
	finalRead(t, ctx, env, w, topics[0].Name, topics[1].Name)

	v := readBack(t, path)
	v.requireComplete(t, topics, history.ReadUncommitted, history.ReadCommitted)
	committed := map[string]bool{}
	var nCommitted, nAborted int
	for _, o := range v.ops {
		if o.F != history.FTxn || o.Type == history.Invoke {
			continue
		}
		tx := o.Value.Txn
		switch {
		case o.Type == history.OK:
			nCommitted++
			for _, r := range tx.Records {
				committed[r.Value] = true
				require.NotNil(t, r.Offset)
				require.Equal(t, r.Value, v.final[history.ReadCommitted][at(r)], "committed record %s (op %d) at read_committed", r.Value, o.Index)
			}
		case o.Type == history.Fail && tx.Intent == history.IntentAbort:
			nAborted++
			require.Equal(t, kclient.TxnAborted, o.Error)
			for _, r := range tx.Records {
				require.NotNil(t, r.Offset, "an aborted transaction's records were acknowledged first")
				require.Equal(t, r.Value, v.final[history.ReadUncommitted][at(r)], "aborted record %s is in the log", r.Value)
				_, visible := v.final[history.ReadCommitted][at(r)]
				require.False(t, visible, "aborted record %s (op %d) visible at read_committed", r.Value, o.Index)
			}
		default:
			t.Fatalf("op %d: %s %q", o.Index, o.Type, o.Error)
		}
	}
	for k, val := range v.final[history.ReadCommitted] {
		require.True(t, committed[val], "%s at %v is visible at read_committed but no transaction committed it", val, k)
	}
	require.Equal(t, int(st.Committed), nCommitted)
	require.Equal(t, int(st.Aborted), nAborted)
}

// testZombie: a second instance of client takes the transactional.id in the middle of the
// first's transaction. The first's later records and commits must fail, and nothing it wrote after
// the fence may be visible.
//
// Under the v1 protocol the zombie may also cost the usurper a transaction. franz-go takes the
// zombie's INVALID_PRODUCER_EPOCH for a transaction timeout (KIP-588) and re-initialises with
// its old producer ID and epoch; Kafka's coordinator checks only the producer ID before it
// fence-aborts an ongoing transaction (prepareInitProducerIdTransit, state Ongoing), and checks
// the epoch only on the retry, which it refuses. When the usurper's transaction is open at that
// moment, it is aborted: the usurper's next record fails with INVALID_PRODUCER_EPOCH (then
// franz-go recovers it, KIP-588 again, at the epoch the fence set), or its commit with
// PRODUCER_FENCED (then the instance is replaced). Nothing of it may be visible.
func testZombie(t *testing.T, c *harness.Cluster, client kafkaconf.ClientName, name string, capP kafkaconf.TxnProtocol) {
	ctx := withTimeout(t, 4*time.Minute)
	topics := []harness.TopicSpec{topic("zombie-a-"+name, 2), topic("zombie-b-"+name, 2)}
	for _, tp := range topics {
		require.NoError(t, c.CreateTopic(ctx, tp))
	}
	env, w, path := clientEnv(t, c, client, 7, capP, newWireLogShowing(t, slog.LevelDebug))
	// Enough transactions that the usurper runs some after the zombie has given up, whenever a
	// loaded machine lets the zombie try again.
	const maxTxns = 8
	st, err := RunTxnProducer(ctx, env, 1, TxnConfig{Topics: []string{topics[0].Name, topics[1].Name}, TxnID: "zombie-" + name,
		MaxRecords: 3, ZombieProbability: 1, MaxZombies: 1, MaxTxns: maxTxns})
	require.NoError(t, err)
	t.Logf("txn stats: %+v", st)
	require.Equal(t, int64(1), st.Zombies)
	require.Equal(t, []int{1, 100}, st.Processes, "the usurper is a new history process")
	finalRead(t, ctx, env, w, topics[0].Name, topics[1].Name)

	v := readBack(t, path)
	v.requireComplete(t, topics, history.ReadUncommitted, history.ReadCommitted)
	var zombieTxns, usurperTxns []history.Op
	var usurperInvokes []int64
	usurperFirst := int64(-1)
	for _, o := range v.ops {
		if o.F == history.FCrash && o.Process.ID == 100 && o.Type == history.Invoke {
			t.Logf("usurper crash op %d: %s", o.Index, o.Value.Raw)
		}
		if o.F != history.FTxn {
			continue
		}
		switch {
		case o.Process.ID == 100 && o.Type == history.Invoke:
			if usurperFirst < 0 {
				usurperFirst = o.Index
			}
			usurperInvokes = append(usurperInvokes, o.Index)
		case o.Process.ID == 1 && o.Type != history.Invoke:
			zombieTxns = append(zombieTxns, o)
		case o.Process.ID == 100 && o.Type != history.Invoke:
			usurperTxns = append(usurperTxns, o)
		}
	}
	require.Len(t, zombieTxns, 2, "the interrupted transaction and one more attempt")
	require.Len(t, usurperTxns, maxTxns-1)
	for i, o := range zombieTxns {
		t.Logf("zombie txn op %d: %s %q", o.Index, o.Type, o.Error)
		require.NotEqual(t, history.OK, o.Type, "a fenced instance's transaction must not commit (op %d: %s)", o.Index, o.Error)
		// The later attempt began after the fence: its commit certainly failed. franz-go
		// also knows the interrupted one failed (sarama may leave it unknown).
		if i == 1 || client == kafkaconf.FranzGo {
			require.Equal(t, history.Fail, o.Type, "a fenced instance's transaction certainly did not commit (op %d: %s)", o.Index, o.Error)
		}
		for _, r := range o.Value.Txn.Records {
			for k, val := range v.final[history.ReadCommitted] {
				require.NotEqual(t, r.Value, val, "zombie record %s visible as committed at %v", r.Value, k)
			}
		}
	}
	require.Greater(t, zombieTxns[1].Index, usurperFirst, "the later attempt began after the usurper took the id")
	for _, o := range usurperTxns {
		// franz-go reads the fence as a transaction timeout (KIP-588) and initialises again with
		// its old epoch; under v1 that aborts the usurper's open transaction (see docs/clients.md).
		if o.Type != history.OK && client == kafkaconf.FranzGo && capP == kafkaconf.TxnProtocolV1 &&
			(strings.Contains(o.Error, "PRODUCER_FENCED") || strings.Contains(o.Error, "INVALID_PRODUCER_EPOCH")) {
			t.Logf("usurper txn op %d: %s %q: the zombie's re-initialisation aborted it", o.Index, o.Type, o.Error)
			for _, r := range o.Value.Txn.Records {
				_, visible := v.final[history.ReadCommitted][at(r)]
				require.False(t, visible, "record %s of the usurper's fenced transaction is visible", r.Value)
			}
			continue
		}
		require.Equal(t, history.OK, o.Type, "the usurper commits (op %d: %s)", o.Index, o.Error)
		for _, r := range o.Value.Txn.Records {
			require.Equal(t, r.Value, v.final[history.ReadCommitted][at(r)])
		}
	}
	// The usurper goes on: every transaction it began after the zombie's last attempt ended commits.
	zombieDone, after := zombieTxns[len(zombieTxns)-1].Index, 0
	for i, o := range usurperTxns {
		if usurperInvokes[i] > zombieDone {
			after++
			require.Equal(t, history.OK, o.Type, "the usurper's transaction op %d, begun after the zombie gave up, commits: %s", o.Index, o.Error)
		}
	}
	// A loaded machine may hold the zombie's last attempt back until the usurper is done: then
	// none of its transactions came after it, and a new instance of the id, begun once every
	// other has ended, shows that the id commits again.
	if after == 0 {
		t.Logf("no usurper transaction began after the zombie's last attempt (op %d; usurper invokes %v): a new instance goes on", zombieDone, usurperInvokes)
		w2, err := history.Create(filepath.Join(t.TempDir(), "again.jsonl"), history.Header{Seed: 8})
		require.NoError(t, err)
		defer w2.Close()
		next := env
		next.Recorder = w2
		again, err := RunTxnProducer(ctx, next, 101, TxnConfig{Topics: []string{topics[0].Name, topics[1].Name}, TxnID: "zombie-" + name,
			MaxRecords: 3, MaxTxns: 2})
		require.NoError(t, err)
		require.Equal(t, int64(2), again.Committed, "the id's next instance commits once the zombie has given up: %+v", again)
	}
}

// testFencedRestart: an outsider initialises the workload's transactional.id while it runs. The
// workload's instance is fenced, recorded as a crash, and a new instance goes on committing.
func testFencedRestart(t *testing.T, c *harness.Cluster, client kafkaconf.ClientName, name string, capP kafkaconf.TxnProtocol) {
	ctx := withTimeout(t, 3*time.Minute)
	topics := []harness.TopicSpec{topic("fence-a-"+name, 2), topic("fence-b-"+name, 2)}
	for _, tp := range topics {
		require.NoError(t, c.CreateTopic(ctx, tp))
	}
	env, w, path := clientEnv(t, c, client, 3, capP, newWireLog(t))
	rec := newWatchRecorder(w)
	env.Recorder = rec
	cfg := TxnConfig{Topics: []string{topics[0].Name, topics[1].Name}, TxnID: "fence-me-" + name, MaxRecords: 3, Gap: 20 * time.Millisecond}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	type result struct {
		st  TxnStats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := RunTxnProducer(wctx, env, 1, cfg)
		done <- result{st, err}
	}()
	rec.await(t, ctx, "5 commits", func() bool { return rec.count("txn/ok") >= 5 })
	outsider, err := openTxnProducer(ctx, env, 99, "outsider", cfg.TxnID, cfg.TxnClientConfig.withDefaults(), env.Log)
	require.NoError(t, err)
	outsider.Close()
	rec.await(t, ctx, "a crash op", func() bool { return rec.count("crash/ok") >= 1 })
	before := rec.count("txn/ok")
	rec.await(t, ctx, "5 commits by the new instance", func() bool { return rec.count("txn/ok") >= before+5 })
	stop()
	res := <-done
	require.NoError(t, res.err)
	t.Logf("stats: %+v", res.st)
	require.GreaterOrEqual(t, res.st.Crashes, int64(1))
	finalRead(t, ctx, env, w, topics[0].Name, topics[1].Name)

	v := readBack(t, path)
	v.requireComplete(t, topics, history.ReadUncommitted, history.ReadCommitted)
	crashAt := int64(-1)
	for _, o := range v.ops {
		switch {
		case o.F == history.FCrash && o.Type == history.Invoke && crashAt < 0:
			crashAt = o.Index
			t.Logf("crash op %d: %s", o.Index, o.Value.Raw)
		case o.F == history.FTxn && o.Type == history.OK:
			for _, r := range o.Value.Txn.Records {
				require.Equal(t, r.Value, v.final[history.ReadCommitted][at(r)], "committed record %s visible", r.Value)
			}
		case o.F == history.FTxn && o.Type == history.Fail:
			// Only fail: an info (unknown) transaction may have committed.
			t.Logf("txn op %d: %s %q", o.Index, o.Type, o.Error)
			for _, r := range o.Value.Txn.Records {
				for k, val := range v.final[history.ReadCommitted] {
					require.NotEqual(t, r.Value, val, "record %s of a transaction that did not commit visible at %v", r.Value, k)
				}
			}
		}
	}
	require.Positive(t, crashAt)
}

// feed writes values in-0, in-1, … to topic with a plain franz-go producer until ctx ends, about
// rate a second, round robin over the partitions.
func feed(ctx context.Context, brokers []string, topic string, rate int) (int, error) {
	cl, err := kgo.NewClient(append(kfranz.Base(brokers, "verity-feed"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))...)
	if err != nil {
		return 0, fmt.Errorf("creating the feeder: %w", err)
	}
	defer cl.Close()
	const batch = 10
	tick := time.NewTicker(time.Second * batch / time.Duration(rate))
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n, nil
		case <-tick.C:
		}
		recs := make([]*kgo.Record, batch)
		for i := range recs {
			recs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("in-%d", n+i))}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			if ctx.Err() != nil {
				return n, nil
			}
			return n, fmt.Errorf("feeding %s: %w", topic, err)
		}
		n += batch
	}
}

// What the processors' run must have done before it ends (processorCount counts it).
var processorNeed = map[string]int{"crash": 1, "rebalance": 1, "rpw ok": 11, "rpw aborted": 1, "rpw inputs": 501}

func processorCount(op history.Op, add func(string, int)) {
	switch {
	case op.F == history.FCrash && op.Type == history.OK:
		add("crash", 1)
	case op.F == history.FAssign && op.Type == history.OK && strings.Contains(string(op.Value.Raw), `"rebalance":true`):
		add("rebalance", 1)
	case op.F == history.FRPW && op.Type == history.OK && op.Value.RPW != nil:
		add("rpw ok", 1)
		add("rpw inputs", len(op.Value.RPW.Input))
	case op.F == history.FRPW && op.Type == history.Fail && op.Error == kclient.TxnAborted:
		add("rpw aborted", 1)
	}
}

// testFranzProcessor: two franz-go processors in one group, with aborts and crashes mid-
// transaction, over a fed input. Every input a committed step consumed has its output exactly
// once at read_committed; no failed step's output is visible; no committed-visible input below
// the committed position was skipped.
func testFranzProcessor(t *testing.T, c *harness.Cluster, name string, capP, want kafkaconf.TxnProtocol) {
	ctx := withTimeout(t, 5*time.Minute)
	in, out := topic("fz-in-"+name, 3), topic("fz-out-"+name, 3)
	for _, tp := range []harness.TopicSpec{in, out} {
		require.NoError(t, c.CreateTopic(ctx, tp))
	}
	wl := newWireLog(t)
	env, w, path := franzEnv(t, c, 5, capP, wl)
	// 15 s at least (a processor crashes every 10 s), then until the processors have done what the checks below count on (a
	// crash mid-transaction, a rebalance, committed and aborted steps); 3 minutes is a deadline
	// a loaded machine cannot miss.
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	env.Recorder = &untilRecorder{Recorder: env.Recorder, stop: cancel, until: countedUntil(15*time.Second, processorNeed, processorCount)}
	var wg sync.WaitGroup
	var fed int
	var feedErr error
	wg.Go(func() { fed, feedErr = feed(rctx, c.Bootstrap(), in.Name, 200) })
	cfg := ProcessorConfig{Input: in.Name, Output: out.Name, Group: "fz-rpw-" + name, BatchRecords: 50,
		AbortProbability: 0.15, CrashEvery: 10 * time.Second}
	stats := make([]ProcessorStats, 2)
	errs := make([]error, 2)
	for i := range stats {
		wg.Go(func() { stats[i], errs[i] = RunProcessor(rctx, env, i+1, cfg) })
	}
	wg.Wait()
	require.NoError(t, feedErr)
	for i := range stats {
		require.NoError(t, errs[i])
		t.Logf("processor %d: %+v", i+1, stats[i])
	}
	t.Logf("fed %d inputs", fed)
	requireProtocol(t, wl, want, true)
	finalRead(t, ctx, env, w, in.Name, out.Name)

	v := readBack(t, path)
	v.requireComplete(t, []harness.TopicSpec{in, out}, history.ReadUncommitted, history.ReadCommitted)
	processed := map[tpo]int{}     // inputs of committed steps
	okOutputs := map[string]bool{} // values of committed steps' outputs
	var ok, failed, aborted, unknown, crashes, rebalances int
	for _, o := range v.ops {
		switch {
		case o.F == history.FCrash && o.Type == history.OK:
			crashes++
		case o.F == history.FAssign && o.Type == history.OK && strings.Contains(string(o.Value.Raw), `"rebalance":true`):
			rebalances++
		case o.F == history.FRPW && o.Type != history.Invoke:
			st := o.Value.RPW
			require.Len(t, st.Output, len(st.Input), "one output per input")
			switch o.Type {
			case history.OK:
				ok++
				for i, r := range st.Input {
					processed[at(r)]++
					require.Equal(t, 1, processed[at(r)], "input %s at %v processed by two committed steps (op %d)", r.Value, at(r), o.Index)
					res := st.Output[i]
					okOutputs[res.Value] = true
					require.Equal(t, r.Value, res.Key, "the output names its input")
					require.Equal(t, res.Value, v.final[history.ReadCommitted][at(res)], "output of committed input %s (op %d) at read_committed", r.Value, o.Index)
				}
			case history.Fail:
				failed++
				if o.Error == kclient.TxnAborted {
					aborted++
				}
				for _, res := range st.Output {
					if res.Offset == nil {
						continue
					}
					_, visible := v.final[history.ReadCommitted][at(res)]
					require.False(t, visible, "output %s of a step that did not commit (op %d: %s) is visible", res.Value, o.Index, o.Error)
				}
			default:
				unknown++
				t.Logf("rpw op %d: unknown outcome: %s", o.Index, o.Error)
			}
		}
	}
	// Exactly once: every output visible at read_committed is a committed step's (each of
	// which was checked visible above, and no input was committed by two steps).
	visible := 0
	for k, val := range v.final[history.ReadCommitted] {
		if k.topic != out.Name {
			continue
		}
		require.True(t, okOutputs[val], "output %s at %v visible at read_committed, but no committed step wrote it", val, k)
		visible++
	}
	require.Equal(t, len(okOutputs), visible, "the committed outputs are all the read_committed output holds")
	// None skipped: the committed inputs of each partition are every committed-visible input up
	// to the furthest one processed.
	maxDone := map[int32]int64{}
	for k := range processed {
		maxDone[k.partition] = max(maxDone[k.partition], k.offset+1)
	}
	for k, val := range v.final[history.ReadCommitted] {
		if k.topic == in.Name && k.offset < maxDone[k.partition] {
			require.Equal(t, 1, processed[k], "input %s at %v is below the committed position but no committed step processed it", val, k)
		}
	}
	t.Logf("rpw steps: %d committed (%d inputs), %d failed (%d aborted on purpose), %d unknown; %d crashes, %d rebalances",
		ok, len(processed), failed, aborted, unknown, crashes, rebalances)
	require.Zero(t, unknown, "a healthy cluster leaves no step unknown")
	require.GreaterOrEqual(t, ok, processorNeed["rpw ok"], "committed steps by the deadline")
	require.GreaterOrEqual(t, aborted, processorNeed["rpw aborted"], "steps aborted on purpose by the deadline")
	require.GreaterOrEqual(t, crashes, processorNeed["crash"], "the processors crashed mid-transaction by the deadline")
	require.GreaterOrEqual(t, rebalances, processorNeed["rebalance"], "rebalances by the deadline")
	require.GreaterOrEqual(t, len(processed), processorNeed["rpw inputs"], "inputs of committed steps by the deadline")
}
