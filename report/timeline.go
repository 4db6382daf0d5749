package report

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/faultspan"
	"github.com/verity-kafka/verity/verify/results"
)

// Limits that keep a timeline's memory bounded whatever the history holds.
const (
	// MaxBuckets is the most time buckets a timeline keeps; a longer run gets wider buckets.
	MaxBuckets = 4096
	// MaxISRStates is the most leader/ISR changes kept per partition.
	MaxISRStates = 20000
	// MaxFaults is the most fault intervals kept.
	MaxFaults = 10000
)

// latency histogram: bin k holds latencies in [base^k, base^(k+1)) microseconds, k from 0,
// which covers 1 µs to about 6 minutes.
const (
	latBins = 256
	latBase = 1.08
)

// Bucket is one time slot of the run.
type Bucket struct {
	// Acked, Failed and Unknown count write completions (send, txn, rpw) by outcome.
	Acked, Failed, Unknown int64
	// Polls counts ok polls.
	Polls int64
	// MaxLatency is the largest latency of an acknowledged write, in nanoseconds;
	// MaxFailedLatency and MaxUnknownLatency those of writes that failed or went unanswered
	// (from invoke to their fail or info completion), 0 when none.
	MaxLatency                          int64
	MaxFailedLatency, MaxUnknownLatency int64
	// Errors counts the failed and unknown write completions by their error's class
	// (results.ErrorClass); nil when there were none.
	Errors map[string]int64
	lat    [latBins]uint32
	latN   int64
}

// Latency returns the q-quantile (0..1) of the acknowledged writes' latencies in the bucket, in
// nanoseconds (within 4 %), and false when there were none.
func (b *Bucket) Latency(q float64) (float64, bool) {
	if b.latN == 0 {
		return 0, false
	}
	rank := int64(math.Ceil(q * float64(b.latN)))
	rank = max(rank, 1)
	var seen int64
	for k, n := range b.lat {
		seen += int64(n)
		if seen >= rank {
			mid := math.Pow(latBase, float64(k)+0.5) * 1000 // µs -> ns
			return min(mid, float64(b.MaxLatency)), true
		}
	}
	return float64(b.MaxLatency), true
}

func (b *Bucket) addLatency(ns int64) {
	us := float64(ns) / 1000
	k := 0
	if us >= 1 {
		k = min(int(math.Log(us)/math.Log(latBase)), latBins-1)
	}
	b.lat[k]++
	b.latN++
	b.MaxLatency = max(b.MaxLatency, ns)
}

func (b *Bucket) addError(class string, n int64) {
	if b.Errors == nil {
		b.Errors = map[string]int64{}
	}
	b.Errors[class] += n
}

func (b *Bucket) merge(o *Bucket) {
	b.Acked += o.Acked
	b.Failed += o.Failed
	b.Unknown += o.Unknown
	b.Polls += o.Polls
	b.MaxLatency = max(b.MaxLatency, o.MaxLatency)
	b.MaxFailedLatency = max(b.MaxFailedLatency, o.MaxFailedLatency)
	b.MaxUnknownLatency = max(b.MaxUnknownLatency, o.MaxUnknownLatency)
	for k, n := range o.Errors {
		b.addError(k, n)
	}
	for k := range b.lat {
		b.lat[k] += o.lat[k]
	}
	b.latN += o.latN
}

// FaultInterval is one fault as the history shows it, from its injection to its heal.
type FaultInterval = faultspan.Interval

// ISRState is a partition's leader and ISR from one observation on, until the next.
type ISRState struct {
	T      int64 // ns since the run started
	Index  int64 // the observation's op index
	Leader int32 // -1: no leader
	ISR    []int
	MinISR int // 0: not known
}

// PartitionTrack is one partition's leader and ISR over the run.
type PartitionTrack struct {
	Topic     string
	Partition int32
	States    []ISRState
	// Dropped counts changes past MaxISRStates that were not kept.
	Dropped int
}

// Name is "topic-partition".
func (p *PartitionTrack) Name() string { return p.Topic + "-" + strconv.Itoa(int(p.Partition)) }

// Marker is a moment of the recovery: heal-all, and the cluster found healthy (or not).
type Marker = faultspan.Marker

// Timeline is what a history shows over time, in bounded memory.
type Timeline struct {
	// Path is the history file read, when ReadTimeline read one.
	Path   string
	Header history.Header
	// Bucket is the width of a bucket; Buckets[k] covers [k*Bucket, (k+1)*Bucket).
	Bucket     time.Duration
	Buckets    []Bucket
	Faults     []FaultInterval
	Partitions []*PartitionTrack // sorted by topic, partition
	Markers    []Marker
	// Ops counts events; End is the t of the last one.
	Ops int64
	End int64
	// Torn is the line number of a torn last line that was skipped, 0 if none.
	Torn int
	// Notes say what was left out to keep memory bounded, or could not be read.
	Notes []string
}

// Duration is the run's length as the history shows it.
func (tl *Timeline) Duration() time.Duration { return time.Duration(tl.End) }

// ReadTimeline streams the history at path into a Timeline with buckets of width bucket
// (default one second). It returns what it read so far along with an error from a malformed
// line, so that a report can still show a run whose history was cut short.
func ReadTimeline(ctx context.Context, path string, bucket time.Duration) (*Timeline, error) {
	return readTimeline(ctx, path, bucket, nil)
}

// readTimeline is ReadTimeline that also hands every op to also (when not nil), so that what
// else the report gathers from the history comes from the same pass.
func readTimeline(ctx context.Context, path string, bucket time.Duration, also func(*history.Op)) (*Timeline, error) {
	r, err := history.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the timeline: %w", err)
	}
	defer r.Close()
	tl, err := scanTimeline(ctx, r, bucket, also)
	tl.Path = path
	return tl, err
}

// ScanTimeline is ReadTimeline over an open reader.
func ScanTimeline(ctx context.Context, r *history.Reader, bucket time.Duration) (*Timeline, error) {
	return scanTimeline(ctx, r, bucket, nil)
}

func scanTimeline(ctx context.Context, r *history.Reader, bucket time.Duration, also func(*history.Op)) (*Timeline, error) {
	if bucket <= 0 {
		bucket = time.Second
	}
	s := newScanner(r.Header(), bucket)
	var op history.Op
	var err error
	for n := 0; ; n++ {
		if n%65536 == 0 && ctx.Err() != nil {
			err = fmt.Errorf("reading the timeline: %w", ctx.Err())
			break
		}
		if e := r.Next(&op); e != nil {
			if !errors.Is(e, io.EOF) {
				err = fmt.Errorf("reading the timeline: %w", e)
			}
			break
		}
		s.add(&op)
		if also != nil {
			also(&op)
		}
	}
	tl := s.finish()
	tl.Torn = r.Torn()
	return tl, err
}

// invoke is a client op waiting for its completion.
type invoke struct {
	t int64
	f string
}

type scanner struct {
	tl      *Timeline
	byIndex map[int64]invoke // client invokes in flight, by i
	lastInv map[int]int64    // a client process's last invoke, for completions without "of"
	faults  *faultspan.Tracker
	parts   map[string]*PartitionTrack
}

func newScanner(h history.Header, bucket time.Duration) *scanner {
	return &scanner{
		tl:      &Timeline{Header: h, Bucket: bucket},
		byIndex: map[int64]invoke{},
		lastInv: map[int]int64{},
		faults:  faultspan.NewTracker(MaxFaults),
		parts:   map[string]*PartitionTrack{},
	}
}

// bucket returns the bucket of time t, widening buckets when t is past the last one allowed.
func (s *scanner) bucket(t int64) *Bucket {
	tl := s.tl
	t = max(t, 0)
	k := t / int64(tl.Bucket)
	for k >= MaxBuckets {
		// Merge pairs: twice as wide, half as many.
		half := (len(tl.Buckets) + 1) / 2
		for i := range half {
			merged := tl.Buckets[2*i]
			if 2*i+1 < len(tl.Buckets) {
				merged.merge(&tl.Buckets[2*i+1])
			}
			tl.Buckets[i] = merged
		}
		clear(tl.Buckets[half:])
		tl.Buckets = tl.Buckets[:half]
		tl.Bucket *= 2
		k = t / int64(tl.Bucket)
	}
	for int64(len(tl.Buckets)) <= k {
		tl.Buckets = append(tl.Buckets, Bucket{})
	}
	return &tl.Buckets[k]
}

func isWrite(f string) bool { return f == history.FSend || f == history.FTxn || f == history.FRPW }

func (s *scanner) add(op *history.Op) {
	s.tl.Ops++
	s.tl.End = max(s.tl.End, op.Time)
	if op.Process.Nemesis || op.F == "isr" {
		if op.F == "isr" {
			s.isr(op)
			return
		}
		s.faults.Add(op)
		return
	}
	p := op.Process.ID
	if op.Type == history.Invoke {
		if isWrite(op.F) {
			s.byIndex[op.Index] = invoke{t: op.Time, f: op.F}
		}
		s.lastInv[p] = op.Index
		return
	}
	// A completion: find its invoke.
	idx, ok := int64(0), false
	if op.Of != nil {
		idx, ok = *op.Of, true
	} else if i, found := s.lastInv[p]; found {
		idx, ok = i, true
		delete(s.lastInv, p)
	}
	var inv invoke
	if ok {
		inv, ok = s.byIndex[idx]
		delete(s.byIndex, idx)
	}
	switch {
	case isWrite(op.F):
		b := s.bucket(op.Time)
		switch op.Type {
		case history.OK:
			b.Acked++
			if ok {
				b.addLatency(op.Time - inv.t)
			}
		case history.Fail:
			b.Failed++
			b.addError(results.ErrorClass(op.Error), 1)
			if ok {
				b.MaxFailedLatency = max(b.MaxFailedLatency, op.Time-inv.t)
			}
		case history.Info:
			b.Unknown++
			b.addError(results.ErrorClass(op.Error), 1)
			if ok {
				b.MaxUnknownLatency = max(b.MaxUnknownLatency, op.Time-inv.t)
			}
		}
	case op.F == history.FPoll && op.Type == history.OK:
		s.bucket(op.Time).Polls++
	}
}

func sortedInts(s []int) []int {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// isrEvent is a sampler observation (see the package comment).
type isrEvent struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Leader    *int32 `json:"leader"`
	ISR       []int  `json:"isr"`
	MinISR    *int   `json:"min_isr"`
}

func (s *scanner) isr(op *history.Op) {
	if op.Type == history.Fail || len(op.Value.Raw) == 0 {
		return
	}
	var ev isrEvent
	if err := json.Unmarshal(op.Value.Raw, &ev); err != nil || ev.Topic == "" {
		return
	}
	key := ev.Topic + "\x00" + strconv.Itoa(int(ev.Partition))
	tr := s.parts[key]
	if tr == nil {
		tr = &PartitionTrack{Topic: ev.Topic, Partition: ev.Partition}
		s.parts[key] = tr
	}
	st := ISRState{T: op.Time, Index: op.Index, Leader: -1, ISR: sortedInts(ev.ISR)}
	if ev.Leader != nil {
		st.Leader = *ev.Leader
	}
	if ev.MinISR != nil {
		st.MinISR = *ev.MinISR
	}
	if n := len(tr.States); n > 0 {
		last := tr.States[n-1]
		if last.Leader == st.Leader && last.MinISR == st.MinISR && slices.Equal(last.ISR, st.ISR) {
			return // the sampler repeats observations while the ISR is below min; one is enough
		}
	}
	if len(tr.States) >= MaxISRStates {
		tr.Dropped++
		return
	}
	tr.States = append(tr.States, st)
}

func (s *scanner) finish() *Timeline {
	tl := s.tl
	tl.Faults = s.faults.Intervals(tl.End)
	tl.Markers = s.faults.Markers()
	if n := s.faults.Dropped(); n > 0 {
		tl.Notes = append(tl.Notes, fmt.Sprintf("%d fault events past the first %d are not shown", n, MaxFaults))
	}
	for _, tr := range s.parts {
		tl.Partitions = append(tl.Partitions, tr)
		if tr.Dropped > 0 {
			tl.Notes = append(tl.Notes, fmt.Sprintf("%s: %d leader/ISR changes past the first %d are not shown", tr.Name(), tr.Dropped, MaxISRStates))
		}
	}
	slices.SortFunc(tl.Partitions, func(a, b *PartitionTrack) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	slices.Sort(tl.Notes)
	return tl
}
