package workloads

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// testSinks runs, with client, one sink of every mode on one input topic, each member crashed
// about every 2 s right after a side effect and before its offset commit, then reads the stores
// back. The modes that apply a replayed input again (naive, http) must show duplicates in their
// store; the others must not; none may miss an input below its committed position. Its sinks,
// topics and groups are named with prefix, apart from another client's run.
func testSinks(t *testing.T, c *harness.Cluster, log *slog.Logger, client kafkaconf.ClientName, prefix string) {
	ctx := withTimeout(t, 6*time.Minute)
	in, out := prefix+"-sink-in", prefix+"-sink-out"
	topics := []harness.TopicSpec{topic(in, 3), topic(out, 3)}
	name := func(n string) string { return prefix + "_" + n }
	var sinks []SinkConfig
	for _, m := range sink.Modes() {
		sc := SinkConfig{Name: name(strings.ReplaceAll(string(m.Mode), "-", "_")), Mode: m.Mode, Topic: in, CrashEvery: 2 * time.Second}
		if m.Relays {
			sc.Outbox = out
		}
		sinks = append(sinks, sc)
	}
	// The outbox's downstream consumer, de-duplicating by event id.
	sinks = append(sinks, SinkConfig{Name: name("downstream"), Mode: sink.UniqueKey, Topic: out, CrashEvery: 2 * time.Second})
	// Until every sink crashed twice and the outbox's relay three times, 20 s at least: a crash
	// waits for the next input after its time comes, and a new instance rejoins the group before
	// it reads again, so a slow start (a fresh cluster, a loaded machine) crashes rarely at first.
	// 3 minutes is a deadline a loaded machine cannot miss.
	need := map[string]int{}
	for _, sc := range sinks {
		need[sc.Name] = 2
		if sc.Outbox != "" {
			need[relayKey(sc.Name)] = 3
		}
	}
	spec := Spec{Name: prefix + "-sinks", Seed: 20261201, Duration: 3 * time.Minute, Topics: topics, Client: client,
		Producers: []ProducerSpec{{ProducerConfig: ProducerConfig{Topics: []string{in}, Rate: 40}}},
		Sinks:     sinks, Log: log,
		Until: crashedUntil(20*time.Second, need, func(op history.Op) (string, bool) {
			var note history.Crash
			if json.Unmarshal(op.Value.Raw, &note) != nil || note.Sink == "" {
				return "", false
			}
			if note.Relay {
				return relayKey(note.Sink), true
			}
			return note.Sink, true
		})}
	path := filepath.Join(t.ArtifactDir(), "history.jsonl")
	keepOnFailure(t, path)
	res, err := Run(ctx, c, path, spec)
	require.NoError(t, err)
	require.Len(t, res.Sinks, len(sinks))
	byName := map[string]SinkStats{}
	for i, st := range res.Sinks {
		byName[sinks[i].Name] = st
		t.Logf("sink %s: applied %d absorbed %d fails %d unknown %d crashes %d", sinks[i].Name, st.Applied, st.Absorbed,
			st.Fails, st.Unknown, st.Crashes)
		require.GreaterOrEqual(t, st.Crashes, int64(2), "sink %s crashed too rarely to test anything", sinks[i].Name)
	}

	// The stores, as the sink-read ops recorded them.
	reads := map[string]SinkRead{}
	v := readBack(t, path)
	for _, o := range v.ops {
		if o.F == history.FSinkRead && o.Type == history.OK {
			var r SinkRead
			require.NoError(t, json.Unmarshal(o.Value.Raw, &r))
			reads[r.Sink] = r
		}
	}
	require.Len(t, reads, len(sinks), "one sink-read per sink")
	for _, sc := range sinks {
		r := reads[sc.Name]
		info, _ := sc.Mode.Info()
		dups := 0
		for _, n := range r.Effects {
			if n > 1 {
				dups++
			}
		}
		require.NotEmpty(t, r.Effects, "sink %s applied nothing", sc.Name)
		require.NotEmpty(t, r.Committed, "sink %s committed no position", sc.Name)
		if info.Dedupes {
			require.Zero(t, dups, "sink %s (%s) must apply each input once", sc.Name, sc.Mode)
		} else {
			require.Positive(t, dups, "sink %s (%s): every crash comes after a side effect and before its commit, so its input is applied again", sc.Name, sc.Mode)
		}
		if sc.Mode == sink.UniqueKey || sc.Mode == sink.Inbox {
			require.Positive(t, byName[sc.Name].Absorbed, "sink %s: the replays after its crashes were absorbed by the store", sc.Name)
		}
		if sc.Mode == sink.OffsetsInDB {
			require.Zero(t, byName[sc.Name].Absorbed, "offsets-in-db resumes after the last applied input: nothing is replayed")
			env, err := Env{Brokers: c.Bootstrap()}.settled()
			require.NoError(t, err)
			group, err := groupOffsets(env, "verity-sink-"+sc.Name, in)
			require.NoError(t, err)
			require.Empty(t, group, "offsets-in-db keeps its positions in its store: its group commits nothing to Kafka")
		}
	}

	// The relay crashed between publishes and marks, and drained the outbox at the end.
	require.Len(t, res.Relays, 1)
	rl := res.Relays[0]
	t.Logf("relay: published %d failed %d marks %d crashes %d drained %v", rl.Published, rl.Failed, rl.Marks, rl.Crashes, rl.Drained)
	require.True(t, rl.Drained)
	require.GreaterOrEqual(t, rl.Crashes, int64(3), "the relay crashed too rarely to test anything")
	require.Greater(t, rl.Published, rl.Marks, "every crash comes after a publish and before its mark")
	require.Zero(t, *reads[name("outbox")].Unsent)

	// The checker sees the same: duplicates of the at-least-once modes and republishes of the
	// outbox, permitted; nothing else (the downstream sink absorbed the republishes).
	r, err := verify.CheckFile(ctx, path, verify.Options{})
	require.NoError(t, err)
	require.Equal(t, results.Pass, r.Verdict, "unknown: %v", r.UnknownReasons)
	dup := r.Anomalies[guarantee.EffectDuplicate]
	require.Positive(t, dup.Count)
	require.Zero(t, dup.Forbidden)
	require.Zero(t, r.Anomalies[guarantee.EffectMissing].Count, "%+v", r.Anomalies[guarantee.EffectMissing].Examples)
	require.Positive(t, r.Anomalies[guarantee.OutboxDuplicate].Count)
	require.Zero(t, r.Anomalies[guarantee.OutboxDuplicate].Forbidden)
	require.Zero(t, r.Anomalies[guarantee.OutboxLost].Count, "%+v", r.Anomalies[guarantee.OutboxLost].Examples)
	require.Zero(t, r.Anomalies[guarantee.Duplicate].Count, "a republish is no producer duplicate: %+v", r.Anomalies[guarantee.Duplicate].Examples)
}

// relayKey names the crashes of sink name's outbox relay apart from the sink's own.
func relayKey(name string) string { return name + " relay" }

// memStore is a sinkStore in memory: every apply succeeds, and positions are fixed.
type memStore struct {
	applied []int64 // offsets, in the order applied
	pos     map[int32]int64
}

func (m *memStore) apply(_ context.Context, ev EffectValue) (bool, bool, error) {
	m.applied = append(m.applied, ev.Offset)
	return true, false, nil
}
func (m *memStore) positions(context.Context, string) (map[int32]int64, error) { return m.pos, nil }
func (m *memStore) close()                                                     {}

// appliedFirst is a consumer that fails the test when told a record is recorded (and so may be
// committed) before the store has applied it.
type appliedFirst struct {
	t *testing.T
	*scriptedConsumer
	store *memStore
}

func (a appliedFirst) Recorded(recs []kclient.Event) {
	for _, ev := range recs {
		require.Contains(a.t, a.store.applied, *ev.Record.Offset, "offset %d told recorded before its effect", *ev.Record.Offset)
	}
	a.scriptedConsumer.Recorded(recs)
}

// TestSinkCommitsAfterEffects: over any client, a sink applies a poll's records in order and only
// then tells the client they are recorded (which commits them); a crash leaves the record it
// applied last untold; a sink that keeps its positions in its store places each assignment at
// the store's offsets before it applies anything, and asks the client not to commit.
func TestSinkCommitsAfterEffects(t *testing.T) {
	assigned := kclient.Event{Kind: kclient.EventAssigned, Claims: kclient.Claims{Generation: 1, Partitions: map[string][]int32{"in": {0}}}}
	script := func() [][]kclient.Event {
		return [][]kclient.Event{
			{assigned, recEvent("in", 0, 5, "0-6"), recEvent("in", 0, 6, "0-7")},
			{recEvent("in", 0, 7, "0-8")},
		}
	}
	for _, tc := range []struct {
		name      string
		mode      sink.Mode
		crashIn   time.Duration
		applied   []int64
		recorded  [][]int64
		sought    []map[string]map[int32]int64
		storesPos bool
	}{
		{name: "offsets in kafka", mode: sink.UniqueKey, applied: []int64{5, 6, 7}, recorded: [][]int64{{5, 6}, {7}}},
		{name: "crash after the first effect", mode: sink.Naive, crashIn: time.Nanosecond, applied: []int64{5}},
		{name: "offsets in the store", mode: sink.OffsetsInDB, applied: []int64{5, 6, 7}, recorded: [][]int64{{5, 6}, {7}},
			sought: []map[string]map[int32]int64{{"in": {0: 5}}}, storesPos: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := history.Create(filepath.Join(t.TempDir(), "history.jsonl"), history.Header{Seed: 1})
			require.NoError(t, err)
			defer w.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s := &scriptedConsumer{polls: script(), drained: cancel}
			var spec kclient.ConsumerSpec
			store := &memStore{pos: map[int32]int64{0: 5}}
			opener := funcOpener{open: func(cs kclient.ConsumerSpec) kclient.Consumer {
				spec = cs
				return appliedFirst{t, s, store}
			}}
			env, err := Env{Brokers: []string{"unused:9092"}, Recorder: w, Seed: 1}.withDefaults()
			require.NoError(t, err)
			cfg, err := SinkConfig{Name: "s", Mode: tc.mode, Topic: "in"}.resolved()
			require.NoError(t, err)
			w2 := &sinkRun{env: env, cl: opener, openStore: func(context.Context) (sinkStore, error) { return store, nil },
				cfg: cfg, p: 1, proc: history.Client(1), log: env.Log}
			require.NoError(t, w2.instance(ctx, tc.crashIn))
			require.Equal(t, tc.applied, store.applied)
			require.Equal(t, tc.recorded, s.recorded, "told recorded: only what was applied, after it was")
			require.Equal(t, tc.sought, s.sought)
			require.Equal(t, tc.storesPos, spec.StorePositions)
			require.Equal(t, "verity-sink-s", spec.Group)
			require.True(t, s.closed)
		})
	}
}
