package workloads

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	ksarama "github.com/verity-kafka/verity/workloads/kclient/sarama"
)

// FinalReadConfig is the complete scan of a run's partitions, once the faults have healed.
type FinalReadConfig struct {
	// Topics to scan: every partition of each.
	Topics []string `json:"topics"`
	// Isolations to scan in; default both (read_uncommitted then read_committed).
	Isolations []kafkaconf.Isolation `json:"isolations,omitempty"`
	// Deadline bounds the whole final read; default 3 minutes. Scans that have not reached
	// their end by then are recorded as incomplete.
	Deadline time.Duration `json:"deadline,omitempty"`
	// ChunkRecords is the most records one final-read op holds (a chunk may end inside a
	// record batch); default 2000.
	ChunkRecords int `json:"chunk_records,omitempty"`
	// StableWait is how long a read_committed scan waits for the partition's last stable
	// offset to reach its high watermark (no transaction still open) before it scans to the
	// LSO it has; default 75s (a little more than the workloads' 30s transaction timeout
	// twice over), bounded by Deadline.
	StableWait time.Duration `json:"stable_wait,omitempty"`
	// Workers scan partitions in parallel, each as its own history process; default 2.
	Workers int `json:"workers,omitempty"`
}

func (c FinalReadConfig) withDefaults() (FinalReadConfig, error) {
	if len(c.Isolations) == 0 {
		c.Isolations = []kafkaconf.Isolation{kafkaconf.ReadUncommitted, kafkaconf.ReadCommitted}
	}
	for _, iso := range c.Isolations {
		if _, err := kafkaconf.ParseIsolation(string(iso)); err != nil {
			return c, fmt.Errorf("final read: %w", err)
		}
	}
	if c.Deadline <= 0 {
		c.Deadline = 3 * time.Minute
	}
	if c.ChunkRecords <= 0 {
		c.ChunkRecords = 2000
	}
	if c.StableWait <= 0 {
		c.StableWait = 75 * time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	return c, nil
}

// FinalReadStats summarises a final read.
type FinalReadStats struct {
	Scans, Complete, Incomplete int
	Ops                         int
	Records                     map[string]int64 // per isolation
	Unstable                    []string         // "topic-p": read_committed scans that stopped at an LSO below the HW
	Processes                   []int
}

// AllComplete says whether every scan reached its end.
func (s FinalReadStats) AllComplete() bool { return s.Incomplete == 0 && s.Scans > 0 }

type scanJob struct {
	topic     string
	partition int32
	iso       kafkaconf.Isolation
}

// FinalRead scans every partition of cfg.Topics from its earliest offset to its end — the high
// watermark for read_uncommitted, the last stable offset for read_committed — and records the
// records each isolation level shows as final-read ops of at most ChunkRecords records over
// consecutive ranges. Workers use processes first, first+1, …. A scan is retried (leader moves,
// timeouts) until it completes or the deadline passes; then it is recorded with
// "incomplete": true, and a partition never reached is recorded as such too.
//
// It reads with Fetch requests of its own rather than a sarama consumer, because it must know
// where a scan stands: a consumer reports only the records it returns, while the offsets of
// transaction markers and of aborted records also advance the scan towards its end.
func FinalRead(ctx context.Context, env Env, first int, cfg FinalReadConfig) (FinalReadStats, error) {
	env, err := env.withDefaults()
	if err != nil {
		return FinalReadStats{}, err
	}
	if cfg, err = cfg.withDefaults(); err != nil {
		return FinalReadStats{}, err
	}
	stats := FinalReadStats{Records: map[string]int64{}}
	deadline := time.Now().Add(cfg.Deadline)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	log := env.Log.With("workload", "final-read")

	client, err := connect(ctx, env, clientID(first, "final-read"), deadline)
	if err != nil {
		return stats, err
	}
	defer func() { _ = client.Close() }()
	var jobs []scanJob
	for _, iso := range cfg.Isolations {
		for _, t := range cfg.Topics {
			var parts []int32
			err := kit.WaitUntil(ctx, deadline, 500*time.Millisecond, func() (bool, error) {
				if err := client.RefreshMetadata(t); err != nil {
					return false, err
				}
				ps, err := client.Partitions(t)
				parts = ps
				return err == nil && len(ps) > 0, err
			})
			if err != nil {
				return stats, fmt.Errorf("final read: partitions of %s: %w", t, err)
			}
			slices.Sort(parts)
			for _, p := range parts {
				jobs = append(jobs, scanJob{t, p, iso})
			}
		}
	}
	stats.Scans = len(jobs)
	queue := make(chan scanJob, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for i := range min(cfg.Workers, len(jobs)) {
		p := first + i
		stats.Processes = append(stats.Processes, p)
		sc := &scanner{env: env, cfg: cfg, client: client, proc: history.Client(p), deadline: deadline,
			log: log.With("process", p)}
		wg.Go(func() {
			for j := range queue {
				res, err := sc.scan(ctx, j)
				mu.Lock()
				stats.Ops += res.ops
				stats.Records[string(j.iso)] += res.records
				if res.complete {
					stats.Complete++
				} else {
					stats.Incomplete++
				}
				if res.unstable {
					stats.Unstable = append(stats.Unstable, fmt.Sprintf("%s-%d", j.topic, j.partition))
				}
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	log.Info("final read done", "scans", stats.Scans, "complete", stats.Complete, "incomplete", stats.Incomplete,
		"ops", stats.Ops, "records", stats.Records)
	return stats, errors.Join(errs...)
}

// connect opens a sarama client, retrying until the deadline.
func connect(ctx context.Context, env Env, id string, deadline time.Time) (sarama.Client, error) {
	var client sarama.Client
	err := kit.WaitUntil(ctx, deadline, time.Second, func() (bool, error) {
		c, err := sarama.NewClient(env.Brokers, env.Sarama(id))
		client = c
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to %v: %w", env.Brokers, err)
	}
	return client, nil
}

type scanner struct {
	env      Env
	cfg      FinalReadConfig
	client   sarama.Client
	proc     history.Process
	deadline time.Time
	log      *slog.Logger
}

type scanResult struct {
	ops      int
	records  int64
	complete bool
	unstable bool
}

// scan reads one partition in one isolation level. Only a failure to record is an error; a scan
// the cluster did not let finish is recorded as incomplete.
func (s *scanner) scan(ctx context.Context, j scanJob) (res scanResult, err error) {
	iso := ksarama.Isolation(j.iso)
	var from, hw, lso int64
	bounds := func() (bool, error) {
		var err error
		if from, err = s.client.GetOffset(j.topic, j.partition, sarama.OffsetOldest); err != nil {
			return false, err
		}
		hw, lso, err = s.ends(j.topic, j.partition)
		return err == nil, err
	}
	if err := kit.WaitUntil(ctx, s.deadline, 500*time.Millisecond, bounds); err != nil {
		return res, s.unreached(j, &res, fmt.Sprintf("no offsets before the deadline: %v", err))
	}
	if iso == sarama.ReadCommitted && lso < hw {
		// A transaction is still open: wait for it to end (its instance commits or aborts
		// it, a new instance aborts it, or the coordinator does after its timeout).
		stable := time.Now().Add(s.cfg.StableWait)
		if s.deadline.Before(stable) {
			stable = s.deadline
		}
		_ = kit.WaitUntil(ctx, stable, 500*time.Millisecond, func() (bool, error) {
			ok, err := bounds()
			return ok && lso >= hw, err
		})
		if lso < hw {
			res.unstable = true
			s.log.Warn("read_committed scan stops at an LSO below the high watermark: a transaction stayed open",
				"topic", j.topic, "partition", j.partition, "lso", lso, "hw", hw)
		}
	}
	end := hw
	if iso == sarama.ReadCommitted {
		end = lso
	}
	next := from
	for {
		chunk, reached, cerr := s.chunk(ctx, j, iso, next, end)
		res.ops++
		res.records += int64(len(chunk.Records))
		if cerr != nil {
			return res, cerr
		}
		if chunk.Incomplete {
			return res, nil
		}
		next = reached
		if next >= end {
			res.complete = true
			return res, nil
		}
	}
}

// chunk records one final-read op: from next, until ChunkRecords records or end.
func (s *scanner) chunk(ctx context.Context, j scanJob, iso sarama.IsolationLevel, from, end int64) (*history.FinalRead, int64, error) {
	fr := &history.FinalRead{Topic: j.topic, Partition: j.partition, Isolation: string(j.iso), From: from, End: end, Records: []history.Record{}}
	inv, err := s.env.Recorder.Invoke(s.proc, history.FFinalRead, history.Payload{FinalRead: fr})
	if err != nil {
		return fr, from, fmt.Errorf("final read: recording: %w", err)
	}
	next := from
	var last error
	for next < end && len(fr.Records) < s.cfg.ChunkRecords {
		if ctx.Err() != nil || !time.Now().Before(s.deadline) {
			break
		}
		n, err := s.fetch(j, iso, next, end, s.cfg.ChunkRecords, fr)
		if err != nil {
			last = err
			s.log.Debug("final read fetch failed; retrying", "topic", j.topic, "partition", j.partition, "offset", next, "err", err)
			_ = s.client.RefreshMetadata(j.topic)
			// Pace the retries: the partition may be between leaders.
			_ = kit.Sleep(ctx, 250*time.Millisecond)
			continue
		}
		next = n
	}
	fr.End = next
	t, text := history.OK, ""
	if next < end && len(fr.Records) < s.cfg.ChunkRecords {
		fr.Incomplete = true
		t = history.Info
		text = fmt.Sprintf("final read incomplete: reached offset %d of [%d, %d) before the deadline", next, from, end)
		if last != nil {
			text += "; last error: " + ErrorText(last)
		}
	}
	if _, err := s.env.Recorder.Complete(inv, t, history.Payload{FinalRead: fr}, text); err != nil {
		return fr, next, fmt.Errorf("final read: recording: %w", err)
	}
	return fr, next, nil
}

// unreached records a scan that could not begin.
func (s *scanner) unreached(j scanJob, res *scanResult, why string) error {
	fr := &history.FinalRead{Topic: j.topic, Partition: j.partition, Isolation: string(j.iso), Records: []history.Record{}}
	inv, err := s.env.Recorder.Invoke(s.proc, history.FFinalRead, history.Payload{FinalRead: fr})
	if err != nil {
		return fmt.Errorf("final read: recording: %w", err)
	}
	fr.Incomplete = true
	res.ops++
	if _, err := s.env.Recorder.Complete(inv, history.Info, history.Payload{FinalRead: fr}, "final read incomplete: "+why); err != nil {
		return fmt.Errorf("final read: recording: %w", err)
	}
	return nil
}

// ends asks the partition's leader for its high watermark and last stable offset.
func (s *scanner) ends(topic string, partition int32) (hw, lso int64, err error) {
	b, err := s.client.Leader(topic, partition)
	if err != nil {
		return 0, 0, err
	}
	get := func(iso sarama.IsolationLevel) (int64, error) {
		req := sarama.NewOffsetRequest(s.client.Config().Version)
		req.IsolationLevel = iso
		req.AddBlock(topic, partition, sarama.OffsetNewest, 1)
		resp, err := b.GetAvailableOffsets(req)
		if err != nil {
			return 0, err
		}
		blk := resp.GetBlock(topic, partition)
		if blk == nil {
			return 0, sarama.ErrIncompleteResponse
		}
		if blk.Err != sarama.ErrNoError {
			return 0, blk.Err
		}
		return blk.Offset, nil
	}
	if hw, err = get(sarama.ReadUncommitted); err != nil {
		return 0, 0, err
	}
	lso, err = get(sarama.ReadCommitted)
	return hw, lso, err
}

// fetch reads from next and appends to fr the records that isolation level iso shows, up to
// end and until fr holds limit records; it returns the offset after the last record or batch it
// consumed (control batches and aborted batches included, so that the scan advances over them).
// A chunk may end inside a batch: the next fetch asks for the rest of it.
func (s *scanner) fetch(j scanJob, iso sarama.IsolationLevel, next, end int64, limit int, fr *history.FinalRead) (int64, error) {
	b, err := s.client.Leader(j.topic, j.partition)
	if err != nil {
		return next, err
	}
	req := &sarama.FetchRequest{Version: 12, MinBytes: 1, MaxWaitTime: 200, MaxBytes: 4 << 20,
		Isolation: iso, SessionID: 0, SessionEpoch: -1}
	req.AddBlock(j.topic, j.partition, next, 1<<20, -1)
	resp, err := b.Fetch(req)
	if err != nil {
		return next, err
	}
	blk := resp.GetBlock(j.topic, j.partition)
	if blk == nil {
		return next, sarama.ErrIncompleteResponse
	}
	if blk.Err != sarama.ErrNoError {
		return next, blk.Err
	}
	// Aborted transactions in this range, by first offset: a producer's batches from its
	// first offset on are aborted until its abort marker (as the Java consumer reads them).
	aborted := slices.Clone(blk.AbortedTransactions)
	sort.Slice(aborted, func(a, c int) bool { return aborted[a].FirstOffset < aborted[c].FirstOffset })
	abortedPIDs := map[int64]bool{}
	for _, recs := range blk.RecordsSet {
		batch := recs.RecordBatch
		if batch == nil {
			if recs.MsgSet != nil {
				return next, errors.New("legacy message set in a Kafka 4 log")
			}
			continue
		}
		if batch.PartialTrailingRecord {
			break // the rest of this batch comes with the next fetch
		}
		last := batch.LastOffset()
		if last < next {
			continue
		}
		for len(aborted) > 0 && aborted[0].FirstOffset <= last {
			abortedPIDs[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		switch {
		case batch.Control:
			if len(batch.Records) > 0 && controlType(batch.Records[0].Key) == 0 {
				delete(abortedPIDs, batch.ProducerID)
			}
		case iso == sarama.ReadCommitted && batch.IsTransactional && abortedPIDs[batch.ProducerID]:
			// An aborted transaction's batch: read_committed does not show it.
		default:
			for _, r := range batch.Records {
				off := batch.FirstOffset + r.OffsetDelta
				if off < next || off >= end {
					continue
				}
				rec := history.Record{Topic: j.topic, Partition: j.partition, Value: string(r.Value)}.At(off)
				if len(r.Key) > 0 {
					rec.Key = string(r.Key)
				}
				fr.Records = append(fr.Records, rec)
				if len(fr.Records) >= limit && off+1 < last+1 {
					return off + 1, nil
				}
			}
		}
		next = min(last+1, max(end, next))
		if next >= end || len(fr.Records) >= limit {
			break
		}
	}
	return next, nil
}

// controlType reads a control record's type from its key (version int16, type int16): 0 abort,
// 1 commit.
func controlType(key []byte) int16 {
	if len(key) < 4 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(key[2:4]))
}
