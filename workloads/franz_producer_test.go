package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/results"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
	kfranz "github.com/verity-kafka/verity/workloads/kclient/franz"
)

// fpRefused: a refused producer's checks need more failed sends than this; its runs wait for them.
const fpRefused = 10

// sendOutcomes counts, for countedUntil, each send's completion under "<type> <process>"
// ("ok 3", "fail 5", "info 1").
func sendOutcomes(op history.Op, add func(string, int)) {
	if op.F == history.FSend && op.Type != history.Invoke {
		add(fmt.Sprintf("%s %s", op.Type, op.Process), 1)
	}
}

// fpSends are a history's send ops of one process: completions by type, invokes by value.
// fpRequireRefused: a producer sending one at a time with two application resends, every send
// refused with code: none unknown (noInfo says why), more than fpRefused failed, none in the
// log, no value sent more than three times and some resent.
func fpRequireRefused(t *testing.T, s *fpSends, inLog map[string]bool, code, noInfo string) {
	t.Helper()
	require.Empty(t, s.byType[history.Info], noInfo)
	require.Greater(t, len(s.byType[history.Fail]), fpRefused, "refused sends by the deadline")
	for _, o := range s.byType[history.Fail] {
		require.Contains(t, o.Error, code, "op %d", o.Index)
	}
	thrice := 0
	for val, n := range s.invokes {
		require.LessOrEqual(t, n, 3, "value %s: one send and two resends at most", val)
		require.False(t, inLog[val], "value %s: refused, yet in the log", val)
		if n == 3 {
			thrice++
		}
	}
	require.Positive(t, thrice, "values were resent")
}

type fpSends struct {
	async    bool
	invokes  map[string]int
	byType   map[history.Type][]history.Op
	errTexts map[string]int
}

func fpSendsOf(v *view) map[int]*fpSends {
	out := map[int]*fpSends{}
	for _, o := range v.ops {
		if o.F != history.FSend {
			continue
		}
		s := out[o.Process.ID]
		if s == nil {
			s = &fpSends{invokes: map[string]int{}, byType: map[history.Type][]history.Op{}, errTexts: map[string]int{}}
			out[o.Process.ID] = s
		}
		if o.Type == history.Invoke {
			s.invokes[o.Value.Send.Value]++
			continue
		}
		s.async = s.async || o.Of != nil
		s.byType[o.Type] = append(s.byType[o.Type], o)
		if o.Error != "" {
			// The text up to the first colon names the error; the rest varies (sizes, nodes).
			name, _, _ := strings.Cut(strings.TrimPrefix(o.Error, "kafka server: "), ":")
			s.errTexts[string(o.Type)+" "+name]++
		}
	}
	return out
}

// fpRequireSound checks every send completion of v against the final read: an ok send's value is
// at its offset (acks=0: somewhere), and a fail send's value is nowhere. It returns the final
// read's values.
func fpRequireSound(t *testing.T, v *view, acksNone map[int]bool) map[string]bool {
	t.Helper()
	inLog := map[string]bool{}
	for _, val := range v.final[history.ReadUncommitted] {
		inLog[val] = true
	}
	checked := 0
	for _, o := range v.ops {
		if o.F != history.FSend || o.Type == history.Invoke {
			continue
		}
		r := *o.Value.Send
		switch o.Type {
		case history.OK:
			require.NotNil(t, r.Offset, "ok send %s (op %d) has its offset", r.Value, o.Index)
			if acksNone[o.Process.ID] {
				require.Equal(t, int64(-1), *r.Offset, "acks=0: the offset is unknown")
				require.True(t, inLog[r.Value], "ok send %s (op %d, acks=0) is in the final read", r.Value, o.Index)
			} else {
				require.GreaterOrEqual(t, *r.Offset, int64(0), "op %d", o.Index)
				require.Equal(t, r.Value, v.final[history.ReadUncommitted][at(r)], "ok send %s (op %d) at %v is in the final read", r.Value, o.Index, at(r))
			}
		case history.Fail:
			require.NotEmpty(t, o.Error, "op %d: a fail says why", o.Index)
			require.False(t, inLog[r.Value], "send %s (op %d) completed fail (%s) but is in the log", r.Value, o.Index, o.Error)
		}
		checked++
	}
	require.Positive(t, checked)
	return inLog
}

// fpVerify judges the history with the checker.
func fpVerify(t *testing.T, ctx context.Context, path string) *results.Results {
	t.Helper()
	res, err := verify.CheckFile(ctx, path, verify.Options{MaxExamples: 20})
	require.NoError(t, err)
	counts := map[string]int{}
	for a, an := range res.Anomalies {
		counts[string(a)] = an.Count
		for _, ex := range an.Examples {
			t.Logf("verify %s: %+v", a, ex)
		}
	}
	t.Logf("verify: verdict %s, anomalies %v, unknown %v", res.Verdict, counts, res.UnknownReasons)
	return res
}

func testFranzProducers(t *testing.T, c *harness.Cluster, log *slog.Logger) {
	ctx := withTimeout(t, 5*time.Minute)
	// fp-small takes no batch: a batch of one record is larger than its max.message.bytes, so
	// its leader refuses every produce with MESSAGE_TOO_LARGE, before appending.
	topics := []harness.TopicSpec{topic("fp-data", 3),
		{Name: "fp-small", Partitions: 1, RF: 3, MinISR: 2, Config: map[string]string{"max.message.bytes": "32"}}}
	data, small := []string{"fp-data"}, []string{"fp-small"}
	spec := Spec{
		Name: "franz-producers", Seed: 20260601, Client: kafkaconf.FranzGo, Duration: 2 * time.Minute, Topics: topics,
		Producers: []ProducerSpec{
			// 0: Kafka's default producer, one send at a time.
			{ProducerConfig: ProducerConfig{Topics: data, Rate: 50}},
			// 1: the same, async.
			{ProducerConfig: ProducerConfig{Topics: data, Async: true, Window: 50, Rate: 200}},
			// 2: acks=1, keyed.
			{ProducerConfig: ProducerConfig{Topics: data, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksLeader)},
				Partitioning: PartitionKey, Rate: 50}},
			// 3: acks=0, async.
			{ProducerConfig: ProducerConfig{Topics: data, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksNone)},
				Async: true, Window: 20, Rate: 50}},
			// 4: not idempotent, five requests in flight, async.
			{ProducerConfig: ProducerConfig{Topics: data, Delivery: kafkaconf.Delivery{Idempotence: new(false), MaxInFlight: new(5)},
				Async: true, Window: 50, Rate: 150}},
			// 5: refused, one send at a time: the refusal is about the record's own batch and
			// would meet every attempt (fail), and the application sends the value twice more.
			{ProducerConfig: ProducerConfig{Topics: small, AppResend: 2, Rate: 10}},
			// 6: refused, async: only a partition's first batch is surely the one refused.
			{ProducerConfig: ProducerConfig{Topics: small, Async: true, Window: 20, Rate: 50}},
		},
		Log: log,
	}
	// The run lasts until each producer on fp-data has more than fpAcked sends acknowledged and
	// each refused one has failed: a loaded machine takes longer, 2 minutes is the deadline.
	const fpAcked = 20
	need := map[string]int{"fail 5": fpRefused + 1, "fail 6": 1}
	for p := range 5 {
		need[fmt.Sprintf("ok %d", p)] = fpAcked + 1
	}
	spec.Until = countedUntil(12*time.Second, need, sendOutcomes)
	path := filepath.Join(t.TempDir(), "history.jsonl")
	began := time.Now()
	res, err := Run(ctx, c, path, spec)
	require.NoError(t, err)
	require.True(t, res.FinalRead.AllComplete(), "final read: %+v", res.FinalRead)
	t.Logf("run: %d events in %s (workloads %s)", res.Ops, time.Since(began).Round(time.Millisecond), res.Elapsed.Round(time.Millisecond))
	for _, s := range res.Producers {
		t.Logf("producer %d: ok %d fail %d info %d resends %d timed out %d retries %d (%.0f sends/s) warnings %v",
			s.Process, s.OK, s.Fail, s.Info, s.Resends, s.TimedOut, s.Retries, s.SendsPerSecond, s.Warnings)
	}

	h := readHeader(t, path)
	require.NotNil(t, h.Config.Client, "the header names the client")
	require.Equal(t, kafkaconf.FranzGo, h.Config.Client.Name)
	require.Equal(t, "github.com/twmb/franz-go", h.Config.Client.Module)
	fpRequireRealVersion(t, ctx, h.Config.Client.Version)
	for p, want := range map[int]struct {
		acks     kafkaconf.Acks
		idem     bool
		inFlight int
	}{0: {kafkaconf.AcksAll, true, 5}, 1: {kafkaconf.AcksAll, true, 5}, 2: {kafkaconf.AcksLeader, false, 5},
		3: {kafkaconf.AcksNone, false, 5}, 4: {kafkaconf.AcksAll, false, 5}, 5: {kafkaconf.AcksAll, true, 5}} {
		pc := h.Config.Processes[p]
		require.Equal(t, want.acks, *pc.Acks, "process %d", p)
		require.Equal(t, want.idem, *pc.Idempotence, "process %d", p)
		require.Equal(t, want.inFlight, *pc.MaxInFlight, "process %d", p)
	}
	require.True(t, *h.Config.Processes[5].AppResend)

	v := readBack(t, path)
	v.requireComplete(t, topics, history.ReadUncommitted)
	inLog := fpRequireSound(t, v, map[int]bool{3: true})
	sends := fpSendsOf(v)
	for p := range 7 {
		s := sends[p]
		require.NotNil(t, s, "process %d sent", p)
		t.Logf("process %d: ok %d fail %d info %d, errors %v", p, len(s.byType[history.OK]), len(s.byType[history.Fail]),
			len(s.byType[history.Info]), s.errTexts)
		require.Equal(t, spec.Producers[p].Async, s.async, "process %d: async completions carry of, the others not", p)
	}
	// A healthy cluster acknowledges every send of the producers on fp-data.
	for p := range 5 {
		s := sends[p]
		require.Greater(t, len(s.byType[history.OK]), fpAcked, "process %d: acknowledged sends by the deadline", p)
		require.Empty(t, s.byType[history.Fail], "process %d", p)
		require.Empty(t, s.byType[history.Info], "process %d", p)
	}
	// Refused one at a time: each send failed, and each value was sent three times.
	s5 := sends[5]
	require.Empty(t, s5.byType[history.OK])
	fpRequireRefused(t, s5, inLog, "MESSAGE_TOO_LARGE", "refused before the append, whatever the attempts: fail, not info")
	require.Equal(t, res.Producers[5].Resends, int64(len(s5.byType[history.Fail])-len(s5.invokes)), "every resend is a new invoke of a failed value")
	// Refused, async: nothing acknowledged; the first batch's records fail, later ones may be
	// info (fpRequireSound checked that no fail is in the log).
	s6 := sends[6]
	require.Empty(t, s6.byType[history.OK])
	require.Positive(t, len(s6.byType[history.Fail]))

	vr := fpVerify(t, ctx, path)
	require.Equal(t, results.Pass, vr.Verdict)
}

// fpRequireRealVersion checks the client version a header states: the franz-go version this
// binary links, and a real one. A test binary carries no dependency versions (Go records none in
// it), so the version a verity binary states is checked by building one and asking it.
func fpRequireRealVersion(t *testing.T, ctx context.Context, version string) {
	t.Helper()
	franz, _ := kafkaconf.LookupClient(kafkaconf.FranzGo)
	require.Equal(t, franz.Version(), version, "the header states the linked version")
	versionRE := regexp.MustCompile(`^v1\.\d+\.\d+`)
	if bi, ok := debug.ReadBuildInfo(); ok && len(bi.Deps) > 0 {
		require.Regexp(t, versionRE, version)
		return
	}
	t.Logf("the header says %q: a test binary carries no dependency versions", version)
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/verity-kafka/verity").Output()
	require.NoError(t, err, "finding the module's directory")
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/verity", "list")
	cmd.Dir = strings.TrimSpace(string(out))
	list, err := cmd.CombinedOutput()
	require.NoError(t, err, "verity list: %s", list)
	var stated string
	for _, line := range strings.Split(string(list), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == string(kafkaconf.FranzGo) {
			stated = f[1]
		}
	}
	require.Regexp(t, versionRE, stated, "the version a verity binary states for franz-go")
	t.Logf("a verity binary states franz-go %s", stated)
}

// testFranzRefusals makes a partition's leader refuse acks=all produces with
// NOT_ENOUGH_REPLICAS: the topic wants all three replicas in sync, and one follower is paused
// until the leader drops it from the ISR. (A cut of the follower's link to the leader would also
// cut, on these combined nodes, its quorum traffic to the leader's controller: when that is the
// active controller the follower keeps calling elections, and CI saw the ISR unshrunk after 90 s.) A producer without retries meets
// each refusal once (fail, and the application sends again); an idempotent one retries until
// its delivery timeout (info: as far as the client can tell, an earlier attempt may have been
// appended). None of them may be in the log.
func testFranzRefusals(t *testing.T, c *harness.Cluster, log *slog.Logger) {
	ctx := withTimeout(t, 5*time.Minute)
	tp := harness.TopicSpec{Name: "fp-refuse", Partitions: 1, RF: 3, MinISR: 3}
	refuse := []string{tp.Name}
	spec := Spec{Name: "franz-refusals", Seed: 20260603, Client: kafkaconf.FranzGo, Duration: time.Minute,
		Topics: []harness.TopicSpec{tp},
		Producers: []ProducerSpec{
			{ProducerConfig: ProducerConfig{Topics: refuse, Delivery: kafkaconf.Delivery{Idempotence: new(false), Retries: new(0)},
				AppResend: 2, Rate: 20}},
			{ProducerConfig: ProducerConfig{Topics: refuse, DeliveryTimeout: 2 * time.Second, Rate: 5}},
			{ProducerConfig: ProducerConfig{Topics: refuse, Delivery: kafkaconf.Delivery{Idempotence: new(false), Retries: new(0)},
				Async: true, Window: 10, Rate: 50}},
		},
	}
	require.NoError(t, c.CreateTopic(ctx, tp))
	ps, err := c.Describe(ctx, tp.Name)
	require.NoError(t, err)
	leader := ps[0].Leader
	follower := ps[0].Replicas[0]
	if follower == leader {
		follower = ps[0].Replicas[1]
	}
	isr := func() int {
		ps, err := c.Describe(ctx, tp.Name)
		if err != nil || len(ps) == 0 {
			return -1
		}
		return len(ps[0].ISR)
	}
	require.NoError(t, c.Pause(ctx, int(follower)))
	resumed := false
	defer func() {
		if !resumed {
			_ = c.Resume(context.WithoutCancel(ctx), int(follower))
		}
	}()
	appendAhead(t, ctx, c, tp.Name)
	require.NoError(t, kit.WaitUntil(ctx, time.Now().Add(90*time.Second), 250*time.Millisecond, func() (bool, error) {
		return isr() == 2, nil
	}), "the leader drops the paused follower from the ISR")
	t.Logf("paused %d: the ISR of %s-0 is 2 of 3, below min.insync.replicas", follower, tp.Name)
	requireLeaderRefuses(t, ctx, c, tp.Name)

	pl, err := planRun(spec)
	require.NoError(t, err)
	cfg, err := headerConfig(spec, pl, len(c.Brokers()), c.Controllers(), c.Deviations(), "")
	require.NoError(t, err)
	// The record appended ahead and the probes are in the log under values no op of this history
	// wrote: a header without a scenario says the history does not record every writer, so the
	// checker leaves phantom-read unjudged and judges the rest.
	cfg.Scenario = ""
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path, history.Header{Seed: spec.Seed, Config: cfg})
	require.NoError(t, err)
	// The producers bootstrap from the brokers that answer: a metadata request to the paused
	// one would wait out the short run.
	var seeds []string
	for i, id := range c.Brokers() {
		if id != int(follower) {
			seeds = append(seeds, c.Bootstrap()[i])
		}
	}
	// The producers run until the one-at-a-time producer has had enough refusals for the checks
	// below and the retrying one an unknown outcome; 90 s is the deadline on a loaded machine.
	wctx, stop := context.WithTimeout(ctx, 90*time.Second)
	defer stop()
	until := countedUntil(8*time.Second, map[string]int{"fail 0": fpRefused + 1, "info 1": 1}, sendOutcomes)
	env := Env{Brokers: seeds, Recorder: &untilRecorder{Recorder: w, until: until, stop: stop}, Seed: spec.Seed, Client: kafkaconf.FranzGo, Log: log}
	var wg sync.WaitGroup
	stats := make([]ProducerStats, len(pl.producers))
	errs := make([]error, len(pl.producers))
	for i, n := range pl.producers {
		wg.Go(func() { stats[i], errs[i] = RunProducer(wctx, env, n.p, n.cfg) })
	}
	wg.Wait()
	for i := range stats {
		require.NoError(t, errs[i])
		s := stats[i]
		t.Logf("producer %d: ok %d fail %d info %d resends %d timed out %d", s.Process, s.OK, s.Fail, s.Info, s.Resends, s.TimedOut)
	}
	require.NoError(t, c.Resume(ctx, int(follower)))
	resumed = true
	require.NoError(t, kit.WaitUntil(ctx, time.Now().Add(90*time.Second), 250*time.Millisecond, func() (bool, error) {
		return isr() == 3, nil
	}), "the follower rejoins the ISR")
	fr, err := FinalRead(ctx, Env{Brokers: c.Bootstrap(), Recorder: w, Seed: spec.Seed, Log: log}, pl.next, FinalReadConfig{Topics: refuse})
	require.NoError(t, err)
	require.True(t, fr.AllComplete())
	require.NoError(t, w.Close())

	v := readBack(t, path)
	v.requireComplete(t, spec.Topics, history.ReadUncommitted)
	inLog := fpRequireSound(t, v, nil)
	sends := fpSendsOf(v)
	for p, s := range sends {
		t.Logf("process %d: ok %d fail %d info %d, errors %v", p, len(s.byType[history.OK]), len(s.byType[history.Fail]),
			len(s.byType[history.Info]), s.errTexts)
		require.Empty(t, s.byType[history.OK], "process %d: nothing is acknowledged below min.insync.replicas", p)
	}
	s0 := sends[0]
	fpRequireRefused(t, s0, inLog, "NOT_ENOUGH_REPLICAS", "the only attempt was refused before the append: fail, not info")
	require.Empty(t, sends[1].byType[history.Fail], "retried refusals may hide an appended attempt: never fail")
	require.Positive(t, len(sends[1].byType[history.Info]))
	require.Equal(t, results.Pass, fpVerify(t, ctx, path).Verdict)
}

// appendAhead appends one record to topic's partition 0 with acks=1. A follower whose log ends
// where the leader's does counts as caught up however long it has not fetched, so a paused
// follower that had fetched the empty log before the pause would stay in the ISR; the record
// puts the leader ahead of it. Its value is written by no op of the history.
func appendAhead(t *testing.T, ctx context.Context, c *harness.Cluster, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(append(kfranz.Base(c.Bootstrap(), "append-ahead"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	require.NoError(t, err)
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("ahead")}).FirstErr(),
		"an acks=1 append to %s-0", topic)
}

// requireLeaderRefuses waits until topic's partition 0 refuses an acks=all produce with
// NOT_ENOUGH_REPLICAS twice in a row. The controller's metadata may show the shrunk ISR a little
// before the leader applies it; a produce the leader still takes waits for the cut follower, and
// the test's producers would meet that wait instead of the refusal they are there to meet. A
// probe the leader takes stays in the log under a value no op sent.
func requireLeaderRefuses(t *testing.T, ctx context.Context, c *harness.Cluster, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(append(kfranz.Base(c.Bootstrap(), "refusal-probe"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0),
		kgo.ProduceRequestTimeout(2*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	require.NoError(t, err)
	defer cl.Close()
	probes, refusals := 0, 0
	var last error
	err = kit.WaitUntil(ctx, time.Now().Add(60*time.Second), 100*time.Millisecond, func() (bool, error) {
		pctx, cancel := context.WithTimeout(ctx, 4*time.Second)
		defer cancel()
		probes++
		last = cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "probe-%d", probes)}).FirstErr()
		if errors.Is(last, kerr.NotEnoughReplicas) {
			refusals++
		} else {
			refusals = 0
		}
		return refusals == 2, nil
	})
	require.NoError(t, err, "the leader refuses acks=all produces (last probe of %d: %v)", probes, last)
	t.Logf("the leader of %s-0 refused probes %d and %d with NOT_ENOUGH_REPLICAS", topic, probes-1, probes)
}

// fpCounter counts the ok and info send completions recorded through it.
type fpCounter struct {
	*history.Writer
	ok, info atomic.Int64
}

func (r *fpCounter) count(t history.Type, f string) {
	if f != history.FSend {
		return
	}
	switch t {
	case history.OK:
		r.ok.Add(1)
	case history.Info:
		r.info.Add(1)
	}
}

func (r *fpCounter) Complete(inv history.Op, t history.Type, v history.Payload, e string) (history.Op, error) {
	r.count(t, inv.F)
	return r.Writer.Complete(inv, t, v, e)
}

func (r *fpCounter) CompleteAsync(inv history.Op, t history.Type, v history.Payload, e string) (history.Op, error) {
	r.count(t, inv.F)
	return r.Writer.CompleteAsync(inv, t, v, e)
}

func (r *fpCounter) AppendBatch(ops []history.Op) ([]history.Op, error) {
	for _, o := range ops {
		r.count(o.Type, o.F)
	}
	return r.Writer.AppendBatch(ops)
}

// testFranzProducerCut cuts the client's link to a partition leader twice while four producers
// send: first a blackhole (requests wait for their timeouts), then a refusal (connections
// closed, new ones refused). The brokers never lose anything, so whatever franz-go says, a send
// that completed fail must not be in the log, and an ok one must be where the broker said.
func testFranzProducerCut(t *testing.T, c *harness.Cluster, log *slog.Logger) {
	ctx := withTimeout(t, 5*time.Minute)
	tp := topic("fp-cut", 3)
	cutTopic := []string{tp.Name}
	spec := Spec{Name: "franz-producer-cut", Seed: 20260602, Client: kafkaconf.FranzGo, Duration: time.Minute,
		Topics: []harness.TopicSpec{tp},
		Producers: []ProducerSpec{
			{ProducerConfig: ProducerConfig{Topics: cutTopic, Async: true, Window: 50, Rate: 200, DeliveryTimeout: 6 * time.Second, Drain: 20 * time.Second}},
			{ProducerConfig: ProducerConfig{Topics: cutTopic, Rate: 50, DeliveryTimeout: 6 * time.Second, Drain: 20 * time.Second}},
			{ProducerConfig: ProducerConfig{Topics: cutTopic, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksLeader), Retries: new(0)},
				Rate: 50, DeliveryTimeout: 6 * time.Second, Drain: 20 * time.Second, RequestTimeout: 3 * time.Second}},
			{ProducerConfig: ProducerConfig{Topics: cutTopic, Delivery: kafkaconf.Delivery{Idempotence: new(false), MaxInFlight: new(5), Retries: new(1)},
				Async: true, Window: 20, Rate: 100, DeliveryTimeout: 6 * time.Second, Drain: 20 * time.Second, RequestTimeout: 3 * time.Second}},
		},
	}
	require.NoError(t, c.CreateTopic(ctx, tp))
	pl, err := planRun(spec)
	require.NoError(t, err)
	cfg, err := headerConfig(spec, pl, len(c.Brokers()), c.Controllers(), c.Deviations(), "")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path, history.Header{Seed: spec.Seed, Config: cfg})
	require.NoError(t, err)
	rec := &fpCounter{Writer: w}
	env, err := Env{Brokers: c.Bootstrap(), Recorder: rec, Seed: spec.Seed, Client: kafkaconf.FranzGo, Log: log}.withDefaults()
	require.NoError(t, err)

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	stats := make([]ProducerStats, len(pl.producers))
	errs := make([]error, len(pl.producers))
	for i, n := range pl.producers {
		wg.Go(func() { stats[i], errs[i] = RunProducer(wctx, env, n.p, n.cfg) })
	}
	waitFor := func(what string, within time.Duration, cond func() bool) {
		t.Helper()
		require.NoError(t, kit.WaitUntil(ctx, time.Now().Add(within), 50*time.Millisecond, func() (bool, error) { return cond(), nil }),
			"waiting for %s (ok %d, info %d)", what, rec.ok.Load(), rec.info.Load())
	}
	waitFor("the first acknowledgements", time.Minute, func() bool { return rec.ok.Load() >= 200 })

	ps, err := c.Describe(ctx, tp.Name)
	require.NoError(t, err)
	link := harness.Link{From: harness.ClientEndpoint, To: int(ps[0].Leader)}
	for _, kind := range []harness.CutKind{harness.CutBlackhole, harness.CutRefuse} {
		info := rec.info.Load()
		require.NoError(t, c.Cut(ctx, link, kind))
		cutAt := time.Now()
		t.Logf("cut %s (%s), leader of %s-0", link, kind, tp.Name)
		// The cut stays until it has made sends unknown, and past the 8 s franz-go waits for
		// an answer (3 s produce timeout, 5 s overhead), so that the client's own failures
		// (connections given up, retries exhausted) happen under it.
		waitFor("a send made unknown by the "+string(kind)+" cut", time.Minute, func() bool {
			return rec.info.Load() > info && time.Since(cutAt) > 10*time.Second
		})
		require.NoError(t, c.Heal(ctx, link))
		t.Logf("healed after %s: ok %d, info %d", time.Since(cutAt).Round(time.Millisecond), rec.ok.Load(), rec.info.Load())
		ok := rec.ok.Load()
		waitFor("acknowledgements after healing", time.Minute, func() bool { return rec.ok.Load() >= ok+200 })
	}
	stop()
	wg.Wait()
	for i := range stats {
		require.NoError(t, errs[i])
		s := stats[i]
		t.Logf("producer %d: ok %d fail %d info %d timed out %d retries %d", s.Process, s.OK, s.Fail, s.Info, s.TimedOut, s.Retries)
	}
	fr, err := FinalRead(ctx, Env{Brokers: c.Bootstrap(), Recorder: w, Seed: spec.Seed, Log: log}, pl.next, FinalReadConfig{Topics: cutTopic})
	require.NoError(t, err)
	require.True(t, fr.AllComplete())
	require.NoError(t, w.Close())

	v := readBack(t, path)
	v.requireComplete(t, spec.Topics, history.ReadUncommitted)
	fpRequireSound(t, v, nil)
	var info int
	for p, s := range fpSendsOf(v) {
		t.Logf("process %d: ok %d fail %d info %d, errors %v", p, len(s.byType[history.OK]), len(s.byType[history.Fail]),
			len(s.byType[history.Info]), s.errTexts)
		info += len(s.byType[history.Info])
	}
	require.Positive(t, info, "the cuts made sends unknown")
	require.Equal(t, results.Pass, fpVerify(t, ctx, path).Verdict)
}

// fpNoRecorder is a Recorder that records nothing: the baseline of the overhead figure. It numbers
// ops as a writer would, so that the workload runs the same code either way.
type fpNoRecorder struct{ n int64 }

func (r *fpNoRecorder) next(op history.Op) history.Op {
	op.Index = r.n
	r.n++
	return op
}

func (r *fpNoRecorder) Invoke(p history.Process, f string, v history.Payload) (history.Op, error) {
	return r.next(history.Op{Process: p, Type: history.Invoke, F: f, Value: v}), nil
}

func (r *fpNoRecorder) Complete(inv history.Op, t history.Type, v history.Payload, e string) (history.Op, error) {
	return r.next(history.Op{Process: inv.Process, Type: t, F: inv.F, Value: v, Error: e}), nil
}

func (r *fpNoRecorder) CompleteAsync(inv history.Op, t history.Type, v history.Payload, e string) (history.Op, error) {
	return r.Complete(inv, t, v, e)
}

func (r *fpNoRecorder) AppendBatch(ops []history.Op) ([]history.Op, error) {
	for i := range ops {
		ops[i] = r.next(ops[i])
	}
	return ops, nil
}

// testOverhead measures client's producer workload recording into a history against the
// same workload recording nothing (fpNoRecorder), alternating on one topic of the same cluster,
// and logs the figures (no assertion on wall-clock numbers: the machine is shared). The brokers
// warm up for several rounds first (their rate climbs for a while on a fresh cluster); then the
// rounds alternate (A B B A …) so that a drift of the machine's load weighs on both alike. Besides
// sends per second, the process's CPU time per send is compared: the brokers run elsewhere, so
// it is the client's and the recorder's cost, which the load of the machine disturbs much less.
func testOverhead(t *testing.T, c *harness.Cluster, client kafkaconf.ClientName) {
	ctx := withTimeout(t, 10*time.Minute)
	tp := topic("overhead-"+string(client), 3)
	require.NoError(t, c.CreateTopic(ctx, tp))
	quiet := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	round, warmRounds := 4*time.Second, 3
	var prog kclient.Client // a client that is a program runs one for all the rounds
	if cl, _ := kafkaconf.LookupClient(client); cl.IsProgram() {
		p, err := StartProgram(ctx, Env{Brokers: c.Bootstrap(), Client: client, Log: quiet}, "", nil, testLog{t})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close()) })
		prog = p
	}
	pattern := []bool{true, false, false, true, true, false, false, true, true, false, false, true}
	for _, mode := range []struct {
		name   string
		async  bool
		window int
	}{{"async, 500 in flight", true, 500}, {"one at a time", false, 1}} {
		cfg := ProducerConfig{Topics: []string{tp.Name}, Async: mode.async, Window: mode.window}
		var notOK notOKSeen
		env := func(r Recorder) Env {
			return Env{Brokers: c.Bootstrap(), Recorder: notOK.wrap(r), Seed: 1, Client: client, Log: quiet, Program: prog}
		}
		var warm []string
		for range warmRounds {
			wctx, cancel := context.WithTimeout(ctx, round)
			st, err := RunProducer(wctx, env(&fpNoRecorder{}), 9, cfg)
			cancel()
			require.NoError(t, err)
			warm = append(warm, fmt.Sprintf("%.0f", st.SendsPerSecond))
		}
		var recOps, bareOps, events, bytes, writes int64
		var recTime, bareTime, inRecorder, recCPU, bareCPU time.Duration
		var rounds []string
		var pairs []float64 // recorded/bare of adjacent rounds
		var last float64
		for i, recorded := range pattern {
			rctx, cancel := context.WithTimeout(ctx, round)
			cpu0 := fpCPU(t)
			var st ProducerStats
			var err error
			if recorded {
				hw, err := history.Create(filepath.Join(t.TempDir(), fmt.Sprintf("overhead-%d.jsonl", i)), history.Header{Seed: 1})
				require.NoError(t, err)
				tr := &timedRecorder{w: hw}
				st, err = RunProducer(rctx, env(tr), 10+i, cfg)
				require.NoError(t, err)
				require.NoError(t, hw.Close())
				inRecorder += tr.spent
				writes += tr.writes
				events += hw.Count()
				bytes += hw.Bytes()
			} else {
				st, err = RunProducer(rctx, env(&fpNoRecorder{}), 10+i, cfg)
				require.NoError(t, err)
			}
			cancel()
			cpu := fpCPU(t) - cpu0
			// A round ends by cancelling its context: a record still waiting to be handed to the
			// client then fails as never sent (Unsent), which says nothing of the cluster.
			require.Zero(t, st.Fail-st.Unsent+st.Info, "a healthy cluster acknowledges every send it is given (round %d, %s): %v", i, mode.name, notOK.texts)
			rate := float64(st.OK) / st.Elapsed.Seconds()
			if recorded {
				recOps += st.OK
				recTime += st.Elapsed
				recCPU += cpu
				rounds = append(rounds, fmt.Sprintf("rec %.0f", rate))
			} else {
				bareOps += st.OK
				bareTime += st.Elapsed
				bareCPU += cpu
				rounds = append(rounds, fmt.Sprintf("bare %.0f", rate))
			}
			if i%2 == 1 {
				if recorded {
					pairs = append(pairs, rate/last)
				} else {
					pairs = append(pairs, last/rate)
				}
			}
			last = rate
		}
		slices.Sort(pairs)
		rec := float64(recOps) / recTime.Seconds()
		bare := float64(bareOps) / bareTime.Seconds()
		recCPUPer := float64(recCPU.Microseconds()) / float64(recOps)
		bareCPUPer := float64(bareCPU.Microseconds()) / float64(bareOps)
		t.Logf("%s idempotent producer, %s: %.0f sends/s with history recording, %.0f without: ratio %.3f, "+
			"median of adjacent pairs %.3f (warm-up %s; rounds: %s); CPU %.1f µs per send recorded, %.1f without (ratio %.3f); "+
			"recorder time %.2f µs per send (%.1f%% of the recorded rounds' wall time, %.1f events per write); %.1f history bytes per event",
			client, mode.name, rec, bare, rec/bare, fpMedian(pairs), strings.Join(warm, ", "), strings.Join(rounds, ", "),
			recCPUPer, bareCPUPer, bareCPUPer/recCPUPer,
			float64(inRecorder.Microseconds())/float64(recOps), 100*inRecorder.Seconds()/recTime.Seconds(),
			float64(events)/float64(writes), float64(bytes)/float64(events))
	}
}

func fpMedian(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// fpCPU is the CPU time this process has used so far (user and system).
func fpCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// notOKSeen passes a recorder's calls through and keeps the first outcomes that are not ok, so
// that a failure says what the client answered.
type notOKSeen struct{ texts []string }

func (n *notOKSeen) wrap(r Recorder) Recorder { return &notOKRecorder{r, n} }

func (n *notOKSeen) see(t history.Type, e string) {
	if t != history.OK && t != history.Invoke && len(n.texts) < 5 {
		n.texts = append(n.texts, fmt.Sprintf("%s: %s", t, e))
	}
}

type notOKRecorder struct {
	Recorder
	seen *notOKSeen
}

func (r *notOKRecorder) Complete(inv history.Op, t history.Type, v history.Payload, e string) (history.Op, error) {
	r.seen.see(t, e)
	return r.Recorder.Complete(inv, t, v, e)
}

func (r *notOKRecorder) CompleteAsync(inv history.Op, t history.Type, v history.Payload, e string) (history.Op, error) {
	r.seen.see(t, e)
	return r.Recorder.CompleteAsync(inv, t, v, e)
}

func (r *notOKRecorder) AppendBatch(ops []history.Op) ([]history.Op, error) {
	for _, op := range ops {
		r.seen.see(op.Type, op.Error)
	}
	return r.Recorder.(batchRecorder).AppendBatch(ops)
}

func (r *fpNoRecorder) Since() time.Duration { return 0 }
