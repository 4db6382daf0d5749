package verify

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/verity-kafka/verity/history"

	"github.com/verity-kafka/verity/verify/guarantee"
)

// nonmonotonic-poll and poll-skip: one consumer's positions in a partition must move forward,
// one known record at a time, between rebalances and seeks.
//
// A consumer's position is the offset of the last record its ok polls (and committed rpw
// inputs) returned from a partition. Any other op of the process (assign, subscribe, a noted
// rebalance or seek, a crash, a failed rpw) forgets its positions. Going back or staying is
// judged on offsets at once. Going forward by more than one offset is only a candidate: gaps
// are normal (transaction markers take offsets, read_committed hides aborted records), so the
// candidate is a skip only if the finished log knows a record in the gap that the consumer's
// isolation level shows — which can only be decided once every read and final read is in.

type skipCand struct {
	tp       uint32
	from, to int64 // the consumer read from, then to
	ords     [2]uint32
	proc     int32
	iso      int8
}

// advance moves p's position in tp to off, read by the op at ord.
func (c *Checker) advance(p *proc, tp uint32, off int64, ord uint32, iso int) {
	pp := p.at(tp, len(c.parts.ps))
	if pp.gen == p.gen {
		switch {
		case off <= pp.off:
			c.find(finding{a: guarantee.NonmonotonicPoll, tp: tp, off: pp.off, tp2: tp, off2: off,
				ops: [4]uint32{pp.ord, ord, none, none}, proc: int32(p.id), iso: int8(iso)})
		case off > pp.off+1:
			c.skips.push(skipCand{tp: tp, from: pp.off, to: off, ords: [2]uint32{pp.ord, ord},
				proc: int32(p.id), iso: int8(iso)})
		}
	}
	pp.off, pp.ord, pp.gen = off, ord, p.gen
}

// visible reports whether a reader at isolation iso must have seen value w had it read past
// its offset. Only records that some reader saw count: a record known from an acknowledgement
// alone may have been truncated away (that is lost-write's business, not a skip). A
// read_committed reader must never see a transaction that did not commit, even where another
// read_committed reader did (that is aborted-read's business).
func (c *Checker) visible(w uint32, iso int8) bool {
	st := c.vals.at(w)
	if iso == isoRC {
		switch st.kind() {
		case kindTxn, kindRPW:
			return st.flags&(fSeenRC|fFinalRC) != 0 && (st.txn == none || !c.txns[st.txn].neverCommitted())
		}
	}
	return st.flags&(fSeenAny|fFinalAny) != 0
}

// visibleIndex lists, per partition and isolation level, the offsets of the records visible
// to that level in ascending order, so that a candidate with a wide gap is a binary search. It
// is built only for the partitions and levels that have such candidates: most gaps are a
// transaction marker or two, looked at offset by offset.
type visibleIndex struct {
	offs  [2][]int64
	built [2]bool
}

// narrowGap bounds the gaps looked at offset by offset.
const narrowGap = 64

func (c *Checker) checkSkips() {
	idx := make(map[uint32]*visibleIndex)
	c.skips.each(func(sc *skipCand) {
		w, o, ok := c.firstVisibleBetween(idx, sc.tp, sc.from, sc.to, sc.iso)
		if !ok {
			return
		}
		// The evidence shows the skipped record: a consumer's read of it, else the final read's.
		shown := c.vals.at(w).readOrd
		if shown == none {
			shown = c.vals.at(w).finalOrd
		}
		c.find(finding{a: guarantee.PollSkip, v: w, tp: sc.tp, off: sc.from, tp2: sc.tp, off2: sc.to, skipped: o,
			ops: [4]uint32{sc.ords[0], sc.ords[1], shown, none}, proc: sc.proc, iso: sc.iso})
	})
	c.skips = list[skipCand]{}
}

// firstVisibleBetween returns the first record in (from, to) of tp that a reader at isolation
// iso should have read, once the log is finished. idx keeps, per partition, the visible offsets
// for wide gaps.
func (c *Checker) firstVisibleBetween(idx map[uint32]*visibleIndex, tp uint32, from, to int64, iso int8) (uint32, int64, bool) {
	part := c.parts.ps[tp]
	if to-from <= narrowGap {
		return c.firstVisibleIn(part, from, to, iso)
	}
	vi := idx[tp]
	if vi == nil {
		vi = &visibleIndex{}
		idx[tp] = vi
	}
	if !vi.built[iso] {
		vi.offs[iso], vi.built[iso] = c.visibleOffsets(part, iso), true
	}
	return firstVisible(part, vi.offs[iso], from, to)
}

// firstVisibleIn returns the first record in (from, to) that the candidate's reader should
// have read, looking at each offset.
func (c *Checker) firstVisibleIn(part *partition, from, to int64, iso int8) (uint32, int64, bool) {
	for o := from + 1; o < to; o++ {
		if s := part.log.get(o); s.val != 0 && c.visible(s.val, iso) {
			return s.val, o, true
		}
	}
	return 0, 0, false
}

func (c *Checker) visibleOffsets(part *partition, iso int8) []int64 {
	n := 0
	part.log.each(0, math.MaxInt64, func(o int64, s slot) bool {
		if c.visible(s.val, iso) {
			n++
		}
		return true
	})
	offs := make([]int64, 0, n)
	part.log.each(0, math.MaxInt64, func(o int64, s slot) bool {
		if c.visible(s.val, iso) {
			offs = append(offs, o)
		}
		return true
	})
	return offs
}

// firstVisible returns the first record in (from, to) that the candidate's reader should have
// read, given the offsets visible at its isolation level.
func firstVisible(part *partition, offs []int64, from, to int64) (uint32, int64, bool) {
	i, _ := slices.BinarySearch(offs, from+1)
	if i == len(offs) || offs[i] >= to {
		return 0, 0, false
	}
	return part.log.get(offs[i]).val, offs[i], true
}

// poll-unowned: a consumer returns records only of the partitions it owns. An assign op (a
// group's rebalance, or an assign-mode consumer's assignment) says which those are; a poll after
// it that returns a record of another partition, before the next assignment, read a partition
// the consumer no longer owned (or never did): its new owner may read the same records.

// ownership follows the partitions a process owns through its ok assign ops; a subscribe or a
// crash (a new instance, not yet assigned anything) makes them unknown.
func (c *Checker) ownership(p *proc, op *history.Op, ord uint32) {
	switch {
	case op.F == history.FSubscribe || isCrash(op.F):
		p.owned = nil
	case op.F == history.FAssign && op.Type == history.OK:
		var v struct {
			Partitions map[string][]int32 `json:"partitions"`
		}
		p.owned = nil
		if json.Unmarshal(op.Value.Raw, &v) != nil || v.Partitions == nil {
			return
		}
		p.owned, p.ownedOrd = map[uint32]bool{}, ord
		for t, ps := range v.Partitions {
			for _, n := range ps {
				p.owned[c.parts.id(t, n)] = true
			}
		}
	}
}

// unowned reports a record of partition tp, at offset off, that p's ok poll at ord returned,
// when its latest assignment did not give it tp and the poll's earlier records of tp were not
// reported already (seen, which it returns grown): one finding per poll and partition.
func (c *Checker) unowned(p *proc, tp uint32, off int64, ord uint32, seen []uint32) []uint32 {
	if p.owned == nil || p.owned[tp] || slices.Contains(seen, tp) {
		return seen
	}
	c.find(finding{a: guarantee.PollUnowned, tp: tp, off: off, ops: [4]uint32{p.ownedOrd, ord, none, none}, proc: int32(p.id)})
	return append(seen, tp)
}
