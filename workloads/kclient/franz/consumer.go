package franz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// commitTimeout bounds a commit the group waits for: the one made when partitions are
// revoked (or the member leaves), which must stay well inside the rebalance timeout (60 s).
const commitTimeout = 10 * time.Second

// commitInterval is how often the marked offsets are committed: sarama's default
// (Consumer.Offsets.AutoCommit.Interval), which the sarama consumer runs with.
const commitInterval = time.Second

// consumer is franz-go's kclient.Consumer. The recording goroutine polls the
// client itself; the group's callbacks, which franz-go runs on its own goroutines, only queue
// what they were told, and Poll hands the queue over ahead of the records it returns.
//
// That order is right because of BlockRebalanceOnPoll: a poll that returned records holds every
// callback back until AllowRebalance, which the consumer calls once the role has recorded
// (and marked) all of them; and a poll cannot return while a callback runs. So everything queued
// when a poll returns happened before the poll returned, and the poll's records either came
// after it (a partition newly assigned is fetched only once OnPartitionsAssigned has returned;
// franz-go drops the buffered records of a revoked partition before OnPartitionsRevoked) or
// belong to a partition the member kept, whose position goes on either way.
//
// Commits: AutoCommitMarks, with MarkCommitRecords of each poll's records once the history shows
// them; franz-go commits the marks every commitInterval, and OnPartitionsRevoked (which
// also runs when the member leaves) commits them synchronously before the partitions go, as
// franz-go's default revoke would (a custom one replaces it). So a commit never runs ahead of
// the history, and a restart (a clean leave) resumes right after it. DisableAutoCommit with
// CommitRecords after every poll would keep the same promise, but its synchronous commit runs on
// the recording goroutine while the rebalance is held: when the coordinator is lost (a killed
// broker) the consumer's polls, and its group, stall until the commit times out.
type consumer struct {
	cl    *kgo.Client
	log   *slog.Logger
	group bool

	mu sync.Mutex
	// queued are the control events the group's callbacks reported, in the order they ran.
	queued []kclient.Event
	// owned is the member's assignment, as the callbacks (which never run concurrently with
	// each other) reported it: franz-go's cooperative balancer hands OnPartitionsAssigned the
	// partitions added, not the whole assignment.
	owned map[string][]int32

	// outstanding counts the records Poll handed over that are not Recorded yet. Only the
	// recording goroutine touches it.
	outstanding int

	// storePositions (ConsumerSpec): nothing is marked or committed, and held are the
	// partitions assigned since the last Seek, paused until it places them.
	storePositions bool
	held           map[string][]int32
}

func (c *Client) OpenConsumer(_ context.Context, s kclient.ConsumerSpec) (kclient.Consumer, error) {
	start := kgo.NewOffset().AtStart()
	if s.FromNewest {
		start = kgo.NewOffset().AtEnd()
	}
	cons := &consumer{log: kit.OrDiscard(s.Log), group: s.Group != "", owned: map[string][]int32{},
		storePositions: s.StorePositions, held: map[string][]int32{}}
	// The reset offset is where franz-go resumes when it cannot locate where a truncated log
	// diverged from what the consumer read (its default rewinds by a minute of timestamps): the
	// oldest offset re-reads rather than skips; with FromNewest the consumer wants the end.
	opts := append(c.base(s.ClientID),
		kgo.WithLogger(NewLog(cons.log, nil)),
		kgo.FetchIsolationLevel(isolation(s.Isolation)),
		kgo.ConsumeStartOffset(start),
		kgo.ConsumeResetOffset(start),
	)
	if cons.group {
		// A read_committed member needs stable offsets (KIP-447) so as not to resume below a
		// pending transactional offset commit: franz-go asks for them on every OffsetFetch
		// (RequireStableFetchOffsets is a no-op kept for compatibility), at either isolation.
		opts = append(opts, groupProtocolOpts(s.GroupProtocol)...)
		commits := []kgo.Opt{kgo.AutoCommitMarks(), kgo.AutoCommitInterval(commitInterval)}
		if s.StorePositions {
			commits = []kgo.Opt{kgo.DisableAutoCommit()}
		}
		opts = append(opts, commits...)
		opts = append(opts,
			kgo.ConsumeTopics(s.Topics...),
			kgo.ConsumerGroup(s.Group),
			kgo.BlockRebalanceOnPoll(),
			kgo.OnPartitionsAssigned(cons.assigned),
			kgo.OnPartitionsRevoked(cons.revoked),
			kgo.OnPartitionsLost(cons.lost),
		)
	} else {
		offsets := map[string]map[int32]kgo.Offset{}
		for t, ps := range s.Assign {
			offsets[t] = map[int32]kgo.Offset{}
			for p, pos := range ps {
				o := start
				if pos.Offset >= 0 {
					// With the epoch, franz-go validates the position before fetching
					// (KIP-320): a log truncated under it while no instance ran is
					// reported as data loss too.
					o = kgo.NewOffset().At(pos.Offset).WithEpoch(pos.Epoch)
				}
				offsets[t][p] = o
			}
		}
		opts = append(opts, kgo.ConsumePartitions(offsets))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, &kclient.PermanentError{Err: fmt.Errorf("consumer: creating the franz-go client: %w", err)}
	}
	cons.cl = cl
	return cons, nil
}

func isolation(i kafkaconf.Isolation) kgo.IsolationLevel {
	if i == kafkaconf.ReadCommitted {
		return kgo.ReadCommitted()
	}
	return kgo.ReadUncommitted()
}

// Poll collects what the client returns within wait, at most max records, as the sarama consumer
// does (franz-go's own poll returns as soon as anything is buffered: one record per poll op at
// low rates). The control events the callbacks queued come ahead of the fetches that returned
// after them (see consumer); the fetches come in the order franz-go returns them: a
// partition's records in offset order, a truncation's notice between the records read before it
// and those read from the reset position.
func (c *consumer) Poll(ctx context.Context, wait time.Duration, max int) []kclient.Event {
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out []kclient.Event
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
						out = append(out, kclient.Event{Kind: kclient.EventRecord, Record: hr, Epoch: r.LeaderEpoch, Handle: r})
						n++
					}
				}
			}
		}
	}
	for _, ev := range out {
		if ev.Kind == kclient.EventRecord {
			c.outstanding++
		}
	}
	c.allowRebalance()
	return out
}

// allowRebalance lets the group rebalance once nothing Poll handed over awaits Recorded and no
// assigned partition awaits Seek: SetOffsets must not race a revoke.
func (c *consumer) allowRebalance() {
	c.mu.Lock()
	held := len(c.held) > 0
	c.mu.Unlock()
	if c.outstanding == 0 && !held {
		c.cl.AllowRebalance()
	}
}

func (c *consumer) fetchError(out []kclient.Event, topic string, partition int32, err error) []kclient.Event {
	if dl, ok := errors.AsType[*kgo.ErrDataLoss](err); ok {
		return append(out, kclient.Event{Kind: kclient.EventDataLoss, Loss: kclient.Loss{Topic: dl.Topic, Partition: dl.Partition,
			Offset: dl.ConsumedTo, Epoch: dl.ConsumedToEpoch, ResetTo: dl.ResetTo, ResetEpoch: dl.ResetToEpoch}})
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
func (c *consumer) Recorded(recs []kclient.Event) {
	if len(recs) == 0 {
		return
	}
	c.outstanding -= len(recs)
	if c.group && !c.storePositions {
		krs := make([]*kgo.Record, len(recs))
		for i, ev := range recs {
			krs[i] = ev.Handle.(*kgo.Record)
		}
		c.cl.MarkCommitRecords(krs...)
	}
	c.allowRebalance()
}

// Seek sets the offsets of the held partitions the member still owns (franz-go keeps a set offset
// over the committed one it may still be fetching) and resumes them. It runs on the polling
// goroutine while the rebalance is held (Poll does not let it go while partitions are held), as
// SetOffsets asks.
func (c *consumer) Seek(_ context.Context, at map[string]map[int32]int64) error {
	if !c.storePositions {
		return errors.New("consumer: seek without store_positions: the group's committed offsets place its partitions")
	}
	c.mu.Lock()
	held := c.held
	c.held = map[string][]int32{}
	set := map[string]map[int32]kgo.EpochOffset{}
	for t, ps := range held {
		for _, p := range ps {
			if off, ok := at[t][p]; ok && slices.Contains(c.owned[t], p) {
				if set[t] == nil {
					set[t] = map[int32]kgo.EpochOffset{}
				}
				set[t][p] = kgo.EpochOffset{Epoch: -1, Offset: off}
			}
		}
	}
	c.mu.Unlock()
	c.cl.SetOffsets(set)
	c.cl.ResumeFetchPartitions(held)
	c.allowRebalance()
	return nil
}

// Close lets a held rebalance go on (records handed over but not recorded are dropped, never
// committed) and closes the client, which leaves the group, committing the marks on the way
// (OnPartitionsRevoked).
func (c *consumer) Close() {
	c.cl.AllowRebalance()
	c.cl.Close()
}

// The group's callbacks. franz-go calls them one at a time, on its own goroutines.

func (c *consumer) assigned(_ context.Context, cl *kgo.Client, added map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range added {
		c.owned[t] = sortedUnion(c.owned[t], ps)
	}
	if c.storePositions {
		// Fetched only once Seek has placed them.
		cl.PauseFetchPartitions(added)
		for t, ps := range added {
			c.held[t] = sortedUnion(c.held[t], ps)
		}
	}
	// Noted even when nothing was added: the member joined a new generation.
	c.queueLocked(cl)
}

func (c *consumer) revoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	// What the history shows polled from the partitions going away is committed before they
	// go, so that their next owner resumes right after it.
	if !c.storePositions {
		cctx, cancel := context.WithTimeout(ctx, commitTimeout)
		if err := cl.CommitMarkedOffsets(cctx); err != nil {
			// Not committed: the next owner reads them again, which is allowed.
			c.log.Warn("committing the recorded records of revoked partitions failed", "err", err)
		}
		cancel()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// franz-go calls this at the end of every session, mostly with nothing to revoke: then
	// the member's positions go on and nothing is noted.
	if !c.drop(revoked) {
		return
	}
	c.queueLocked(cl)
}

func (c *consumer) lost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
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
func (c *consumer) drop(parts map[string][]int32) bool {
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

func (c *consumer) queueLocked(cl *kgo.Client) {
	member, generation := cl.GroupMetadata()
	parts := make(map[string][]int32, len(c.owned))
	for t, ps := range c.owned {
		parts[t] = slices.Clone(ps)
	}
	c.queued = append(c.queued, kclient.Event{Kind: kclient.EventAssigned, Claims: kclient.Claims{Generation: generation, Member: member, Partitions: parts}})
}

func sortedUnion(a, b []int32) []int32 {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// groupProtocolOpts are a group consumer's options for group protocol p: the classic one with
// franz-go's default (cooperative-sticky) balancer, or KIP-848's, where the coordinator assigns
// (franz-go asks for it with ServerSideBalancer and a range or sticky balancer).
func groupProtocolOpts(p kafkaconf.GroupProtocol) []kgo.Opt {
	if p != kafkaconf.GroupConsumer {
		return nil
	}
	return []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer()}
}
