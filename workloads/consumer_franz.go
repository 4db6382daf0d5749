package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	kfranz "github.com/verity-kafka/verity/workloads/kclient/franz"
)

// franzCommitTimeout bounds a commit the group waits for: the one made when partitions are
// revoked (or the member leaves), which must stay well inside the rebalance timeout (60 s).
const franzCommitTimeout = 10 * time.Second

// franzCommitInterval is how often the marked offsets are committed: sarama's default
// (Consumer.Offsets.AutoCommit.Interval), which the sarama adapter runs with.
const franzCommitInterval = time.Second

// franzConsumer is the consumer workload's franz-go adapter. The recording goroutine polls the
// client itself; the group's callbacks, which franz-go runs on its own goroutines, only queue
// what they were told, and Poll hands the queue over ahead of the records it returns.
//
// That order is right because of BlockRebalanceOnPoll: a poll that returned records holds every
// callback back until AllowRebalance, which the adapter calls once the workload has recorded
// (and marked) all of them; and a poll cannot return while a callback runs. So everything queued
// when a poll returns happened before the poll returned, and the poll's records either came
// after it (a partition newly assigned is fetched only once OnPartitionsAssigned has returned;
// franz-go drops the buffered records of a revoked partition before OnPartitionsRevoked) or
// belong to a partition the member kept, whose position goes on either way.
//
// Commits: AutoCommitMarks, with MarkCommitRecords of each poll's records once the history shows
// them; franz-go commits the marks every franzCommitInterval, and OnPartitionsRevoked (which
// also runs when the member leaves) commits them synchronously before the partitions go, as
// franz-go's default revoke would (a custom one replaces it). So a commit never runs ahead of
// the history, and a restart (a clean leave) resumes right after it. DisableAutoCommit with
// CommitRecords after every poll would keep the same promise, but its synchronous commit runs on
// the recording goroutine while the rebalance is held: when the coordinator is lost (a killed
// broker) the consumer's polls, and its group, stall until the commit times out.
type franzConsumer struct {
	cl    *kgo.Client
	log   *slog.Logger
	group bool

	mu sync.Mutex
	// queued are the control events the group's callbacks reported, in the order they ran.
	queued []consumerEvent
	// owned is the member's assignment, as the callbacks (which never run concurrently with
	// each other) reported it: franz-go's cooperative balancer hands OnPartitionsAssigned the
	// partitions added, not the whole assignment.
	owned map[string][]int32

	// outstanding counts the records Poll handed over that are not Recorded yet. Only the
	// recording goroutine touches it.
	outstanding int
}

func openFranzConsumer(ctx context.Context, env Env, st consumerStart, log *slog.Logger) (consumerClient, map[string][]int32, error) {
	cfg := st.cfg
	start := kgo.NewOffset().AtStart()
	if cfg.FromNewest {
		start = kgo.NewOffset().AtEnd()
	}
	c := &franzConsumer{log: log, group: cfg.Mode == Subscribe, owned: map[string][]int32{}}
	// The reset offset is where franz-go resumes when it cannot locate where a truncated log
	// diverged from what the consumer read (its default rewinds by a minute of timestamps): the
	// oldest offset re-reads rather than skips; with FromNewest the consumer wants the end.
	opts := append(env.Franz(st.clientID),
		kgo.WithLogger(kfranz.NewLog(log, nil)),
		kgo.FetchIsolationLevel(franzIsolation(cfg.Isolation)),
		kgo.ConsumeStartOffset(start),
		kgo.ConsumeResetOffset(start),
	)
	var parts map[string][]int32
	if c.group {
		// A read_committed member needs stable offsets (KIP-447) so as not to resume below a
		// pending transactional offset commit: franz-go asks for them on every OffsetFetch
		// (RequireStableFetchOffsets is a no-op kept for compatibility), at either isolation.
		opts = append(opts,
			kgo.ConsumeTopics(cfg.Topics...),
			kgo.ConsumerGroup(cfg.Group),
			kgo.AutoCommitMarks(),
			kgo.AutoCommitInterval(franzCommitInterval),
			kgo.BlockRebalanceOnPoll(),
			kgo.OnPartitionsAssigned(c.assigned),
			kgo.OnPartitionsRevoked(c.revoked),
			kgo.OnPartitionsLost(c.lost),
		)
	} else {
		var err error
		if parts, err = consumerPartitions(ctx, env, st.clientID+"-meta", cfg); err != nil {
			return nil, nil, err
		}
		offsets := map[string]map[int32]kgo.Offset{}
		for t, ps := range parts {
			offsets[t] = map[int32]kgo.Offset{}
			for _, p := range ps {
				o := start
				if pos, ok := st.from[t][p]; ok {
					// With the epoch, franz-go validates the position before fetching
					// (KIP-320): a log truncated under it while no instance ran is
					// reported as data loss too.
					o = kgo.NewOffset().At(pos.offset).WithEpoch(pos.epoch)
				}
				offsets[t][p] = o
			}
		}
		opts = append(opts, kgo.ConsumePartitions(offsets))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("consumer: creating the franz-go client: %w", err)
	}
	c.cl = cl
	return c, parts, nil
}

func franzIsolation(i kafkaconf.Isolation) kgo.IsolationLevel {
	if i == kafkaconf.ReadCommitted {
		return kgo.ReadCommitted()
	}
	return kgo.ReadUncommitted()
}

// consumerPartitions lists the partitions an assign-mode consumer reads: those cfg.Partitions
// names, and every partition of the other topics, as the cluster knows them.
func consumerPartitions(ctx context.Context, env Env, clientID string, cfg ConsumerConfig) (map[string][]int32, error) {
	parts := map[string][]int32{}
	var ask []string
	for _, t := range cfg.Topics {
		if ps, ok := cfg.Partitions[t]; ok {
			parts[t] = ps
		} else {
			ask = append(ask, t)
		}
	}
	if len(ask) == 0 {
		return parts, nil
	}
	cl, err := kgo.NewClient(env.Franz(clientID)...)
	if err != nil {
		return nil, fmt.Errorf("consumer: creating a franz-go client for metadata: %w", err)
	}
	defer cl.Close()
	found, err := kfranz.Partitions(ctx, cl, ask)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	maps.Copy(parts, found)
	return parts, nil
}

// Poll collects what the client returns within wait, at most max records, as the sarama adapter
// does (franz-go's own poll returns as soon as anything is buffered: one record per poll op at
// low rates). The control events the callbacks queued come ahead of the fetches that returned
// after them (see franzConsumer); the fetches come in the order franz-go returns them: a
// partition's records in offset order, a truncation's notice between the records read before it
// and those read from the reset position.
func (c *franzConsumer) Poll(ctx context.Context, wait time.Duration, max int) []consumerEvent {
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out []consumerEvent
	for n := 0; n < max && pctx.Err() == nil; {
		fs := c.cl.PollRecords(pctx, max-n)
		if fs.IsClientClosed() {
			break
		}
		c.mu.Lock()
		out = append(out, c.queued...)
		c.queued = nil
		c.mu.Unlock()
		for _, f := range fs {
			for _, ft := range f.Topics {
				for _, fp := range ft.Partitions {
					if fp.Err != nil {
						out = c.fetchError(out, ft.Topic, fp.Partition, fp.Err)
					}
					for _, r := range fp.Records {
						hr := history.Record{Topic: r.Topic, Partition: r.Partition, Value: string(r.Value)}.At(r.Offset)
						if len(r.Key) > 0 {
							hr.Key = string(r.Key)
						}
						out = append(out, consumerEvent{kind: ceRecord, rec: hr, epoch: r.LeaderEpoch, handle: r})
						n++
					}
				}
			}
		}
	}
	for _, ev := range out {
		if ev.kind == ceRecord {
			c.outstanding++
		}
	}
	if c.outstanding == 0 {
		// Nothing to record: the group may rebalance (a poll that returned only errors, or
		// ended at its deadline, holds it back as well).
		c.cl.AllowRebalance()
	}
	return out
}

func (c *franzConsumer) fetchError(out []consumerEvent, topic string, partition int32, err error) []consumerEvent {
	if dl, ok := errors.AsType[*kgo.ErrDataLoss](err); ok {
		return append(out, consumerEvent{kind: ceDataLoss, loss: dataLoss{topic: dl.Topic, partition: dl.Partition,
			offset: dl.ConsumedTo, epoch: dl.ConsumedToEpoch, resetTo: dl.ResetTo, resetEpoch: dl.ResetToEpoch}})
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// The poll's wait is over.
	case errors.Is(err, kgo.ErrClientClosed):
	default:
		c.log.Debug("fetch", "topic", topic, "partition", partition, "err", err)
	}
	return out
}

// Recorded marks the records for committing (subscribe mode) and, once every record Poll handed
// over is recorded, lets the group rebalance.
func (c *franzConsumer) Recorded(recs []consumerEvent) {
	if len(recs) == 0 {
		return
	}
	c.outstanding -= len(recs)
	if c.group {
		krs := make([]*kgo.Record, len(recs))
		for i, ev := range recs {
			krs[i] = ev.handle.(*kgo.Record)
		}
		c.cl.MarkCommitRecords(krs...)
	}
	if c.outstanding == 0 {
		c.cl.AllowRebalance()
	}
}

// Close lets a held rebalance go on (records handed over but not recorded are dropped, never
// committed) and closes the client, which leaves the group, committing the marks on the way
// (OnPartitionsRevoked).
func (c *franzConsumer) Close() {
	c.cl.AllowRebalance()
	c.cl.Close()
}

// The group's callbacks. franz-go calls them one at a time, on its own goroutines.

func (c *franzConsumer) assigned(_ context.Context, cl *kgo.Client, added map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range added {
		c.owned[t] = sortedUnion(c.owned[t], ps)
	}
	// Noted even when nothing was added: the member joined a new generation.
	c.queueLocked(cl)
}

func (c *franzConsumer) revoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	// What the history shows polled from the partitions going away is committed before they
	// go, so that their next owner resumes right after it.
	cctx, cancel := context.WithTimeout(ctx, franzCommitTimeout)
	if err := cl.CommitMarkedOffsets(cctx); err != nil {
		// Not committed: the next owner reads them again, which is allowed.
		c.log.Warn("committing the recorded records of revoked partitions failed", "err", err)
	}
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	// franz-go calls this at the end of every session, mostly with nothing to revoke: then
	// the member's positions go on and nothing is noted.
	if !c.drop(revoked) {
		return
	}
	c.queueLocked(cl)
}

func (c *franzConsumer) lost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Lost means everything owned is gone (a fatal group error, the member fenced).
	changed := c.drop(lost) || len(c.owned) > 0
	clear(c.owned)
	if changed {
		c.queueLocked(cl)
	}
}

// drop removes partitions from owned and reports whether it named any.
func (c *franzConsumer) drop(parts map[string][]int32) bool {
	named := false
	for t, ps := range parts {
		if len(ps) == 0 {
			continue
		}
		named = true
		c.owned[t] = slices.DeleteFunc(c.owned[t], func(p int32) bool { return slices.Contains(ps, p) })
		if len(c.owned[t]) == 0 {
			delete(c.owned, t)
		}
	}
	return named
}

func (c *franzConsumer) queueLocked(cl *kgo.Client) {
	member, generation := cl.GroupMetadata()
	parts := make(map[string][]int32, len(c.owned))
	for t, ps := range c.owned {
		parts[t] = slices.Clone(ps)
	}
	c.queued = append(c.queued, consumerEvent{kind: ceRebalance, claims: claims{generation: generation, member: member, partitions: parts}})
}

func sortedUnion(a, b []int32) []int32 {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
