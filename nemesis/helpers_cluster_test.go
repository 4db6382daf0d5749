package nemesis_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/nemesis"
	"github.com/verity-kafka/verity/workloads"
	"github.com/verity-kafka/verity/workloads/kclient"
	"github.com/verity-kafka/verity/workloads/kclient/franz"
)

// run is one test's history in memory and the nemesis that records into it.
type run struct {
	t   *testing.T
	c   *harness.Cluster
	mu  sync.Mutex
	buf bytes.Buffer
	w   *history.Writer
	n   *nemesis.Nemesis
}

// newRun starts a history (header config as given) and a nemesis on c with seed.
func newRun(t *testing.T, c *harness.Cluster, seed int64, config history.Config) *run {
	t.Helper()
	r := &run{t: t, c: c}
	var err error
	r.w, err = history.NewWriter(syncWriter{r}, history.Header{Seed: seed, Config: config})
	require.NoError(t, err)
	r.n = nemesis.New(c, r.w, nemesis.Options{Seed: seed, Log: testLogger(t)})
	t.Cleanup(func() { _ = r.n.Close() })
	return r
}

type syncWriter struct{ r *run }

func (s syncWriter) Write(p []byte) (int, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return s.r.buf.Write(p)
}

func (r *run) ops() []history.Op {
	r.t.Helper()
	r.mu.Lock()
	data := slices.Clone(r.buf.Bytes())
	r.mu.Unlock()
	rd, err := history.NewReader(bytes.NewReader(data))
	require.NoError(r.t, err)
	var out []history.Op
	for {
		var op history.Op
		err := rd.Next(&op)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(r.t, err)
		out = append(out, op.Clone())
	}
}

func (r *run) reader() *history.Reader {
	r.t.Helper()
	r.mu.Lock()
	data := slices.Clone(r.buf.Bytes())
	r.mu.Unlock()
	rd, err := history.NewReader(bytes.NewReader(data))
	require.NoError(r.t, err)
	return rd
}

// nemesisEvents renders the run's nemesis completions as "ok kill [2]" lines.
func (r *run) nemesisEvents() []string {
	var out []string
	for _, op := range r.ops() {
		if !op.Process.Nemesis || op.Type == history.Invoke || op.F == nemesis.FISR {
			continue
		}
		var f history.Faults
		// Every nemesis event records its targets: a value that does not decode is a bug to
		// see, not an event without targets.
		require.NoError(r.t, json.Unmarshal(op.Value.Raw, &f), "nemesis op %d (%s) value %s", op.Index, op.F, op.Value.Raw)
		out = append(out, fmt.Sprintf("%s %s %v %v", op.Type, op.F, f.Nodes, f.Links))
	}
	return out
}

// recProducer is a minimal idempotent acks=all producer on one partition that records every
// send into the run's history: invoke, then ok with the offset, or info with the error (this
// test producer does not tell definite failures apart: every error is an unknown outcome).
type recProducer struct {
	r     *run
	sp    sarama.SyncProducer
	p     int
	n     int
	topic string
	part  int32
}

func newRecProducer(t *testing.T, r *run, p int, topic string, part int32, tweak func(*sarama.Config)) *recProducer {
	t.Helper()
	cfg := harness.SaramaConfig(fmt.Sprintf("nemesis-test-p%d", p))
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max = 3
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Timeout = 5 * time.Second
	if tweak != nil {
		tweak(cfg)
	}
	sp, err := sarama.NewSyncProducer(r.c.Bootstrap(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sp.Close() })
	return &recProducer{r: r, sp: sp, p: p, topic: topic, part: part}
}

// send sends the next record and returns its completion and latency.
func (p *recProducer) send() (history.Op, time.Duration, error) {
	p.n++
	rec := history.Record{Topic: p.topic, Partition: p.part, Value: fmt.Sprintf("%d-%d", p.p, p.n)}
	inv, err := p.r.w.Invoke(history.Client(p.p), history.FSend, history.Payload{Send: &rec})
	if err != nil {
		return history.Op{}, 0, err
	}
	_, off, sendErr := p.sp.SendMessage(&sarama.ProducerMessage{Topic: p.topic, Partition: p.part, Value: sarama.StringEncoder(rec.Value)})
	var done history.Op
	if sendErr == nil {
		r := rec.At(off)
		done, err = p.r.w.Complete(inv, history.OK, history.Payload{Send: &r}, "")
	} else {
		done, err = p.r.w.Complete(inv, history.Info, history.Payload{Send: &rec}, sendErr.Error())
	}
	if err != nil {
		return history.Op{}, 0, err
	}
	return done, time.Duration(done.Time - inv.Time), sendErr
}

// mustSend sends count records and fails the test if any is not acknowledged.
func (p *recProducer) mustSend(t *testing.T, count int) {
	t.Helper()
	for range count {
		_, _, err := p.send()
		require.NoError(t, err)
	}
}

// medianLatency sends k records and returns the median latency from the history's invoke and
// ok times: the workload's view of produce latency.
func (p *recProducer) medianLatency(t *testing.T, k int) time.Duration {
	t.Helper()
	var ds []time.Duration
	for range k {
		_, d, err := p.send()
		require.NoError(t, err)
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// txnLoop runs one-record transactions on txnID until ctx ends, counting commits; an instance
// whose error is fatal is replaced by a new one (which fences it), as an application would.
type txnLoop struct {
	commits    atomic.Int64
	lastCommit atomic.Int64 // unix nanoseconds
	errs       atomic.Int64
	lastErr    atomic.Value
}

func startTxnLoop(t *testing.T, ctx context.Context, c *harness.Cluster, topic, txnID string) *txnLoop {
	t.Helper()
	l := &txnLoop{}
	newProducer := func() (sarama.SyncProducer, error) {
		cfg := harness.SaramaConfig("nemesis-test-txn")
		cfg.Producer.Idempotent = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Transaction.ID = txnID
		cfg.Producer.Transaction.Retry.Max = 20
		cfg.Producer.Transaction.Retry.Backoff = 250 * time.Millisecond
		cfg.Producer.Retry.Max = 5
		cfg.Producer.Retry.Backoff = 250 * time.Millisecond
		cfg.Producer.Return.Successes = true
		cfg.Net.MaxOpenRequests = 1
		// A killed coordinator's connections go silent (its container's network is gone, no
		// reset comes back): short timeouts let the client move on to the new one sooner.
		cfg.Net.ReadTimeout = 4 * time.Second
		cfg.Producer.Timeout = 3 * time.Second
		return sarama.NewSyncProducer(c.Bootstrap(), cfg)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var sp sarama.SyncProducer
		defer func() {
			if sp != nil {
				_ = sp.Close()
			}
		}()
		pace := time.NewTicker(50 * time.Millisecond)
		defer pace.Stop()
		for i := 0; ctx.Err() == nil; i++ {
			select {
			case <-ctx.Done():
				return
			case <-pace.C:
			}
			if sp == nil {
				var err error
				if sp, err = newProducer(); err != nil {
					l.fail(err)
					continue
				}
			}
			err := sp.BeginTxn()
			if err == nil {
				_, _, err = sp.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("txn-%d", i))})
			}
			if err == nil {
				err = sp.CommitTxn()
			}
			if err == nil {
				l.lastCommit.Store(time.Now().UnixNano())
				l.commits.Add(1)
				continue
			}
			l.fail(err)
			// Abort what can be aborted; anything else (a fatal error, a transaction manager
			// stuck between states) gets a new instance, which fences this one, as an
			// application would do.
			st := sp.TxnStatus()
			if st&sarama.ProducerTxnFlagFatalError == 0 && st&(sarama.ProducerTxnFlagAbortableError|sarama.ProducerTxnFlagInTransaction) != 0 {
				if sp.AbortTxn() == nil && sp.TxnStatus()&sarama.ProducerTxnFlagReady != 0 {
					continue
				}
			}
			if sp.TxnStatus()&sarama.ProducerTxnFlagReady == 0 {
				_ = sp.Close()
				sp = nil
			}
		}
	}()
	t.Cleanup(func() { <-done })
	return l
}

func (l *txnLoop) fail(err error) {
	l.errs.Add(1)
	l.lastErr.Store(err.Error())
}

// waitFor polls cond every interval until it holds or d passes.
func waitFor(ctx context.Context, d, interval time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

func has(s []int32, id int) bool { return slices.Contains(s, int32(id)) }

// percentile returns the p-th percentile (0..1) of ds by nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// testLogger sends slog output to t.Log, at info level.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// clientAddr is the address clients reach broker id at (Bootstrap lists one per broker, in the
// order of Brokers).
func clientAddr(c *harness.Cluster, id int) string {
	return c.Bootstrap()[slices.Index(c.Brokers(), id)]
}

// brokerRequest opens a new connection to addr and asks for metadata, with timeout for each
// network step: what a client meets on that link right now.
func brokerRequest(addr string, timeout time.Duration) error {
	cfg := harness.SaramaConfig("nemesis-test-probe")
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = timeout, timeout, timeout
	b := sarama.NewBroker(addr)
	if err := b.Open(cfg); err != nil {
		return err
	}
	defer b.Close()
	_, err := b.GetMetadata(&sarama.MetadataRequest{Version: 1})
	return err
}

// workload is a workloads producer running as one process of the run, until stopped.
type workload struct {
	stop  context.CancelFunc
	done  chan struct{}
	stats workloads.ProducerStats
	err   error
}

// env is the workloads environment of the run: its cluster, its history, its seed.
func (r *run) env() workloads.Env {
	return workloads.Env{Brokers: r.c.Bootstrap(), Recorder: r.w, Seed: r.w.Header().Seed}
}

// startProducer runs workloads.RunProducer as process p with cfg until the returned workload
// is stopped.
func (r *run) startProducer(ctx context.Context, p int, cfg workloads.ProducerConfig) *workload {
	ctx, stop := context.WithCancel(ctx)
	w := &workload{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.stats, w.err = workloads.RunProducer(ctx, r.env(), p, cfg)
	}()
	r.t.Cleanup(func() { w.stop(); <-w.done })
	return w
}

// Stop ends the producer, waits for its outstanding sends, and returns its stats.
func (w *workload) Stop(t *testing.T) workloads.ProducerStats {
	t.Helper()
	w.stop()
	<-w.done
	require.NoError(t, w.err)
	return w.stats
}

// sendOp is one send of the history: invoke and completion.
type sendOp struct {
	value      string
	invoked    time.Duration // since the run's start
	latency    time.Duration
	completion history.Type
}

// sends pairs the history's send invokes of process p with their completions.
func (r *run) sends(p int) []sendOp {
	var out []sendOp
	open := map[int64]history.Op{} // async invokes by i
	var last *history.Op           // the latest invoke of p, for one-at-a-time producers
	for _, op := range r.ops() {
		if op.Process.Nemesis || op.Process.ID != p || op.F != history.FSend {
			continue
		}
		if op.Type == history.Invoke {
			open[op.Index] = op
			o := op
			last = &o
			continue
		}
		inv, ok := history.Op{}, false
		if op.Of != nil {
			inv, ok = open[*op.Of]
		} else if last != nil {
			inv, ok = *last, true
		}
		if !ok || inv.Value.Send == nil {
			continue
		}
		delete(open, inv.Index)
		out = append(out, sendOp{value: inv.Value.Send.Value, invoked: time.Duration(inv.Time),
			latency: time.Duration(op.Time - inv.Time), completion: op.Type})
	}
	return out
}

// settled reports whether every send that process p invoked before at has completed (one
// producer process, one send at a time or async: completions pair with invokes as in sends).
func (r *run) settled(p int, at time.Duration) bool {
	invoked := 0
	for _, op := range r.ops() {
		if !op.Process.Nemesis && op.Process.ID == p && op.F == history.FSend && op.Type == history.Invoke && time.Duration(op.Time) < at {
			invoked++
		}
	}
	done := 0
	for _, s := range r.sends(p) {
		if s.invoked < at {
			done++
		}
	}
	return done == invoked
}

// okWithin are the latencies of the ok sends that were invoked and completed within
// [from, to): a send in flight when a toxic comes off is not under it all the way (Toxiproxy
// lets the chunks it holds go at once when its toxics change).
func okWithin(sends []sendOp, from, to time.Duration) []time.Duration {
	var ds []time.Duration
	for _, s := range sends {
		if s.completion == history.OK && s.invoked >= from && s.invoked+s.latency < to {
			ds = append(ds, s.latency)
		}
	}
	return ds
}

// finalValues are the values the run's final reads show.
func (r *run) finalValues() map[string]bool {
	out := map[string]bool{}
	for _, op := range r.ops() {
		if op.F == history.FFinalRead && op.Type == history.OK && op.Value.FinalRead != nil {
			for _, rec := range op.Value.FinalRead.Records {
				out[rec.Value] = true
			}
		}
	}
	return out
}

// hold lets a phase of a test last d (a fault's duration, a window of measurement): a timer on
// ctx, never a stand-in for waiting on a condition.
func hold(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// shareLoop is one share-group member that keeps a topic supplied, then polls, accepts what it
// got and commits, until its context ends: the group's share-partition state exists and keeps
// being written through the share coordinators.
type shareLoop struct {
	mu      sync.Mutex
	okOn    map[int32]int // ok commits by partition
	errs    atomic.Int64
	lastErr atomic.Value
}

// oks is the number of ok commits of acknowledgements on partition p so far.
func (l *shareLoop) oks(p int32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.okOn[p]
}

func (l *shareLoop) fail(err error) {
	l.errs.Add(1)
	l.lastErr.Store(err.Error())
}

func startShareLoop(t *testing.T, ctx context.Context, c *harness.Cluster, sc kclient.ShareClient, topic, group string) *shareLoop {
	t.Helper()
	l := &shareLoop{okOn: map[int32]int{}}
	prod, err := kgo.NewClient(append(franz.Base(c.Bootstrap(), "nemesis-share-producer"), kgo.DefaultProduceTopic(topic))...)
	require.NoError(t, err)
	member, err := sc.OpenShareConsumer(ctx, kclient.ShareConsumerSpec{ClientID: "nemesis-share-member", Group: group,
		Topics: []string{topic}, MaxRecords: 10, Log: testLogger(t)})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer prod.Close()
		defer member.Close()
		for i := 0; ctx.Err() == nil; i++ {
			// Produced before each poll, so that the member never runs out of records to
			// acknowledge (a commit after a fault shows the state is written again).
			recs := make([]*kgo.Record, 3)
			for j := range recs {
				recs[j] = &kgo.Record{Key: fmt.Appendf(nil, "k-%d-%d", i, j), Value: fmt.Appendf(nil, "v-%d-%d", i, j)}
			}
			pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			if err := prod.ProduceSync(pctx, recs...).FirstErr(); err != nil && ctx.Err() == nil {
				l.fail(fmt.Errorf("producing: %w", err))
			}
			cancel()
			ds, err := member.Poll(ctx, time.Second, 10)
			if err != nil && ctx.Err() == nil {
				l.fail(fmt.Errorf("polling: %w", err))
			}
			if len(ds) == 0 {
				continue
			}
			if err := member.Ack(kclient.AckAccept, ds...); err != nil {
				l.fail(fmt.Errorf("acknowledging: %w", err))
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			for _, r := range member.Commit(cctx) {
				if r.Type == history.OK {
					l.mu.Lock()
					l.okOn[r.Partition]++
					l.mu.Unlock()
				} else if ctx.Err() == nil {
					l.fail(fmt.Errorf("commit of %s-%d: %s %s", r.Topic, r.Partition, r.Type, r.Error))
				}
			}
			cancel()
		}
	}()
	t.Cleanup(func() { <-done })
	return l
}

// shareCoordinatorOf asks the cluster FindCoordinator with key type SHARE (2, FindCoordinator
// v6+, which sarama cannot send) for a share coordinator key: the broker's own answer, to
// check the locator's computation against.
func shareCoordinatorOf(ctx context.Context, cl *kgo.Client, key string) (int, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 2
	req.CoordinatorKeys = []string{key}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, fmt.Errorf("FindCoordinator(SHARE, %q): %w", key, err)
	}
	if len(resp.Coordinators) != 1 {
		return -1, fmt.Errorf("FindCoordinator(SHARE, %q): %d coordinators in the answer (v%d)", key, len(resp.Coordinators), resp.Version)
	}
	co := resp.Coordinators[0]
	if err := kerr.ErrorForCode(co.ErrorCode); err != nil {
		return -1, fmt.Errorf("FindCoordinator(SHARE, %q): %w", key, err)
	}
	return int(co.NodeID), nil
}

// topicID asks Metadata for a topic's id and prints it as Kafka's Uuid.toString does (URL-safe
// base64 without padding), independently of the locator.
func topicID(ctx context.Context, cl *kgo.Client, topic string) (string, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("metadata of %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 {
		return "", fmt.Errorf("metadata of %s: %d topics in the answer", topic, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return "", fmt.Errorf("metadata of %s: %w", topic, err)
	}
	id := resp.Topics[0].TopicID
	return base64.RawURLEncoding.EncodeToString(id[:]), nil
}
