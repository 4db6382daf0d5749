package verify

import (
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
	if int(tp) >= len(p.pos) {
		grown := make([]pollPos, len(c.parts.ps)+8)
		copy(grown, p.pos)
		p.pos = grown
	}
	pp := &p.pos[tp]
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
	*pp = pollPos{off: off, ord: ord, gen: p.gen}
}

// visible reports whether a reader at isolation iso must have seen value w had it read past
// its offset. Only records that some reader saw count: a record known from an acknowledgement
// alone may have been truncated away (that is lost-write's business, not a skip).
func (c *Checker) visible(w uint32, iso int8) bool {
	st := c.vals.at(w)
	if iso == isoRC {
		switch st.kind() {
		case kindTxn, kindRPW:
			return st.flags&(fSeenRC|fFinalRC) != 0
		}
	}
	return st.flags&(fSeenAny|fFinalAny) != 0
}

// visibleIndex counts, per partition, the records visible to each isolation level below each
// offset, so that each skip candidate is answered in constant time.
type visibleIndex struct {
	pre [2][]uint32 // pre[iso][o] = visible records at offsets < o
}

func (c *Checker) checkSkips() {
	idx := make(map[uint32]*visibleIndex)
	c.skips.each(func(sc *skipCand) {
		part := c.parts.ps[sc.tp]
		vi := idx[sc.tp]
		if vi == nil {
			vi = c.buildVisible(part)
			idx[sc.tp] = vi
		}
		w, o, ok := c.firstVisible(part, vi, sc)
		if !ok {
			return
		}
		c.find(finding{a: guarantee.PollSkip, v: w, tp: sc.tp, off: sc.from, tp2: sc.tp, off2: sc.to, skipped: o,
			ops: [4]uint32{sc.ords[0], sc.ords[1], c.vals.at(w).readOrd, none}, proc: sc.proc, iso: sc.iso})
	})
	c.skips = list[skipCand]{}
}

func (c *Checker) buildVisible(part *partition) *visibleIndex {
	vi := &visibleIndex{}
	for iso := range 2 {
		pre := make([]uint32, len(part.slots)+1)
		for o, s := range part.slots {
			pre[o+1] = pre[o]
			if s.val != 0 && c.visible(s.val, int8(iso)) {
				pre[o+1]++
			}
		}
		vi.pre[iso] = pre
	}
	return vi
}

// firstVisible returns the first record in (from, to) that the candidate's reader should have
// read.
func (c *Checker) firstVisible(part *partition, vi *visibleIndex, sc *skipCand) (uint32, int64, bool) {
	pre := vi.pre[sc.iso]
	dense := int64(len(part.slots))
	lo, hi := sc.from+1, min(sc.to, dense)
	if lo < hi && pre[hi] > pre[lo] {
		// Binary search for the first offset whose prefix count rises.
		a, b := lo, hi
		for a < b {
			m := a + (b-a)/2
			if pre[m+1] > pre[lo] {
				b = m
			} else {
				a = m + 1
			}
		}
		return part.slots[a].val, a, true
	}
	// Offsets beyond the dense range are rare (a corrupt or hostile history): look at each.
	best, bestOff, found := uint32(0), int64(0), false
	for o, s := range part.far {
		if o > sc.from && o < sc.to && c.visible(s.val, sc.iso) && (!found || o < bestOff) {
			best, bestOff, found = s.val, o, true
		}
	}
	return best, bestOff, found
}
