package verify

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/faultspan"
	"github.com/verity-kafka/verity/verify/results"
)

// Liveness (docs/liveness.md): per client and partition ("stream"), the stretches with work
// available and no progress ("stalls"), from which come each fault's recovery times, the clients
// stuck after the last heal, and the stated bounds' judgement. It follows the history in one pass
// beside the safety checks, with state per client and partition, not per op.

const (
	// MinStall is the shortest stretch without progress counted as a stall: a consumer polls
	// every few hundred ms, and a producer's first send waits about a second for metadata.
	MinStall = time.Second
	// StuckAfter is how long a client may go without progress after the last heal, while work
	// is available and its partition can serve, before it is reported stuck: well above the
	// delays clients show once a partition can serve again (docs/liveness.md), and no stored run
	// of the catalogue has a stuck client it does not explain.
	StuckAfter = 15 * time.Second
	// maxSeriesBuckets bounds the plots' buckets: the bucket doubles when a run is longer.
	maxSeriesBuckets = 600
	// maxSeries bounds the lines of each plot.
	maxSeries = 64
)

// liveUnit is one client whose progress is judged: a producer or processor process (its
// writes), a consumer group or a consumer outside any group, a processor group (its reads), a
// sink (its effects).
type liveUnit struct {
	name  string
	kind  results.ClientKind
	procs []int
	iso   int
	// byTP maps a partition id to the unit's stream on it, plus one (0: none).
	byTP     []int32
	topics   []string
	progress int64
	lastProg int64
	buckets  []int64 // progress events per series bucket
}

// liveStream is one unit's work on one partition.
type liveStream struct {
	unit   int32
	tp     uint32
	reader bool
	// A writer's work is sticky, as a partition's availability in the stats: from the first
	// invoke not followed by progress until progress, else until the last moment a write was
	// known pending.
	pending int32
	// waiting: work is available since `since`, shown by the op at workOrd.
	waiting  bool
	since    int64
	workOrd  uint32
	workV    uint32 // a reader's work: the value whose acknowledgement raised the partition's end
	until    int64
	lastOrd  uint32 // the last progress op
	openOrd  uint32 // a writer's invoke that opened the current wait
	next     int64  // a reader's next offset: one past the highest it read
	trunc    bool   // a reader whose partition was truncated: its next read sets next again
	hasStart bool
}

// liveTxn is a transaction open on a partition: read_committed readers cannot read past it.
type liveTxn struct {
	ord uint32
	hi  int64
}

// livePart is a partition's acknowledged end, the open transactions on it and its readers.
type livePart struct {
	hi      int64 // highest acknowledged offset, -1 none
	hiOrd   uint32
	hiV     uint32
	open    []liveTxn
	readers []int32
	avail   []availMark // the ISR watch's view, in time order
	nodes   []int       // replicas, as last observed
	// followed: the readers of its topic have a stream on it.
	followed bool
}

// stable is the highest offset read_committed readers can read.
func (p *livePart) stable() int64 {
	if len(p.open) > 0 {
		return min(p.hi, p.open[0].hi)
	}
	return p.hi
}

// availMark says from T on whether the partition could serve readers (leader known) and
// acks=all writers (ISR at least min ISR); known false: a fault touched it and no observation
// came since.
type availMark struct {
	t           int64
	read, write bool
	known       bool
	ord         uint32
}

// stallRec is one stall of one stream.
type stallRec struct {
	stream    int32
	from, to  int64
	workOrd   uint32
	lastOrd   uint32
	endOrd    uint32
	workV     uint32
	recovered bool
}

// unknownStep is a processor's read of tp in a transaction whose commit got no answer.
type unknownStep struct {
	unit     int32
	tp       uint32
	txn, out uint32 // the transaction and one value it wrote
	t        int64
	ord      uint32
}

type liveState struct {
	unknown []unknownStep
	units   []liveUnit
	byKey   map[string]int32
	streams []liveStream
	parts   []livePart
	procW   []int32 // by process id: its writer unit, plus one
	procR   []int32 // by process id: its reader unit, plus one
	stalls  []stallRec
	faults  *faultspan.Tracker
	observe bool // the history has ISR observations
	horizon int64
	ended   bool
	lastT   int64
	// The plots: gauges sampled at each bucket's end.
	bucket  int64
	nextB   int64
	unseen  [][]int64 // by partition id
	lag     [][]int64 // by unit
	nbucket int
}

func (l *liveState) init() {
	l.byKey = map[string]int32{}
	l.parts = []livePart{{hi: -1}}
	l.bucket = int64(time.Second)
	l.nextB = l.bucket
	l.faults = faultspan.NewTracker(0)
}

// clock takes the time of the next op; it reports whether liveness still follows the history.
func (l *liveState) clock(t int64) bool {
	if l.ended {
		return false
	}
	if t > l.lastT {
		l.lastT = t
	}
	for t >= l.nextB {
		l.sample()
	}
	return true
}

// end makes t the horizon: the workload phase ended.
func (l *liveState) end(t int64) {
	if !l.ended {
		l.ended, l.horizon = true, t
	}
}

func (l *liveState) part(tp uint32) *livePart {
	for int(tp) >= len(l.parts) {
		l.parts = append(l.parts, livePart{hi: -1})
	}
	return &l.parts[tp]
}

// unit returns the unit called key, making it with name and kind.
func (l *liveState) unit(key, name string, kind results.ClientKind) int32 {
	if u, ok := l.byKey[key]; ok {
		return u
	}
	l.units = append(l.units, liveUnit{name: name, kind: kind, lastProg: -1})
	u := int32(len(l.units) - 1)
	l.byKey[key] = u
	return u
}

func (l *liveState) addProc(u int32, p int) {
	if !slices.Contains(l.units[u].procs, p) {
		l.units[u].procs = append(l.units[u].procs, p)
	}
}

func grow(s *[]int32, id int) *int32 {
	for id >= len(*s) {
		*s = append(*s, 0)
	}
	return &(*s)[id]
}

// writer is process p's writer unit: a producer, or a processor once it is seen reading.
func (l *liveState) writer(p int) int32 {
	if p < 0 {
		return -1
	}
	w := grow(&l.procW, p)
	if *w == 0 {
		*w = l.unit(fmt.Sprintf("w%d", p), fmt.Sprintf("producer %d", p), results.KindProducer) + 1
		l.addProc(*w-1, p)
	}
	return *w - 1
}

// reader is the unit whose reads process p's reads are: its group's, else its own.
func (l *liveState) reader(p int, group string, kind results.ClientKind, iso int) int32 {
	if p < 0 {
		return -1
	}
	r := grow(&l.procR, p)
	if *r != 0 && (group == "" || l.byKey["g"+group] == *r-1) {
		u := *r - 1
		if kind == results.KindProcessor && l.units[u].kind == results.KindConsumer {
			l.units[u].kind = results.KindProcessor
			if group != "" {
				l.units[u].name = groupName(kind, group)
			}
		}
		return u
	}
	var u int32
	if group != "" {
		u = l.unit("g"+group, groupName(kind, group), kind)
	} else {
		u = l.unit(fmt.Sprintf("r%d", p), fmt.Sprintf("%s %d", kind, p), kind)
	}
	l.units[u].iso = iso
	l.addProc(u, p)
	*r = u + 1
	return u
}

// processor makes unit u a processor's.
func (l *liveState) processor(u int32) {
	un := &l.units[u]
	if un.kind == results.KindProducer {
		un.kind = results.KindProcessor
		un.name = strings.Replace(un.name, "producer", "processor", 1)
	}
}

func groupName(kind results.ClientKind, group string) string {
	if kind == results.KindProcessor {
		return "processors " + group
	}
	return "group " + group
}

// stream returns unit u's stream on tp, making it.
func (l *liveState) stream(u int32, tp uint32, reader bool) *liveStream {
	s := grow(&l.units[u].byTP, int(tp))
	if *s == 0 {
		l.streams = append(l.streams, liveStream{unit: u, tp: tp, reader: reader, next: 0, lastOrd: none, workOrd: none})
		*s = int32(len(l.streams))
		if reader {
			p := l.part(tp)
			p.readers = append(p.readers, *s-1)
		}
	}
	return &l.streams[*s-1]
}

// progress notes progress of stream s at t (op ord): a stall it ends is kept when long enough.
func (l *liveState) progress(s *liveStream, t int64, ord uint32) {
	if s.waiting {
		l.closeStall(s, t, ord, true)
	}
	s.lastOrd = ord
	u := &l.units[s.unit]
	u.progress++
	u.lastProg = t
	if n := l.nbucket; n < maxSeriesBuckets {
		for len(u.buckets) <= n {
			u.buckets = append(u.buckets, 0)
		}
		u.buckets[n]++
	}
}

func (l *liveState) closeStall(s *liveStream, t int64, ord uint32, recovered bool) {
	s.waiting = false
	if t-s.since < int64(MinStall) {
		return
	}
	l.stalls = append(l.stalls, stallRec{stream: int32(s.streamIndex(l)), from: s.since, to: t, workOrd: s.workOrd,
		lastOrd: s.lastOrd, endOrd: ord, workV: s.workV, recovered: recovered})
}

func (s *liveStream) streamIndex(l *liveState) int {
	return int(l.units[s.unit].byTP[s.tp] - 1)
}

// writeInvoke notes a write of process p to tp pending from t.
func (l *liveState) writeInvoke(p int, tp uint32, t int64, ord uint32) {
	s := l.stream(l.writer(p), tp, false)
	s.pending++
	if !s.waiting {
		s.waiting, s.since, s.workOrd, s.openOrd = true, t, ord, ord
	}
}

// txnEnded notes when the client was asked to end the transaction invoked at invOrd: until
// then the application held it open, and its writer waited on itself, not on Kafka.
func (l *liveState) txnEnded(p int, tp uint32, invOrd uint32, endT int64) {
	s := l.stream(l.writer(p), tp, false)
	if s.waiting && s.openOrd == invOrd && endT > s.since {
		s.since = endT
	}
}

// writeDone notes the completion of a write of p to tp: progress when done, else the write was
// known pending until t.
func (l *liveState) writeDone(p int, tp uint32, done bool, t int64, ord uint32) {
	s := l.stream(l.writer(p), tp, false)
	s.pending = max(s.pending-1, 0)
	if done {
		l.progress(s, t, ord)
		if s.pending > 0 {
			s.waiting, s.since, s.workOrd, s.openOrd = true, t, ord, none
		}
		return
	}
	s.until, s.workOrd = t, ord
}

// acked raises tp's acknowledged end to off, holding value v: readers behind it have work.
func (l *liveState) acked(tp uint32, off int64, v uint32, t int64, ord uint32) {
	p := l.part(tp)
	if off <= p.hi {
		return
	}
	p.hi, p.hiOrd, p.hiV = off, ord, v
	l.work(tp, t)
}

// work starts the stall clock of tp's readers that now have work.
func (l *liveState) work(tp uint32, t int64) {
	p := &l.parts[tp]
	for _, si := range p.readers {
		s := &l.streams[si]
		if s.waiting || s.trunc {
			continue
		}
		end := p.hi
		if l.units[s.unit].iso == isoRC {
			end = p.stable()
		}
		if end >= s.next {
			s.waiting, s.since, s.workOrd, s.workV = true, t, p.hiOrd, p.hiV
		}
	}
}

// openTxn and closeTxn keep the transactions open on tp, which hold read_committed readers.
func (l *liveState) openTxn(tp uint32, ord uint32) {
	p := l.part(tp)
	p.open = append(p.open, liveTxn{ord: ord, hi: p.hi})
}

func (l *liveState) closeTxn(tp uint32, invOrd uint32, t int64) {
	p := l.part(tp)
	i := slices.IndexFunc(p.open, func(x liveTxn) bool { return x.ord == invOrd })
	if i < 0 {
		return
	}
	p.open = slices.Delete(p.open, i, i+1)
	if i == 0 {
		l.work(tp, t)
	}
}

// readerOn makes reader unit u follow every partition of topic seen so far, and later ones.
func (l *liveState) readerOn(u int32, topic string, parts *partitions) {
	un := &l.units[u]
	if slices.Contains(un.topics, topic) {
		return
	}
	un.topics = append(un.topics, topic)
	for tp := 1; tp < len(parts.ps); tp++ {
		if ps := parts.ps[tp]; ps.topic == topic && ps.known() {
			l.stream(u, uint32(tp), true)
		}
	}
}

// newPartition makes the readers of tp's topic follow it.
func (l *liveState) newPartition(tp uint32, topic string) {
	for u := range l.units {
		if l.units[u].kind != results.KindProducer && slices.Contains(l.units[u].topics, topic) {
			l.stream(int32(u), tp, true)
		}
	}
}

// read notes that reader unit u read tp at off at t (op ord): progress.
func (l *liveState) read(u int32, tp uint32, off int64, t int64, ord uint32) {
	s := l.stream(u, tp, true)
	if s.trunc {
		s.trunc, s.next = false, off+1
	}
	l.progress(s, t, ord)
	if off+1 > s.next {
		s.next = off + 1
	}
	p := &l.parts[tp]
	end := p.hi
	if l.units[u].iso == isoRC {
		end = p.stable()
	}
	if end >= s.next {
		s.waiting, s.since, s.workOrd, s.workV = true, t, p.hiOrd, p.hiV
	}
}

// startAt starts reader unit u at tp's end (a group that begins where the log ends), unless
// it read tp already.
func (l *liveState) startAt(u int32, tp uint32) {
	s := l.stream(u, tp, true)
	if !s.hasStart && s.lastOrd == none {
		s.hasStart = true
		s.next = max(s.next, l.part(tp).hi+1)
	}
}

// truncated forgets tp's acknowledged end and its readers' positions: a disk or power loss, or
// a consumer's data-loss, may have cut the log below them.
func (l *liveState) truncated(tp uint32, t int64, ord uint32) {
	p := l.part(tp)
	p.hi = -1
	for _, si := range p.readers {
		s := &l.streams[si]
		if s.waiting {
			l.closeStall(s, t, ord, true)
		}
		s.trunc = true
	}
}

// isr notes an ISR observation of tp at t.
func (l *liveState) isr(tp uint32, leader int32, isr, minISR int, replicas []int, t int64, ord uint32) {
	l.observe = true
	p := l.part(tp)
	if len(replicas) > 0 {
		p.nodes = append(p.nodes[:0], replicas...)
	}
	p.avail = append(p.avail, availMark{t: t, read: leader >= 0, write: leader >= 0 && isr >= max(minISR, 1), known: true, ord: ord})
}

// nemesis takes a nemesis op: fault intervals, and the horizon at the first heal-all.
func (l *liveState) nemesis(op *history.Op, ord uint32) {
	l.faults.Add(op)
	if op.Type == history.Invoke && op.F == history.FHealAll {
		l.end(op.Time)
	}
}

// sample closes the plots' current bucket.
func (l *liveState) sample() {
	if l.nbucket >= maxSeriesBuckets {
		l.halve()
	}
	for tp := 1; tp < len(l.parts); tp++ {
		p := &l.parts[tp]
		if len(p.readers) == 0 || p.hi < 0 {
			continue
		}
		var seen int64
		for _, si := range p.readers {
			seen = max(seen, l.streams[si].next)
		}
		for len(l.unseen) <= tp {
			l.unseen = append(l.unseen, nil)
		}
		l.unseen[tp] = setAt(l.unseen[tp], l.nbucket, max(p.hi+1-seen, 0))
	}
	for u := range l.units {
		un := &l.units[u]
		if un.kind == results.KindProducer {
			continue
		}
		var lag int64
		for _, s := range un.byTP {
			if s == 0 || !l.streams[s-1].reader {
				continue
			}
			st := &l.streams[s-1]
			p := &l.parts[st.tp]
			end := p.hi
			if un.iso == isoRC {
				end = p.stable()
			}
			lag += max(end+1-st.next, 0)
		}
		for len(l.lag) <= u {
			l.lag = append(l.lag, nil)
		}
		l.lag[u] = setAt(l.lag[u], l.nbucket, lag)
	}
	l.nbucket++
	l.nextB += l.bucket
}

func setAt(s []int64, i int, v int64) []int64 {
	for len(s) <= i {
		s = append(s, 0)
	}
	s[i] = max(s[i], v)
	return s
}

// halve merges the buckets pairwise and doubles their width, to keep a long run's plots small.
func (l *liveState) halve() {
	merge := func(s []int64, sum bool) []int64 {
		out := s[:0]
		for i := 0; i < len(s); i += 2 {
			v := s[i]
			if i+1 < len(s) {
				if sum {
					v += s[i+1]
				} else {
					v = max(v, s[i+1])
				}
			}
			out = append(out, v)
		}
		return out
	}
	for i := range l.unseen {
		l.unseen[i] = merge(l.unseen[i], false)
	}
	for i := range l.lag {
		l.lag[i] = merge(l.lag[i], false)
	}
	for i := range l.units {
		l.units[i].buckets = merge(l.units[i].buckets, true)
	}
	l.nbucket = (l.nbucket + 1) / 2
	l.bucket *= 2
	l.nextB = int64(l.nbucket+1) * l.bucket
}

// closeAll ends the streams' open stalls at the horizon: not recovered.
func (l *liveState) closeAll() {
	if !l.ended {
		l.horizon, l.ended = l.lastT, true
	}
	for i := range l.streams {
		s := &l.streams[i]
		if !s.waiting {
			continue
		}
		end := l.horizon
		if !s.reader && s.pending == 0 {
			end = max(s.until, s.since) // no write was pending at the end: the work ended then
			l.closeStall(s, end, s.workOrd, true)
			continue
		}
		l.closeStall(s, end, none, false)
	}
}

// The checker's side: what each op means for liveness, from the values the safety checks
// already parsed.

// liveSend takes the completion of p's send to tp (a known partition) with outcome out.
func (c *Checker) liveSend(p *proc, pd *pending, tp uint32, out uint16, r *history.Record, v uint32, t int64, ord uint32) {
	if out == outOK && r != nil && r.Offset != nil && *r.Offset >= 0 {
		c.liveAcked(tp, *r.Offset, v, t, ord)
	}
	if pd == nil && out != outOK {
		return
	}
	c.live.writeDone(p.id, tp, out == outOK, t, ord)
}

// liveAcked raises tp's acknowledged end, making the readers of its topic follow it first.
func (c *Checker) liveAcked(tp uint32, off int64, v uint32, t int64, ord uint32) {
	lp := c.live.part(tp)
	if !lp.followed {
		lp.followed = true
		c.live.newPartition(tp, c.parts.ps[tp].topic)
	}
	c.live.acked(tp, off, v, t, ord)
}

// liveTxnReads takes what a committed transaction of p read: progress of its processor group.
func (c *Checker) liveTxnReads(p *proc, t *txn, op *history.Op, ord uint32) {
	l := &c.live
	l.processor(l.writer(p.id))
	group := ""
	if p.group > 0 {
		group = c.groups[p.group-1].name
	}
	u := l.reader(p.id, group, results.KindProcessor, int(t.readIso))
	var recs []history.Record
	switch {
	case op.Value.Txn != nil:
		recs = op.Value.Txn.Reads
	case op.Value.RPW != nil:
		recs = op.Value.RPW.Input
	}
	if len(recs) == 0 {
		// The reads came with the invoke alone: their values know where they were read.
		for _, v := range c.reads[t.inStart : t.inStart+t.inLen] {
			if st := c.vals.at(v); st.off >= 0 && c.parts.known(st.tp) {
				l.read(u, st.tp, st.off, op.Time, ord)
			}
		}
		return
	}
	// From the completion's records rather than the values' states, which the checks touched
	// long ago: reads mostly come grouped by partition, and the highest of a group is enough.
	var (
		tp  uint32
		off int64 = -1
	)
	for i := range recs {
		r := &recs[i]
		if r.Offset == nil || *r.Offset < 0 {
			continue
		}
		id := c.parts.id(r.Topic, r.Partition)
		if id != tp {
			if tp != 0 && c.parts.known(tp) {
				l.read(u, tp, off, op.Time, ord)
			}
			tp, off = id, *r.Offset
		} else if *r.Offset > off {
			off = *r.Offset
		}
	}
	if tp != 0 && c.parts.known(tp) {
		l.read(u, tp, off, op.Time, ord)
	}
}

// liveUnknownStep notes a processor's transaction whose commit got no answer: if the final
// reads show its output committed, it was progress on what it read (liveness_judge.go).
func (c *Checker) liveUnknownStep(p *proc, t *txn, tx, out uint32, at int64, ord uint32) {
	l := &c.live
	group := ""
	if p.group > 0 {
		group = c.groups[p.group-1].name
	}
	u := l.reader(p.id, group, results.KindProcessor, int(t.readIso))
	for _, v := range c.reads[t.inStart : t.inStart+t.inLen] {
		if st := c.vals.at(v); st.off >= 0 && c.parts.known(st.tp) {
			l.unknown = append(l.unknown, unknownStep{unit: u, tp: st.tp, txn: tx, out: out, t: at, ord: ord})
		}
	}
}

// liveMember takes a member's assign or subscribe: its reader follows the topics it names,
// from the log's end when its group starts there.
func (c *Checker) liveMember(p *proc, m *member) {
	if p.sink || len(m.Topics) == 0 {
		return
	}
	kind := results.KindConsumer
	if tx := c.cfg.ProducerOf(p.id).Transactional; p.txn || tx != nil && *tx {
		kind = results.KindProcessor
	}
	iso := isoOf(m.Isolation, isoOf(string(c.cfg.ReadIsolation()), isoRC))
	u := c.live.reader(p.id, m.Group, kind, iso)
	for _, topic := range m.Topics {
		c.live.readerOn(u, topic, &c.parts)
		if m.Reset != "latest" {
			continue
		}
		for tp := 1; tp < len(c.parts.ps); tp++ {
			if c.parts.ps[tp].topic == topic && c.parts.known(uint32(tp)) {
				c.live.startAt(u, uint32(tp))
			}
		}
	}
}

// liveSinks follows each sink of the header from the start, so that a sink stuck before its
// first effect is seen.
func (c *Checker) liveSinks() {
	for _, name := range slices.Sorted(maps.Keys(c.cfg.Sinks)) {
		s := c.cfg.Sinks[name]
		if s.Topic == "" {
			continue
		}
		u := c.live.unit("s"+name, "sink "+name, results.KindSink)
		c.live.units[u].iso = isoOf(string(c.cfg.ReadIsolation()), isoRC)
		for _, p := range s.Processes {
			c.live.addProc(u, p)
		}
		c.live.readerOn(u, s.Topic, &c.parts)
	}
}

// liveEffect takes a sink's effect, applied or absorbed: progress of the sink on its input.
func (c *Checker) liveEffect(ev sinkEffectValue, t int64, ord uint32) {
	if ev.Sink == "" || ev.Topic == "" {
		return
	}
	u := c.live.unit("s"+ev.Sink, "sink "+ev.Sink, results.KindSink)
	c.live.units[u].iso = isoOf(string(c.cfg.ReadIsolation()), isoRC)
	if in := c.cfg.Sinks[ev.Sink].Topic; in != "" {
		c.live.readerOn(u, in, &c.parts)
	}
	c.live.read(u, c.parts.id(ev.Topic, ev.Partition), ev.Offset, t, ord)
}
