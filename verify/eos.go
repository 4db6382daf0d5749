package verify

import (
	"slices"

	"github.com/verity-kafka/verity/verify/guarantee"
)

// eos-missing and eos-duplicate: read-process-write. A committed rpw (ok, or info with its
// output visible as committed) processed its inputs; an input processed by two committed rpws
// is a duplicate; a committed input record (in the input partition's read_committed final
// log) that lies within the range the processors committed but that no committed rpw
// processed is missing, and so is the output of a committed rpw that the output partition's
// read_committed final log does not show. A record of a transaction that never committed is no
// input the processors owed, even where the read_committed log shows it: that is an
// aborted-read.

type eosState struct {
	inParts   map[uint32]struct{}
	committed []uint32 // txn indices of ok rpws
	uncertain []uint32 // txn indices of info rpws
}

func newEOSState() eosState { return eosState{inParts: map[uint32]struct{}{}} }

func (e *eosState) inputPartition(tp uint32) { e.inParts[tp] = struct{}{} }
func (e *eosState) commit(t uint32)          { e.committed = append(e.committed, t) }
func (e *eosState) unknown(t uint32)         { e.uncertain = append(e.uncertain, t) }

type eosUse struct {
	n             uint32
	first, second uint32 // txn indices
}

type eosBound struct{ lo, hi int64 }

func (c *Checker) checkEOS() {
	if len(c.eos.committed) == 0 && len(c.eos.uncertain) == 0 {
		return
	}
	views := c.txnViews()
	counted := slices.Clone(c.eos.committed)
	for _, t := range c.eos.uncertain {
		if views[t].visible > 0 || views[t].seenRC != 0 {
			counted = append(counted, t)
		}
	}
	slices.Sort(counted)
	uses := map[uint32]eosUse{}
	bounds := map[uint32]eosBound{}
	for _, ti := range counted {
		t := &c.txns[ti]
		for _, v := range c.reads[t.inStart : t.inStart+t.inLen] {
			u := uses[v]
			u.n++
			switch u.n {
			case 1:
				u.first = ti
			case 2:
				u.second = ti
			}
			uses[v] = u
			if st := c.vals.at(v); st.off >= 0 {
				b, ok := bounds[st.tp]
				if !ok {
					b = eosBound{st.off, st.off}
				}
				b.lo, b.hi = min(b.lo, st.off), max(b.hi, st.off)
				bounds[st.tp] = b
			}
		}
		if w := &views[ti]; t.committed() && w.hidden > 0 {
			in := uint32(0)
			if t.inLen > 0 {
				in = c.reads[t.inStart]
			}
			c.find(finding{a: guarantee.EOSMissing, v: in, v2: w.firstHide, tp: c.vals.at(w.firstHide).tp,
				off: c.vals.at(w.firstHide).off, off2: -1, ops: [4]uint32{t.invokeOrd, t.doneOrd, none, none},
				proc: t.proc, txn: ti, note: noteOutputMissing})
		}
	}
	dupes := make([]uint32, 0)
	for v, u := range uses {
		if u.n > 1 {
			dupes = append(dupes, v)
		}
	}
	slices.Sort(dupes)
	for _, v := range dupes {
		u, st := uses[v], c.vals.at(v)
		a, b := &c.txns[u.first], &c.txns[u.second]
		c.find(finding{a: guarantee.EOSDuplicate, v: v, tp: st.tp, off: st.off, off2: -1,
			ops: [4]uint32{a.invokeOrd, a.doneOrd, b.invokeOrd, b.doneOrd}, proc: b.proc, txn: u.second})
	}
	parts := make([]uint32, 0, len(bounds))
	for tp := range bounds {
		parts = append(parts, tp)
	}
	slices.Sort(parts)
	for _, tp := range parts {
		b, part := bounds[tp], c.parts.ps[tp]
		if !part.final[isoRC].done() {
			continue // reported as unknown by the verdict
		}
		part.log.each(b.lo, b.hi, func(o int64, s slot) bool {
			st := c.vals.at(s.val)
			if st.flags&fFinalRC == 0 || (st.txn != none && c.txns[st.txn].neverCommitted()) {
				return true
			}
			if _, done := uses[s.val]; done {
				return true
			}
			c.find(finding{a: guarantee.EOSMissing, v: s.val, tp: tp, off: o, off2: -1,
				ops: [4]uint32{st.writeOrd, st.finalOrd, none, none}, proc: -1, note: noteInputMissing})
			return true
		})
	}
}
