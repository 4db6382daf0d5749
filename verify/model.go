package verify

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/verity-kafka/verity/history"
)

// The checker streams a history once and keeps compact state per record value, per partition
// and per transaction — never the ops themselves — so that memory grows with the number of
// distinct records (tens of bytes each), not with the size of the file.
//
// Ops are named internally by their ordinal: their position among the event lines (uint32,
// which bounds a history at 4 billion ops). Findings carry ordinals and are turned back into
// the history's "i" only for the report (opIndex).

const none = ^uint32(0) // no op, no id

// Value flags.
const (
	// Outcome of the write (combined over every op that wrote the value: ok wins, then
	// unknown, then fail). For transactional records the transaction's outcome decides.
	outMask    = 0b11
	outPending = 0 // invoked, no completion yet (unknown)
	outOK      = 1
	outFail    = 2
	outInfo    = 3

	kindShift = 2
	kindMask  = 0b11 << kindShift
	kindNone  = 0 << kindShift // read, never written by an op in the history
	kindSend  = 1 << kindShift
	kindTxn   = 2 << kindShift
	kindRPW   = 3 << kindShift

	fResent   = 1 << 4  // written by more than one op
	fSeenRC   = 1 << 5  // read by a read_committed consumer (poll, rpw input)
	fSeenRU   = 1 << 6  // read by a read_uncommitted consumer
	fFinalRC  = 1 << 7  // in a read_committed final read
	fFinalRU  = 1 << 8  // in a read_uncommitted final read
	fDup      = 1 << 9  // a duplicate finding was made for it
	fLostObs  = 1 << 10 // a lost-observed finding was made for it
	fElsewise = 1 << 11 // written other than by a send, txn or rpw: a fault (stray-txn-produce) or a relay's publish
	fTxnOpen  = 1 << 12 // its transaction's op is invoked and not completed: a read of it now is early
	fSeenAny  = fSeenRC | fSeenRU
	fFinalAny = fFinalRC | fFinalRU
)

// value is the compact state of one record value.
type value struct {
	name     uint64 // numeric "P-N" packed as P<<32|N, or nameStr|index into names
	off      int64  // first offset reported for it (ack or read); -1 unknown
	writeOrd uint32 // invoke of the first op that wrote it
	doneOrd  uint32 // completion that decided its outcome (the ok one, if any)
	readOrd  uint32 // first consumer read (poll or rpw input)
	rcOrd    uint32 // first read_committed read (consumer or final)
	finalOrd uint32 // first final read showing it
	tp       uint32 // partition of off, or of the write while off is unknown; 0 unknown
	txn      uint32 // transaction (index into txns) for kindTxn/kindRPW
	proc     int32  // writer process
	seq      uint32 // position among the writer op's records
	flags    uint16
	// The padding makes a value one cache line exactly (the chunks are allocated aligned to
	// one): at 56 bytes, most values straddled two lines, and a read of one missed the cache
	// twice — once for its flags, once for its offset.
	_ [10]byte
}

const nameStr = 1 << 63

func (v *value) outcome() int   { return int(v.flags & outMask) }
func (v *value) kind() int      { return int(v.flags & kindMask) }
func (v *value) has(f int) bool { return int(v.flags)&f != 0 }

// values interns record values into dense ids (from 1). Values of the form the workloads
// write ("3-1742": process 3's 1742nd record) are looked up in a per-process array indexed by
// the sequence number — no hashing, 4 bytes per value — and any other value in a map. The
// states live in fixed-size chunks, so growing never copies them (and never needs twice the
// memory for a moment).
type values struct {
	byProc [][]uint32 // byProc[P][N] = id of "P-N", 0 if not seen
	nums   map[uint64]uint32
	strs   map[string]uint32
	names  []string
	chunks [][]value
	n      uint32 // ids handed out, plus one (id 0 is none)
}

const (
	chunkBits = 12
	chunkLen  = 1 << chunkBits
	// maxDenseProc bounds the per-process arrays; larger process numbers use the map.
	maxDenseProc = 1 << 16
)

func newValues() values {
	vs := values{nums: map[uint64]uint32{}, strs: map[string]uint32{}}
	vs.add(0) // id 0: none
	return vs
}

// at returns the state of value id (id < vs.len()).
func (vs *values) at(id uint32) *value { return &vs.chunks[id>>chunkBits][id&(chunkLen-1)] }

// len is one more than the largest id.
func (vs *values) len() uint32 { return vs.n }

// packName packs "P-N" (decimal, no sign, no leading zeros, P < 2^31, N < 2^32) into P<<32|N.
// Every record value a checker meets goes through it, so it reads s in one pass.
func packName(s string) (uint64, bool) {
	if len(s) < len("0-0") || len(s) > 21 { // at most 10 digits on either side
		return 0, false
	}
	var p, n uint64
	dash := 0
	for ; dash < len(s) && s[dash] != '-'; dash++ {
		d := s[dash] - '0'
		if d > 9 {
			return 0, false
		}
		p = p*10 + uint64(d) // more than 10 digits may wrap around: they are refused below
	}
	digits := len(s) - dash - 1 // of N
	if dash == 0 || dash > 10 || digits < 1 || digits > 10 || (dash > 1 && s[0] == '0') ||
		(digits > 1 && s[dash+1] == '0') || p >= 1<<31 {
		return 0, false
	}
	for _, c := range []byte(s[dash+1:]) {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + uint64(d)
	}
	if n >= 1<<32 {
		return 0, false
	}
	return p<<32 | n, true
}

// intern returns the id of name, adding it if new.
func (vs *values) intern(name string) uint32 {
	if k, ok := packName(name); ok {
		p, n := k>>32, k&(1<<32-1)
		if p < maxDenseProc {
			if int(p) >= len(vs.byProc) {
				vs.byProc = append(vs.byProc, make([][]uint32, int(p)+1-len(vs.byProc))...)
			}
			seqs := vs.byProc[p]
			if n < uint64(len(seqs)) {
				if id := seqs[n]; id != 0 {
					return id
				}
				id := vs.addDense(k)
				seqs[n] = id
				return id
			}
			// Grow while sequence numbers stay near the dense range; a wild one (a hostile
			// or corrupt history) goes to the map instead of allocating gigabytes.
			if n < 2*uint64(len(seqs))+chunkLen {
				if n < uint64(cap(seqs)) {
					seqs = seqs[:n+1]
				} else {
					grown := make([]uint32, n+1, max(n+1, 2*uint64(cap(seqs))))
					copy(grown, seqs)
					seqs = grown
				}
				vs.byProc[p] = seqs
				id := vs.addDense(k)
				seqs[n] = id
				return id
			}
		}
		if id, ok := vs.nums[k]; ok {
			return id
		}
		id := vs.add(k)
		vs.nums[k] = id
		return id
	}
	if id, ok := vs.strs[name]; ok {
		return id
	}
	// The reader may reuse the bytes behind name; keep a copy.
	owned := string([]byte(name))
	vs.names = append(vs.names, owned)
	id := vs.add(nameStr | uint64(len(vs.names)-1))
	vs.strs[owned] = id
	return id
}

// addDense gives "P-N" (packed as k) its id as it enters the per-process array. A value the
// array was too short for when first seen went to the map; it keeps the id it has there.
func (vs *values) addDense(k uint64) uint32 {
	if len(vs.nums) > 0 {
		if id, ok := vs.nums[k]; ok {
			delete(vs.nums, k)
			return id
		}
	}
	return vs.add(k)
}

func (vs *values) add(name uint64) uint32 {
	id := vs.n
	if id&(chunkLen-1) == 0 {
		vs.chunks = append(vs.chunks, make([]value, chunkLen))
	}
	vs.n++
	*vs.at(id) = value{name: name, off: -1, writeOrd: none, doneOrd: none, readOrd: none,
		rcOrd: none, finalOrd: none, txn: none}
	return id
}

func (vs *values) name(id uint32) string {
	if id == 0 || id >= vs.n {
		return ""
	}
	n := vs.at(id).name
	if n&nameStr != 0 {
		return vs.names[n&^nameStr]
	}
	return strconv.FormatUint(n>>32, 10) + "-" + strconv.FormatUint(n&(1<<32-1), 10)
}

// slot is one offset of a partition's inferred log: the first value reported there and the op
// that reported it.
type slot struct {
	val uint32
	ord uint32
}

// rng is a scanned offset range [from, end) and the final read that scanned it.
type rng struct {
	from, end int64
	ord       uint32
}

// finalCov is what the final reads of one isolation level covered in one partition.
type finalCov struct {
	// scans are the final reads as they came, sorted by from once merged; ranges joins the
	// touching ones, each naming the scan that reached its end. A finding cites the scan that
	// covered its offset (scanAt), not the first of a joined range.
	scans      []rng
	ranges     []rng
	incomplete bool   // a scan said so, failed, or never completed
	incOrd     uint32 // the op that made it incomplete
	records    int64
	merged     bool
}

// done reports whether any final read of this isolation level was made.
func (c *finalCov) done() bool { return len(c.scans) > 0 || c.incomplete }

// complete reports whether scans ran without fault over one contiguous range.
func (c *finalCov) complete() bool {
	if c.incomplete || len(c.scans) == 0 {
		return false
	}
	c.merge()
	return len(c.ranges) == 1
}

// add takes a final read's range.
func (c *finalCov) add(r rng) {
	c.scans = append(c.scans, r)
	c.merged = false
}

// merge sorts the scans and joins touching ones, so that coverage is a binary search.
func (c *finalCov) merge() {
	if c.merged {
		return
	}
	c.merged = true
	rs := c.scans
	for i := 1; i < len(rs); i++ { // insertion sort: scans come in order, so this is linear
		for j := i; j > 0 && rs[j].from < rs[j-1].from; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	out := c.ranges[:0]
	for _, r := range rs {
		if r.end < r.from {
			r.end = r.from
		}
		if n := len(out); n > 0 && r.from <= out[n-1].end {
			if r.end > out[n-1].end {
				out[n-1].end, out[n-1].ord = r.end, r.ord
			}
			continue
		}
		out = append(out, r)
	}
	c.ranges = out
}

// within returns the joined range covering offset o, if any, naming the scan that covered o.
func (c *finalCov) within(o int64) (rng, bool) {
	c.merge()
	lo, hi := 0, len(c.ranges)
	for lo < hi {
		m := (lo + hi) / 2
		if c.ranges[m].end <= o {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(c.ranges) && c.ranges[lo].from <= o {
		r := c.ranges[lo]
		r.ord = c.scanAt(o, r.ord)
		return r, true
	}
	return rng{}, false
}

// scanAt is the final read that covered offset o (merged scans), else def.
func (c *finalCov) scanAt(o int64, def uint32) uint32 {
	i, _ := slices.BinarySearchFunc(c.scans, o, func(r rng, o int64) int { return cmp.Compare(r.from, o+1) })
	for i--; i >= 0; i-- { // the last scan from at or below o; an earlier one may reach further
		if c.scans[i].end > o {
			return c.scans[i].ord
		}
	}
	return def
}

// first and end return the extent of the scans.
func (c *finalCov) first() int64 { c.merge(); return c.ranges[0].from }
func (c *finalCov) last() rng    { c.merge(); return c.ranges[len(c.ranges)-1] }

const (
	isoRU = 0
	isoRC = 1
)

// partition is one topic-partition's inferred log.
type partition struct {
	topic string
	part  int32
	log   offsetLog // the slots that ops reported, by offset
	// finalAt is the value a final read showed at an offset whose slot holds another (the
	// first reported there, a record a truncation replaced): what the log holds now.
	finalAt map[int64]uint32
	final   [2]finalCov // by isoRU, isoRC
	// needsFinal: the history wrote to or read from this partition, so a final read must
	// have covered it for the verdict to be pass or fail.
	needsFinal bool
	// committedTxn: a transaction or rpw wrote here, so a read_committed final read is needed
	// to judge visibility.
	committedTxn bool
}

func (p *partition) String() string { return history.PartitionName(p.topic, p.part) }

// known reports whether p is a partition, rather than the records of its topic whose partition
// the history does not know (history.NoPartition).
func (p *partition) known() bool { return p.part != history.NoPartition }

type tpKey struct {
	topic string
	part  int32
}

// partitions interns topic-partitions into ids (from 1).
type partitions struct {
	ids map[tpKey]uint32
	ps  []*partition
	// A cache in front of ids for the topic of the latest lookup: byPart[p] is the id of its
	// partition p, 0 when not cached. Records mostly name one topic, and its partitions in
	// turn (a poll's records, a transaction's), where hashing the key for the map would cost
	// more than all the rest of the lookup.
	topic  string
	byPart []uint32
}

func newPartitions() partitions {
	return partitions{ids: map[tpKey]uint32{}, ps: []*partition{nil}}
}

// known reports whether tp is a partition: not 0 (none) and not a topic's records whose
// partition is not known.
func (t *partitions) known(tp uint32) bool { return tp != 0 && t.ps[tp].known() }

// maxCachedPartition bounds the cache's array; higher partition numbers go to the map.
const maxCachedPartition = 1 << 12

func (t *partitions) id(topic string, part int32) uint32 {
	cacheable := part >= 0 && part < maxCachedPartition
	if cacheable && int(part) < len(t.byPart) && t.topic == topic {
		if id := t.byPart[part]; id != 0 {
			return id
		}
	}
	k := tpKey{topic, part}
	id, ok := t.ids[k]
	if !ok {
		owned := string([]byte(topic))
		k.topic = owned
		t.ps = append(t.ps, &partition{topic: owned, part: part})
		id = uint32(len(t.ps) - 1)
		t.ids[k] = id
	}
	if cacheable {
		if t.topic != topic {
			t.topic, t.byPart = t.ps[id].topic, t.byPart[:0]
		}
		if int(part) >= len(t.byPart) {
			t.byPart = append(t.byPart, make([]uint32, int(part)+1-len(t.byPart))...)
		}
		t.byPart[part] = id
	}
	return id
}

// txn is one transactional write (a txn or rpw op).
type txn struct {
	proc      int32
	id        uint32 // interned transactional.id
	invokeOrd uint32
	doneOrd   uint32
	outcome   uint8 // outPending, outOK (committed), outFail (aborted), outInfo
	abort     bool  // intent abort
	rpw       bool
	zombie    bool   // invoked after another instance took its transactional.id
	fenceOrd  uint32 // the op that showed the other instance
	inStart   uint32 // what it read (rpw inputs, txn reads): checker.reads[inStart:inStart+inLen]
	inLen     uint32
	readIso   int8  // the isolation of its reads
	endT      int64 // when the client was asked to end it (ns since the start); 0 unknown
}

func (t *txn) committed() bool { return t.outcome == outOK && !t.abort }

// neverCommitted reports whether the transaction certainly did not commit: it completed fail,
// or it meant to abort — an abort intent never sends a commit, so whatever its completion says
// (ok, info, or none at all), it cannot have committed.
func (t *txn) neverCommitted() bool { return t.outcome == outFail || t.abort }

// pollPos is a consumer's last position in one partition.
type pollPos struct {
	off  int64
	ord  uint32
	gen  uint32 // valid when equal to the process's gen
	rgen uint32 // the gen whose first read of the partition was taken as a resume (resume.go)
}

// proc is a client process.
type proc struct {
	id    int
	sync  *pending // its latest invoke, while not completed
	gen   uint32   // bumped on every rebalance, seek, assign, subscribe or crash
	pos   []pollPos
	txn   bool // wrote a txn or rpw: it has a transactional.id
	wrote bool // wrote a record (send, txn or rpw)
	// owned are the partitions its latest assign op (at ownedOrd) gave it; nil when not known
	// (before any, or since a subscribe or crash).
	owned    map[uint32]bool
	ownedOrd uint32

	// Where it resumes (resume.go): its group (index+1 into Checker.groups; 0 none), whether
	// it is a sink's (left out), the invokes of its latest op and the one before, and what
	// last reset its positions: the cause, its op, the earliest its client may have asked for
	// the committed offsets since, and where a data-loss moved a partition's position.
	group        uint32
	sink         bool
	inv, prevInv uint32
	cause        resumeCause
	causeOrd     uint32
	resetFrom    uint32
	seeks        map[uint32]int64
}

// at returns p's position in tp, growing its table to n partitions as needed.
func (p *proc) at(tp uint32, n int) *pollPos {
	if int(tp) >= len(p.pos) {
		grown := make([]pollPos, n+8)
		copy(grown, p.pos)
		p.pos = grown
	}
	return &p.pos[tp]
}

// pending is an invoked op waiting for its completion.
type pending struct {
	index    int64 // the history's i
	ord      uint32
	time     int64
	f        fkind
	proc     *proc
	vals     []uint32 // values it writes
	tp       uint32   // partition of a send, as invoked
	isrEpoch uint32   // ISR state of tp at invoke (see isr.go), 0 if not below min ISR
	txn      uint32
	iso      int // isolation of a final read, as invoked
}

// fkind is an op's f, as far as the checker distinguishes.
type fkind uint8

const (
	fOther fkind = iota
	fSend
	fTxn
	fPoll
	fFinal
	fRPW
	fISR
)

func kindOf(f string) fkind {
	switch f {
	case "send":
		return fSend
	case "txn":
		return fTxn
	case "poll":
		return fPoll
	case "final-read":
		return fFinal
	case "rpw":
		return fRPW
	case "isr":
		return fISR
	}
	return fOther
}

// list is an append-only list kept in fixed-size chunks, so that growing never copies (nor
// needs twice the memory for a moment).
type list[T any] struct {
	chunks [][]T
	n      int
}

const listChunk = 1 << 12

func (l *list[T]) push(v T) {
	if l.n%listChunk == 0 {
		l.chunks = append(l.chunks, make([]T, 0, listChunk))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, v)
	l.n++
}

// at returns element i (i < len).
func (l *list[T]) at(i int) *T { return &l.chunks[i/listChunk][i%listChunk] }

// len is the number of elements.
func (l *list[T]) len() int { return l.n }

// each calls f on every element in order.
func (l *list[T]) each(f func(*T)) {
	for _, c := range l.chunks {
		for i := range c {
			f(&c[i])
		}
	}
}

// touch notes that the history wrote to or read from p, so a final read must cover it; a
// partition not known is no partition a final read could cover.
func (p *partition) touch() {
	if p.known() {
		p.needsFinal = true
	}
}
