package verify

import (
	"github.com/verity-kafka/verity/verify/guarantee"
)

// lost-write: an acknowledged send, or a record of a committed transaction, absent from the
// final log of its partition. lost-observed: a record a consumer saw, absent from that log.
//
// "Absent" needs the final reads to have covered the record's offset: a read_uncommitted scan
// covers every offset from its start on (it ran to the high watermark, so an acknowledged
// offset past its end was truncated); a read_committed scan covers only its own range (it
// stops at the LSO, past which committed records may wait behind an open transaction). So a
// record beyond a read_committed scan's end is judged by the read_uncommitted scan, or not at
// all; and a record no op placed is proved absent by a read_committed scan only where no
// transaction wrote (there the LSO is the high watermark). A send whose outcome was unknown is
// never lost: it counts as written only once a read shows it.

// covers returns the final read covering offset o, if any. past says whether offsets beyond
// the end of the scans count as covered.
func (fc *finalCov) covers(o int64, past bool) (uint32, bool) {
	if len(fc.scans) == 0 {
		return none, false
	}
	if r, ok := fc.within(o); ok {
		return r.ord, true
	}
	if past && !fc.incomplete {
		if l := fc.last(); o >= l.end {
			return l.ord, true
		}
	}
	return none, false
}

// anyCovers is covers for a record whose offset is unknown: a complete scan of the partition.
// A read_committed scan is complete only up to the LSO; see absentFromFinal.
func (fc *finalCov) anyCovers() (uint32, bool) {
	if fc.complete() {
		return fc.last().ord, true
	}
	return none, false
}

// committedWrite reports whether v was acknowledged (ok send) or committed (ok transaction).
func (c *Checker) committedWrite(st *value) bool {
	switch st.kind() {
	case kindSend:
		return st.outcome() == outOK
	case kindTxn, kindRPW:
		return st.txn != none && c.txns[st.txn].committed()
	}
	return false
}

// absentFromFinal decides whether st is provably missing from its partition's final log, and
// names the final read that proves it. For transactional records the read_committed view
// decides where its scan reached, the read_uncommitted log beyond.
func (c *Checker) absentFromFinal(st *value) (uint32, bool) {
	if st.tp == 0 {
		return none, false
	}
	part := c.parts.ps[st.tp]
	ru, rc := &part.final[isoRU], &part.final[isoRC]
	if k := st.kind(); (k == kindTxn || k == kindRPW) && rc.done() {
		if st.flags&fFinalRC != 0 {
			return none, false
		}
		if st.off >= 0 {
			if ord, ok := rc.covers(st.off, false); ok {
				return ord, true
			}
		}
		return c.absentFromRU(st)
	}
	if st.flags&fFinalAny != 0 {
		return none, false
	}
	if st.off >= 0 {
		if ord, ok := ru.covers(st.off, true); ok {
			return ord, true
		}
		return rc.covers(st.off, false)
	}
	if ord, ok := ru.anyCovers(); ok {
		return ord, true
	}
	if part.committedTxn {
		return none, false // the read_committed scan may have stopped short of it
	}
	return rc.anyCovers()
}

// absentFromRU reports whether the read_uncommitted final log provably lacks st, and so every
// view of the log does.
func (c *Checker) absentFromRU(st *value) (uint32, bool) {
	ru := &c.parts.ps[st.tp].final[isoRU]
	if st.flags&fFinalRU != 0 {
		return none, false
	}
	if st.off >= 0 {
		return ru.covers(st.off, true)
	}
	return ru.anyCovers()
}

func (c *Checker) checkLostWrite() {
	for id := uint32(1); id < c.vals.len(); id++ {
		st := c.vals.at(id)
		if !c.committedWrite(st) {
			continue
		}
		ord, lost := c.absentFromFinal(st)
		if !lost {
			continue
		}
		done := st.doneOrd
		if k := st.kind(); k == kindTxn || k == kindRPW {
			done = c.txns[st.txn].doneOrd
		}
		c.find(finding{a: guarantee.LostWrite, v: id, tp: st.tp, off: st.off, tp2: st.tp, off2: -1,
			ops: [4]uint32{st.writeOrd, done, ord, none}, proc: -1})
	}
}

func (c *Checker) checkLostObserved() {
	for id := uint32(1); id < c.vals.len(); id++ {
		st := c.vals.at(id)
		if st.flags&fSeenAny == 0 || st.flags&(fLostObs|fFinalAny) != 0 || st.off < 0 || st.tp == 0 {
			continue
		}
		part := c.parts.ps[st.tp]
		ord, lost := part.final[isoRU].covers(st.off, true)
		if !lost {
			// A read_committed final read shows it only if a read_committed consumer saw it, or
			// it is not transactional (a read_uncommitted consumer may have seen an aborted one).
			if k := st.kind(); st.flags&fSeenRC != 0 || (k != kindTxn && k != kindRPW) {
				ord, lost = part.final[isoRC].covers(st.off, false)
			}
		}
		if !lost {
			continue
		}
		st.flags |= fLostObs
		c.find(finding{a: guarantee.LostObserved, v: id, tp: st.tp, off: st.off, tp2: st.tp, off2: -1,
			ops: [4]uint32{st.readOrd, ord, none, none}, proc: -1})
	}
}
