package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

// TestOnCluster runs every workload role of every client against one real 3-node cluster,
// shared by its subtests (each with topics of its own), with sarama's final read as the
// measure: producers of every kind, transactions with zombies and fencing under each transaction
// protocol the client speaks, read-process-write, consumers in both modes at both isolation
// levels, two at a time; then, one at a time, producers refused by a short ISR and cut from a
// broker, the recording overhead (with -figures), and last a log truncated under the consumers
// by an unclean election (it kills a broker).
func TestOnCluster(t *testing.T) {
	c := harnesstest.Start(t, harness.Spec{Nodes: 3, Postgres: true, Ledger: true})
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The shared log is printed after every subtest's own output when the test fails; the
	// names of the failed subtests come last, where a truncated CI log still shows them.
	var failed failedRuns
	t.Cleanup(func() {
		if names := failed.list(); len(names) > 0 {
			t.Logf("failed subtests (their messages are above the shared log): %s", strings.Join(names, "; "))
		}
	})

	// The workloads that leave the cluster as they found it run two at a time (-parallel,
	// GOMAXPROCS by default): each on topics, groups and transactional.ids of its own (a
	// default id, verity-txn-<process>, would fence another subtest's). Those that pause, cut or
	// kill a node run after them, one at a time.
	failed.run(t, "on the healthy cluster", func(t *testing.T) {
		failed.run(t, "sarama", func(t *testing.T) {
			t.Parallel()
			failed.run(t, "sinks: every mode, crashed between side effect and commit", func(t *testing.T) {
				testSinks(t, c, log, kafkaconf.Sarama, "s")
			})
			failed.run(t, "mixed healthy", func(t *testing.T) { testMixed(t, c, log, kafkaconf.Sarama) })
			failed.run(t, "zombie is fenced", func(t *testing.T) { testZombie(t, c, kafkaconf.Sarama, "sarama", "") })
			failed.run(t, "fenced from outside: crash and new instance", func(t *testing.T) {
				testFencedRestart(t, c, kafkaconf.Sarama, "sarama", "")
			})
			failed.run(t, "consumers: assign and subscribe, both isolations, groups with restarts", func(t *testing.T) {
				testConsumers(t, c, log, kafkaconf.Sarama, "sc")
			})
		})
		failed.run(t, "java", func(t *testing.T) {
			t.Parallel()
			// Built once (Maven, the first time on a machine), before its subtests start it.
			java, _ := kafkaconf.LookupClient(kafkaconf.Java)
			_, err := ProgramCommand(withTimeout(t, 10*time.Minute), java, "", log)
			require.NoError(t, err, "building the Java client program")
			failed.run(t, "keeps the remote client protocol", func(t *testing.T) { testJavaProtocol(t) })
			failed.run(t, "mixed healthy", func(t *testing.T) { testMixed(t, c, log, kafkaconf.Java) })
			failed.run(t, "sinks: every mode, crashed between side effect and commit", func(t *testing.T) {
				testSinks(t, c, log, kafkaconf.Java, "j")
			})
			failed.run(t, "zombie is fenced", func(t *testing.T) { testZombie(t, c, kafkaconf.Java, "java", "") })
			failed.run(t, "fenced from outside: crash and new instance", func(t *testing.T) {
				testFencedRestart(t, c, kafkaconf.Java, "java", "")
			})
			failed.run(t, "consumers: assign and subscribe, both isolations, groups with restarts", func(t *testing.T) {
				testConsumers(t, c, log, kafkaconf.Java, "jc")
			})
			failed.run(t, "share group: accept, release, reject, a member crashed holding records", func(t *testing.T) {
				testShare(t, c, log, shareProgram(t, c, log, kafkaconf.Java), "js")
			})
			failed.run(t, "share group: an acknowledgement after the lock ended fails", func(t *testing.T) {
				testShareLockEnd(t, c, log, shareProgram(t, c, log, kafkaconf.Java), "js")
			})
		})
		failed.run(t, "franz-go", func(t *testing.T) {
			t.Parallel()
			failed.run(t, "every kind of producer, through Run", func(t *testing.T) { testFranzProducers(t, c, log) })
			failed.run(t, "mixed healthy, through the remote client protocol", func(t *testing.T) {
				// This test binary, as verity client serve --client franz-go (TestMain).
				testMixed(t, c, log, kafkaconf.FranzGo, "env", serveEnv+"=franz-go", os.Args[0], "-test.run=^$")
			})
			failed.run(t, "EndTxn is announced in franz-go's log", func(t *testing.T) { testFranzEndAnnounced(t, c) })
			failed.run(t, "sinks: every mode, crashed between side effect and commit", func(t *testing.T) {
				testSinks(t, c, log, kafkaconf.FranzGo, "f")
			})
			for _, pc := range []struct {
				name      string
				cap, want kafkaconf.TxnProtocol
			}{
				{"default", "", kafkaconf.TxnProtocolV2},
				{"capped-v1", kafkaconf.TxnProtocolV1, kafkaconf.TxnProtocolV1},
			} {
				failed.run(t, "transactions "+pc.name, func(t *testing.T) {
					name := "franz-" + pc.name
					failed.run(t, "commits and aborts", func(t *testing.T) { testFranzTxns(t, c, name, pc.cap, pc.want) })
					failed.run(t, "zombie is fenced", func(t *testing.T) { testZombie(t, c, kafkaconf.FranzGo, name, pc.cap) })
					failed.run(t, "fenced from outside", func(t *testing.T) { testFencedRestart(t, c, kafkaconf.FranzGo, name, pc.cap) })
					failed.run(t, "processor", func(t *testing.T) { testFranzProcessor(t, c, name, pc.cap, pc.want) })
				})
			}
			failed.run(t, "consumers: assign and subscribe, both isolations, groups with restarts", func(t *testing.T) {
				testConsumers(t, c, log, kafkaconf.FranzGo, "fc")
			})
			failed.run(t, "share group: accept, release, reject, a member crashed holding records", func(t *testing.T) {
				testFranzShare(t, c, log)
			})
			failed.run(t, "share group: an acknowledgement after the lock ended fails", func(t *testing.T) {
				testFranzShareLockEnd(t, c, log)
			})
		})
		failed.run(t, "a client at another version runs in a driver", func(t *testing.T) {
			t.Parallel()
			testDriven(t, c, log)
		})
	})
	failed.run(t, "franz-go: refused below min.insync.replicas", func(t *testing.T) { testFranzRefusals(t, c, log) })
	failed.run(t, "franz-go: client link cut: ok or info, fail only when unwritten", func(t *testing.T) { testFranzProducerCut(t, c, log) })
	// The recording overhead is a measurement, for closing notes and docs, not a check: it runs
	// with -figures only (go test -run TestOnCluster -figures ./workloads).
	if *fullFigures {
		failed.run(t, "recording overhead", func(t *testing.T) {
			for _, cl := range kafkaconf.Clients() {
				failed.run(t, string(cl.Name), func(t *testing.T) { testOverhead(t, c, cl.Name) })
			}
		})
	}
	failed.run(t, "truncation under the position is recorded as data loss", func(t *testing.T) {
		// Debug: the clients' view of the failover (franz-go's group and fetch log, sarama's
		// partition consumer errors) is what explains a failure here.
		testFranzDataLoss(t, c, slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	})
}

// failedRuns runs subtests and remembers the names of those that failed.
type failedRuns struct {
	mu    sync.Mutex
	names []string
}

func (f *failedRuns) run(t *testing.T, name string, fn func(t *testing.T)) bool {
	return t.Run(name, func(t *testing.T) {
		defer func() {
			if t.Failed() {
				f.mu.Lock()
				f.names = append(f.names, t.Name())
				f.mu.Unlock()
			}
		}()
		fn(t)
	})
}

func (f *failedRuns) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.names)
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// crashedUntil is a Spec.Until for the tests that need crashes: true once every key of need
// has crashed as many times as need says (keyOf names the key of a crash op; false for a crash
// of none) and the run has lasted least.
func crashedUntil(least time.Duration, need map[string]int, keyOf func(history.Op) (string, bool)) func(history.Op) bool {
	return countedUntil(least, need, func(op history.Op, add func(string, int)) {
		if k, ok := keyOf(op); ok && op.F == history.FCrash {
			add(k, 1)
		}
	})
}

// countedUntil is a Spec.Until that waits for what a test counts instead of assuming a loaded
// machine does it within a fixed time: true once every key of need has counted up to what need
// says (count adds what an op counts for, under its keys) and the run has lasted least. The
// spec's Duration is then a deadline, and the test's assertions say what was seen when it
// passed.
func countedUntil(least time.Duration, need map[string]int, count func(op history.Op, add func(key string, n int))) func(history.Op) bool {
	seen := map[string]int{}
	add := func(k string, n int) { seen[k] += n }
	return func(op history.Op) bool {
		count(op, add)
		for k, n := range need {
			if seen[k] < n {
				return false
			}
		}
		return time.Duration(op.Time) >= least
	}
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func topic(name string, parts int32) harness.TopicSpec {
	return harness.TopicSpec{Name: name, Partitions: parts, RF: 3, MinISR: 2}
}

// tpo is a record's place.
type tpo struct {
	topic     string
	partition int32
	offset    int64
}

func at(r history.Record) tpo {
	off := int64(-1)
	if r.Offset != nil {
		off = *r.Offset
	}
	return tpo{r.Topic, r.Partition, off}
}

// view is what a test reads back from a history file.
type view struct {
	ops     []history.Op // completions and invokes, cloned
	counts  map[string]int
	final   map[string]map[tpo]string              // isolation -> place -> value
	ranges  map[string]map[tpo][]history.FinalRead // isolation -> (topic, partition, -1) -> chunks in order
	badRead []string                               // final reads that were not ok and complete
}

func readBack(t *testing.T, path string) *view {
	t.Helper()
	r, err := history.Open(path)
	require.NoError(t, err)
	defer r.Close()
	v := &view{counts: map[string]int{}, final: map[string]map[tpo]string{
		history.ReadCommitted: {}, history.ReadUncommitted: {}},
		ranges: map[string]map[tpo][]history.FinalRead{history.ReadCommitted: {}, history.ReadUncommitted: {}}}
	var op history.Op
	for {
		err := r.Next(&op)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		o := op.Clone()
		v.ops = append(v.ops, o)
		v.counts[o.F+"/"+string(o.Type)]++
		if o.F == history.FFinalRead && o.Type != history.Invoke {
			fr := o.Value.FinalRead
			require.NotNil(t, fr)
			if o.Type != history.OK || fr.Incomplete {
				v.badRead = append(v.badRead, fmt.Sprintf("op %d %s-%d %s: %s %s", o.Index, fr.Topic, fr.Partition, fr.Isolation, o.Type, o.Error))
			}
			key := tpo{fr.Topic, fr.Partition, -1}
			v.ranges[fr.Isolation][key] = append(v.ranges[fr.Isolation][key], *fr)
			for _, rec := range fr.Records {
				v.final[fr.Isolation][at(rec)] = rec.Value
			}
		}
	}
	require.Zero(t, r.Torn(), "no torn line in a history the run closed")
	return v
}

// requireComplete checks that every partition of topics was scanned in both isolation levels,
// in consecutive ranges, each op ok and complete.
func (v *view) requireComplete(t *testing.T, topics []harness.TopicSpec, isolations ...string) {
	t.Helper()
	require.Empty(t, v.badRead, "final reads must be ok and complete on a healthy cluster")
	for _, iso := range isolations {
		for _, tp := range topics {
			for p := range tp.Partitions {
				chunks := v.ranges[iso][tpo{tp.Name, p, -1}]
				require.NotEmpty(t, chunks, "%s-%d was not scanned at %s", tp.Name, p, iso)
				for i := 1; i < len(chunks); i++ {
					require.Equal(t, chunks[i-1].End, chunks[i].From, "%s-%d %s: chunks must be consecutive", tp.Name, p, iso)
				}
				for _, ch := range chunks {
					require.LessOrEqual(t, len(ch.Records), 2000, "chunks stay small")
				}
			}
		}
	}
}

// What the mixed run must have done before it ends (mixedCount counts it as the run goes).
var mixedNeed = map[string]int{"processor crash": 1, "send ok": 2001, "txn ok": 21, "txn aborted": 6, "rpw ok": 11, "rpw inputs": 1001}

func mixedCount(op history.Op, add func(string, int)) {
	switch {
	case op.F == history.FCrash && strings.Contains(string(op.Value.Raw), "crash_every"):
		add("processor crash", 1)
	case op.F == history.FSend && op.Type == history.OK:
		add("send ok", 1)
	case op.F == history.FTxn && op.Type == history.OK:
		add("txn ok", 1)
	case op.F == history.FTxn && op.Type == history.Fail && op.Value.Txn != nil && op.Value.Txn.Intent == history.IntentAbort:
		add("txn aborted", 1)
	case op.F == history.FRPW && op.Type == history.OK && op.Value.RPW != nil:
		add("rpw ok", 1)
		add("rpw inputs", len(op.Value.RPW.Input))
	}
}

// testMixed runs every kind of workload with client; command, when set, is the program that
// serves it over the remote protocol.
func testMixed(t *testing.T, c *harness.Cluster, log *slog.Logger, client kafkaconf.ClientName, command ...string) {
	ctx := withTimeout(t, 8*time.Minute)
	// Topics, groups and transactional ids of its own: the clients' lanes run at once on one
	// cluster, and a shared group would split the input between their processors.
	prefix := string(client)
	if len(command) > 0 {
		prefix += "-remote"
	}
	n := func(name string) string { return prefix + "-" + name }
	topics := []harness.TopicSpec{topic(n("mix-data"), 3), topic(n("mix-in"), 3), topic(n("mix-txn-a"), 2), topic(n("mix-txn-b"), 2), topic(n("mix-out"), 3)}
	spec := Spec{
		// 25 s at least (the processor crashes every 20 s), then until it has crashed and each
		// workload has done what the checks below count on; 4 minutes is a deadline a loaded
		// machine cannot miss.
		Name: "mixed-healthy", Seed: 20260517, Duration: 4 * time.Minute, Topics: topics, Client: client, ClientCommand: command,
		Until: countedUntil(25*time.Second, mixedNeed, mixedCount),
		Producers: []ProducerSpec{
			// One at a time, key -> partition.
			{ProducerConfig: ProducerConfig{Topics: []string{n("mix-data")}, Partitioning: PartitionKey, Rate: 250}},
			// Async, many in flight: feeds the processor.
			{ProducerConfig: ProducerConfig{Topics: []string{n("mix-in")}, Async: true, Window: 50, Rate: 250}},
		},
		Transactional: []TxnConfig{{Topics: []string{n("mix-txn-a"), n("mix-txn-b")}, TxnID: n("mix-txn"), MaxRecords: 4, AbortProbability: 0.2,
			Gap: 20 * time.Millisecond}},
		Processors: []ProcessorConfig{{Input: n("mix-in"), Output: n("mix-out"), TxnID: n("mix-rpw"), BatchRecords: 100, AbortProbability: 0.1,
			CrashEvery: 20 * time.Second}},
		Consumers: []ConsumerConfig{
			{Topics: []string{n("mix-data"), n("mix-txn-a"), n("mix-txn-b")}, Mode: Subscribe, Group: n("mix-rc"), Isolation: kafkaconf.ReadCommitted},
			{Topics: []string{n("mix-data"), n("mix-txn-a"), n("mix-txn-b"), n("mix-out")}, Mode: Assign, Isolation: kafkaconf.ReadUncommitted},
			{Topics: []string{n("mix-txn-a"), n("mix-txn-b"), n("mix-out")}, Mode: Assign, Isolation: kafkaconf.ReadCommitted, RestartEvery: 25 * time.Second},
			{Topics: []string{n("mix-in")}, Mode: Subscribe, Group: n("mix-ru"), Isolation: kafkaconf.ReadUncommitted, RestartEvery: 25 * time.Second},
		},
		Log: log,
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	keepOnFailure(t, path)
	res, err := Run(ctx, c, path, spec)
	require.NoError(t, err)
	require.True(t, res.FinalRead.AllComplete(), "final read: %+v", res.FinalRead)
	t.Logf("mixed run: %d events, %d bytes (%.0f bytes/event), workloads %s", res.Ops, res.Bytes,
		float64(res.Bytes)/float64(res.Ops), res.Elapsed.Round(time.Millisecond))
	for _, s := range res.Producers {
		t.Logf("producer %d: ok %d fail %d info %d (%.0f sends/s)", s.Process, s.OK, s.Fail, s.Info, s.SendsPerSecond)
	}
	for _, s := range res.Transactional {
		t.Logf("txn %d: committed %d aborted %d failed %d unknown %d crashes %d", s.Process, s.Committed, s.Aborted, s.Failed, s.Unknown, s.Crashes)
	}
	for _, s := range res.Processors {
		t.Logf("processor %d: committed %d (inputs %d) failed %d (aborted %d) unknown %d crashes %d sessions %d",
			s.Process, s.Committed, s.InputsCommitted, s.Failed, s.Aborted, s.Unknown, s.Crashes, s.Sessions)
	}
	for _, s := range res.Consumers {
		t.Logf("consumer %d: polls %d records %d rebalances %d crashes %d", s.Process, s.Polls, s.Records, s.Rebalances, s.Crashes)
	}

	v := readBack(t, path)
	t.Logf("op counts: %v", v.counts)
	v.requireComplete(t, topics, history.ReadUncommitted, history.ReadCommitted)
	require.Equal(t, spec.Seed, readHeader(t, path).Seed)

	var okSends, aborted, committed, rpwOK, rpwFail int
	abortedValues := map[string]bool{}
	processed := map[tpo]int{} // committed inputs of the processor
	maybe := map[tpo]bool{}    // inputs of steps whose commit's outcome is unknown
	asyncProc := res.Producers[1].Process
	for _, o := range v.ops {
		switch {
		case o.F == history.FSend && o.Type != history.Invoke:
			if o.Process.ID == asyncProc {
				require.NotNil(t, o.Of, "an async producer's completion carries of")
			} else {
				require.Nil(t, o.Of)
			}
			if o.Type != history.OK {
				continue
			}
			okSends++
			r := *o.Value.Send
			for _, iso := range []string{history.ReadUncommitted, history.ReadCommitted} {
				require.Equal(t, r.Value, v.final[iso][at(r)], "ok send %s (op %d) at %v must be in the %s final read", r.Value, o.Index, at(r), iso)
			}
		case o.F == history.FTxn && o.Type != history.Invoke:
			tx := o.Value.Txn
			switch {
			case o.Type == history.Fail && tx.Intent == history.IntentAbort:
				aborted++
				require.Equal(t, "aborted", o.Error)
				for _, r := range tx.Records {
					abortedValues[r.Value] = true
					require.NotNil(t, r.Offset, "an aborted transaction's records were acknowledged before the abort")
					require.Equal(t, r.Value, v.final[history.ReadUncommitted][at(r)], "aborted record %s is in the log: read_uncommitted shows it", r.Value)
					_, visible := v.final[history.ReadCommitted][at(r)]
					require.False(t, visible, "aborted record %s must not be visible at read_committed", r.Value)
				}
			case o.Type == history.OK:
				committed++
				require.Equal(t, history.IntentCommit, tx.Intent)
				for _, r := range tx.Records {
					require.Equal(t, r.Value, v.final[history.ReadCommitted][at(r)], "committed record %s must be visible at read_committed", r.Value)
				}
			}
		case o.F == history.FRPW && o.Type != history.Invoke:
			st := o.Value.RPW
			require.Len(t, st.Output, len(st.Input), "one output per input")
			switch o.Type {
			case history.OK:
				rpwOK++
				for _, in := range st.Input {
					processed[at(in)]++
					require.Equal(t, 1, processed[at(in)], "input %s at %v processed by two committed steps", in.Value, at(in))
				}
				for i, out := range st.Output {
					require.Equal(t, out.Value, v.final[history.ReadCommitted][at(out)], "output of committed input %s must be visible", st.Input[i].Value)
					require.Equal(t, st.Input[i].Value, out.Key, "the output names its input")
				}
			case history.Info:
				// The commit's outcome is unknown: it may have happened, moving the committed
				// position past these inputs without an ok step (a commit that timed out on a
				// loaded machine, then an abort that did too).
				for _, in := range st.Input {
					maybe[at(in)] = true
				}
			case history.Fail:
				rpwFail++
				for _, out := range st.Output {
					if out.Offset == nil {
						continue
					}
					_, visible := v.final[history.ReadCommitted][at(out)]
					require.False(t, visible, "output %s of a step that did not commit must not be visible", out.Value)
				}
			}
		case o.F == history.FPoll && o.Type == history.OK && o.Value.Poll.Isolation == history.ReadCommitted:
			for _, r := range o.Value.Poll.Records {
				require.False(t, abortedValues[r.Value], "read_committed poll (op %d) saw aborted record %s", o.Index, r.Value)
			}
		}
	}
	// Every committed input has its output, and the committed inputs of each input partition
	// are exactly the committed-visible records up to the furthest one processed: none skipped.
	maxDone := map[int32]int64{}
	for k := range processed {
		maxDone[k.partition] = max(maxDone[k.partition], k.offset+1)
	}
	for k, val := range v.final[history.ReadCommitted] {
		if k.topic == n("mix-in") && k.offset < maxDone[k.partition] && !maybe[k] {
			require.Equal(t, 1, processed[k], "input %s at %v is below the committed position but no committed step processed it", val, k)
		}
	}
	t.Logf("checked: %d ok sends in both final reads, %d committed and %d aborted transactions, %d committed and %d failed rpw steps (%d inputs)",
		okSends, committed, aborted, rpwOK, rpwFail, len(processed))
	require.GreaterOrEqual(t, okSends, mixedNeed["send ok"], "acknowledged sends by the deadline")
	require.GreaterOrEqual(t, committed, mixedNeed["txn ok"], "committed transactions by the deadline")
	require.GreaterOrEqual(t, aborted, mixedNeed["txn aborted"], "transactions aborted on purpose by the deadline")
	require.GreaterOrEqual(t, rpwOK, mixedNeed["rpw ok"], "committed read-process-write steps by the deadline")
	require.GreaterOrEqual(t, len(processed), mixedNeed["rpw inputs"], "inputs of committed steps by the deadline")
	require.Positive(t, v.counts["poll/ok"])
	require.Positive(t, v.counts["crash/ok"], "the processor was crashed and restarted mid-stream")
	require.Positive(t, v.counts["assign/ok"])
	require.Positive(t, v.counts["subscribe/ok"])
}

func readHeader(t *testing.T, path string) history.Header {
	r, err := history.Open(path)
	require.NoError(t, err)
	defer r.Close()
	return r.Header()
}

// watchRecorder counts completed ops by f and type and wakes waiters on every completion.
type watchRecorder struct {
	Recorder
	mu      sync.Mutex
	counts  map[string]int
	changed chan struct{}
}

func newWatchRecorder(r Recorder) *watchRecorder {
	return &watchRecorder{Recorder: r, counts: map[string]int{}, changed: make(chan struct{}, 1)}
}

func (r *watchRecorder) Complete(inv history.Op, t history.Type, v history.Payload, e string) (history.Op, error) {
	op, err := r.Recorder.Complete(inv, t, v, e)
	r.mu.Lock()
	r.counts[inv.F+"/"+string(t)]++
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return op, err
}

func (r *watchRecorder) count(k string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[k]
}

// await waits until cond holds, woken by completions, or fails the test at ctx's end.
func (r *watchRecorder) await(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-r.changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (counts %v)", what, ctx.Err(), r.counts)
		}
	}
}

// timedRecorder measures the time spent recording.
type timedRecorder struct {
	w      *history.Writer
	spent  time.Duration // only the producer's goroutine records: no lock needed
	writes int64
}

func (r *timedRecorder) Invoke(p history.Process, f string, v history.Payload) (history.Op, error) {
	t := time.Now()
	op, err := r.w.Invoke(p, f, v)
	r.spent += time.Since(t)
	r.writes++
	return op, err
}

func (r *timedRecorder) Complete(inv history.Op, ty history.Type, v history.Payload, e string) (history.Op, error) {
	t := time.Now()
	op, err := r.w.Complete(inv, ty, v, e)
	r.spent += time.Since(t)
	r.writes++
	return op, err
}

func (r *timedRecorder) AppendBatch(ops []history.Op) ([]history.Op, error) {
	t := time.Now()
	out, err := r.w.AppendBatch(ops)
	r.spent += time.Since(t)
	r.writes++
	return out, err
}

func (r *timedRecorder) CompleteAsync(inv history.Op, ty history.Type, v history.Payload, e string) (history.Op, error) {
	t := time.Now()
	op, err := r.w.CompleteAsync(inv, ty, v, e)
	r.spent += time.Since(t)
	r.writes++
	return op, err
}

func (r *timedRecorder) Since() time.Duration { return r.w.Since() }

// keepOnFailure copies the history at path into $VERITY_KEEP_HISTORIES (when set) if the test
// fails, so that a failure on a runner can be read afterwards.
func keepOnFailure(t *testing.T, path string) {
	dir := os.Getenv("VERITY_KEEP_HISTORIES")
	if dir == "" {
		return
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + ".jsonl"
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err == nil {
			t.Logf("history kept: %s", filepath.Join(dir, name))
		}
	})
}
