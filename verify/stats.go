package verify

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/results"
)

// Statistics of a run: ops by kind and outcome, latencies, unavailability windows and the
// final logs' sizes. All of it is kept in fixed-size or per-partition state.

type statsState struct {
	errs    map[errKey]*errCount
	byKind  [fISR + 1]results.Outcomes
	other   map[string]*results.Outcomes
	nem     map[string]int64
	lat     [fISR + 1]histogram
	avail   []availPart // by partition id
	windows []window
	lastW   int64 // time of the last write completion
	endT    int64 // time of the last op seen
}

type availPart struct {
	open   bool
	start  int64
	failed int64
	// lastAck is when the partition last acknowledged a write (0: not yet); since, when
	// waiting, is the first invoke since then of a write that has not been acknowledged, and
	// until the last moment a write was known pending since (a failed or unknown completion;
	// the history's end for a write never answered); stall is the partition's longest such
	// stretch, from since to the next acknowledgement or, with none, to until.
	lastAck  int64
	since    int64
	until    int64
	waiting  bool
	stall    [2]int64
	hasStall bool
}

// waitFrom notes a write to the partition pending from t on (its invoke, or the last
// acknowledgement if that came later).
func (a *availPart) waitFrom(t int64) {
	t = max(t, a.lastAck)
	if !a.waiting || t < a.since {
		a.since, a.waiting = t, true
	}
}

// endStall closes the stretch waiting since a.since at t, keeping it if it is the longest.
func (a *availPart) endStall(t int64) {
	if a.waiting && t > a.since && (!a.hasStall || t-a.since > a.stall[1]-a.stall[0]) {
		a.stall, a.hasStall = [2]int64{a.since, t}, true
	}
	a.waiting = false
}

type window struct {
	tp         uint32
	start, end int64
	failed     int64
}

// errKey is one kind of op, outcome and error class.
type errKey struct{ f, outcome, class string }

// errCount is one row of stats.errors, with its counts by partition id.
type errCount struct {
	results.ErrorCount
	byTP map[uint32]int64
}

func (s *statsState) init() {
	s.errs = map[errKey]*errCount{}
	s.other = map[string]*results.Outcomes{}
	s.nem = map[string]int64{}
}

// complete counts op, a completion of kind k whose invoke was pd (nil: none known); a send's
// completion is about partition tp (Checker.sendPartition).
func (s *statsState) complete(op *history.Op, k fkind, pd *pending, tp uint32) {
	s.endT = max(s.endT, op.Time)
	o := &s.byKind[k]
	if k == fOther {
		o = s.other[op.F]
		if o == nil {
			o = &results.Outcomes{}
			s.other[string([]byte(op.F))] = o
		}
	}
	switch op.Type {
	case history.OK:
		o.OK++
		if pd != nil {
			s.lat[k].add(op.Time - pd.time)
		}
	case history.Fail:
		o.Fail++
		s.failed(op, tp)
	case history.Info:
		o.Info++
		s.failed(op, tp)
	}
}

// failed counts a fail or info completion by its error's class, and a send's by its partition
// tp.
func (s *statsState) failed(op *history.Op, tp uint32) {
	k := errKey{f: op.F, outcome: string(op.Type), class: results.ErrorClass(op.Error)}
	t := round3(float64(op.Time) / 1e9)
	e := s.errs[k]
	if e == nil {
		k.f = string([]byte(k.f))
		e = &errCount{ErrorCount: results.ErrorCount{F: k.f, Outcome: k.outcome, Error: k.class, FirstS: t}}
		s.errs[k] = e
	}
	e.Count++
	e.LastS = t
	if tp != 0 {
		if e.byTP == nil {
			e.byTP = map[uint32]int64{}
		}
		e.byTP[tp]++
	}
}

// pendingOp counts an op invoked and never completed. Other ops (assign, crash, …) keep no
// name in their pending state and are not counted. known says whether a send's partition is
// known: only then does it count towards that partition's stall.
func (s *statsState) pendingOp(pd *pending, known bool) {
	if pd.f != fOther {
		s.byKind[pd.f].Pending++
	}
	// A write never answered waits to the end of the history.
	if pd.f == fSend && known && int(pd.tp) < len(s.avail) {
		a := &s.avail[pd.tp]
		a.waitFrom(pd.time)
		a.until = max(a.until, s.endT)
	}
}

func (s *statsState) nemesis(op *history.Op) {
	if op.Type == history.Invoke {
		return
	}
	if _, ok := s.nem[op.F]; !ok {
		s.nem[string([]byte(op.F))] = 0
	}
	s.nem[op.F]++
}

// write notes a write's outcome on partition tp at time t. A window opens when the invoke of a
// write that fails or goes unanswered, and closes when a later write to the partition is
// acknowledged.
func (s *statsState) write(tp uint32, t int64, pd *pending, out uint16) {
	if int(tp) >= len(s.avail) {
		grown := make([]availPart, int(tp)+16)
		copy(grown, s.avail)
		s.avail = grown
	}
	s.lastW = max(s.lastW, t)
	a := &s.avail[tp]
	if pd != nil {
		a.waitFrom(pd.time)
	}
	if out == outOK {
		a.endStall(t)
		a.lastAck = t
	} else {
		a.until = max(a.until, t)
	}
	switch out {
	case outOK:
		if a.open {
			s.windows = append(s.windows, window{tp: tp, start: a.start, end: max(t, a.start), failed: a.failed})
			a.open = false
		}
	case outFail, outInfo:
		if !a.open {
			a.open, a.start, a.failed = true, t, 0
			if pd != nil {
				a.start = pd.time
			}
		}
		a.failed++
	}
}

// closeWindows ends windows still open at the last write of the run.
func (s *statsState) closeWindows() {
	for tp := range s.avail {
		if a := &s.avail[tp]; a.open {
			s.windows = append(s.windows, window{tp: uint32(tp), start: a.start, end: max(s.lastW, a.start), failed: a.failed})
			a.open = false
		}
	}
}

// unavailableNs is the length of the union of all windows: time during which writes to at
// least one partition were failing.
func (s *statsState) unavailableNs() int64 {
	ws := slices.Clone(s.windows)
	slices.SortFunc(ws, func(a, b window) int { return cmp.Compare(a.start, b.start) })
	var total, curS, curE int64
	open := false
	for _, w := range ws {
		if !open || w.start > curE {
			if open {
				total += curE - curS
			}
			curS, curE, open = w.start, w.end, true
			continue
		}
		curE = max(curE, w.end)
	}
	if open {
		total += curE - curS
	}
	return total
}

// histogram is a log-linear latency histogram over microseconds: exact below 128 µs, then 64
// buckets per power of two (under 1.6 % error), in fixed memory whatever the run's length.
type histogram struct {
	counts []uint32
	n      int64
	max    int64 // ns
}

const subBits = 6

func bucketOf(us uint64) int {
	if us < 2<<subBits {
		return int(us)
	}
	exp := bits.Len64(us) - (subBits + 1)
	return 2<<subBits + (exp-1)<<subBits + int(us>>exp) - 1<<subBits
}

// bucketMid is a representative value of bucket i, in microseconds.
func bucketMid(i int) float64 {
	if i < 2<<subBits {
		return float64(i)
	}
	i -= 2 << subBits
	exp := i>>subBits + 1
	mant := uint64(i&(1<<subBits-1)) + 1<<subBits
	lo := mant << exp
	return float64(lo) + float64(uint64(1)<<exp)/2
}

func (h *histogram) add(ns int64) {
	if ns < 0 {
		ns = 0
	}
	if h.counts == nil {
		h.counts = make([]uint32, bucketOf(math.MaxInt64/1000)+1)
	}
	h.counts[bucketOf(uint64(ns/1000))]++
	h.n++
	h.max = max(h.max, ns)
}

func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	target := int64(math.Ceil(q * float64(h.n)))
	target = max(target, 1)
	var seen int64
	for i, c := range h.counts {
		seen += int64(c)
		if seen >= target {
			return min(bucketMid(i)/1000, float64(h.max)/1e6)
		}
	}
	return float64(h.max) / 1e6
}

func (h *histogram) percentiles() results.Percentiles {
	if h.n == 0 {
		return results.Percentiles{}
	}
	return results.Percentiles{P50: round3(h.quantile(0.5)), P99: round3(h.quantile(0.99)),
		P999: round3(h.quantile(0.999)), Max: round3(float64(h.max) / 1e6), Count: h.n}
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func (k fkind) String() string {
	switch k {
	case fSend:
		return "send"
	case fTxn:
		return "txn"
	case fPoll:
		return "poll"
	case fFinal:
		return "final-read"
	case fRPW:
		return "rpw"
	case fISR:
		return "isr"
	}
	return "other"
}

// build fills the results' statistics.
func (c *Checker) buildStats() results.Stats {
	s := &c.stats
	out := results.Stats{Ops: map[string]results.Outcomes{}, Nemesis: s.nem, LatencyByF: map[string]results.Percentiles{},
		Resumes: c.resumeCounts, Share: c.shareStats()}
	for k := fSend; k <= fISR; k++ {
		o := s.byKind[k]
		if o != (results.Outcomes{}) {
			out.Ops[k.String()] = o
		}
		if s.lat[k].n > 0 {
			out.LatencyByF[k.String()] = s.lat[k].percentiles()
		}
	}
	for f, o := range s.other {
		if _, clash := out.Ops[f]; !clash {
			out.Ops[f] = *o
		}
	}
	for _, e := range s.errs {
		row := e.ErrorCount
		for tp, n := range e.byTP {
			if int(tp) < len(c.parts.ps) {
				if row.ByPartition == nil {
					row.ByPartition = map[string]int64{}
				}
				row.ByPartition[c.parts.ps[tp].String()] = n
			}
		}
		out.Errors = append(out.Errors, row)
	}
	slices.SortFunc(out.Errors, func(a, b results.ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.F, b.F), cmp.Compare(a.Outcome, b.Outcome), cmp.Compare(a.Error, b.Error))
	})
	out.LatencyMs = s.lat[fSend].percentiles()
	if s.lat[fSend].n == 0 {
		out.LatencyMs = s.lat[fTxn].percentiles()
	}
	for id := uint32(1); id < c.vals.len(); id++ {
		st := c.vals.at(id)
		if st.kind() != kindSend {
			continue
		}
		if o := st.outcome(); o == outInfo || o == outPending {
			out.UnknownSends++
			if st.flags&(fSeenAny|fFinalAny) != 0 {
				out.UnknownLaterSeen++
			}
		}
	}
	s.closeWindows()
	out.UnavailableMs = round3(float64(s.unavailableNs()) / 1e6)
	slices.SortFunc(s.windows, func(a, b window) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.tp, b.tp)) })
	for i, w := range s.windows {
		if i == maxWindows {
			break
		}
		p := c.parts.ps[w.tp]
		out.Unavailability = append(out.Unavailability, results.Window{Topic: p.topic, Partition: p.part,
			StartMs: round3(float64(w.start) / 1e6), EndMs: round3(float64(w.end) / 1e6), Failed: w.failed})
	}
	for tp := range s.avail {
		a := &s.avail[tp]
		a.endStall(a.until)
		if !a.hasStall || tp == 0 || tp >= len(c.parts.ps) {
			continue
		}
		p := c.parts.ps[tp]
		st := results.Stall{Topic: p.topic, Partition: p.part, StartMs: round3(float64(a.stall[0]) / 1e6), EndMs: round3(float64(a.stall[1]) / 1e6)}
		out.Stalls = append(out.Stalls, st)
		out.LongestStallMs = max(out.LongestStallMs, round3(st.EndMs-st.StartMs))
	}
	slices.SortFunc(out.Stalls, func(a, b results.Stall) int {
		return cmp.Or(cmp.Compare(b.EndMs-b.StartMs, a.EndMs-a.StartMs), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, p := range c.parts.ps[1:] {
		ru, rc := &p.final[isoRU], &p.final[isoRC]
		if !ru.done() && !rc.done() {
			continue
		}
		ps := results.PartitionStats{Topic: p.topic, Partition: p.part, Committed: -1, Complete: true}
		main := ru
		if !ru.done() {
			main = rc
		}
		ps.Records = main.records
		if rc.done() {
			ps.Committed = rc.records
			ps.Complete = ps.Complete && rc.complete()
		}
		if ru.done() {
			ps.Complete = ps.Complete && ru.complete()
		}
		if len(main.scans) > 0 {
			ps.From, ps.End = main.first(), main.last().end
		}
		out.Partitions = append(out.Partitions, ps)
	}
	slices.SortFunc(out.Partitions, func(a, b results.PartitionStats) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// maxWindows bounds the windows listed in results.json; unavailable_ms counts them all.
const maxWindows = 200
