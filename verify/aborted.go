package verify

import (
	"github.com/verity-kafka/verity/verify/guarantee"
)

// aborted-read: a read_committed reader (consumer, rpw input or final read) saw a record of a
// transaction that did not commit (completed fail, or an intended abort whatever its
// completion: ok, info or none, since an abort intent never sends a commit), or any reader saw
// the record of a plain send that completed fail — which by the history's contract definitely
// did not happen. A read_uncommitted consumer seeing an aborted transaction's record is what that
// isolation level promises: it is reported, and the guarantee table permits it.

func (c *Checker) checkAbortedRead() {
	for id := uint32(1); id < c.vals.len(); id++ {
		st := c.vals.at(id)
		switch st.kind() {
		case kindSend:
			if st.outcome() != outFail || st.flags&(fSeenAny|fFinalAny) == 0 {
				continue
			}
			reader, iso := st.readOrd, int8(isoRU)
			if st.rcOrd != none {
				reader, iso = st.rcOrd, isoRC
			} else if reader == none {
				reader = st.finalOrd
			}
			c.find(finding{a: guarantee.AbortedRead, v: id, tp: st.tp, off: st.off, tp2: st.tp, off2: -1,
				ops: [4]uint32{st.writeOrd, st.doneOrd, reader, none}, proc: -1, iso: iso})
		case kindTxn, kindRPW:
			// A read_committed reader decides; failing one, a read_uncommitted consumer (not a
			// final read: every aborted record is in the log it scans) makes a permitted finding.
			reader, iso := st.rcOrd, int8(isoRC)
			if reader == none { // every read_committed read sets rcOrd: this one was read_uncommitted
				reader, iso = st.readOrd, isoRU
			}
			if st.txn == none || reader == none {
				continue
			}
			t := &c.txns[st.txn]
			if !t.neverCommitted() {
				continue
			}
			c.find(finding{a: guarantee.AbortedRead, v: id, tp: st.tp, off: st.off, tp2: st.tp, off2: -1,
				ops: [4]uint32{t.invokeOrd, t.doneOrd, reader, none}, proc: -1, iso: iso, txn: st.txn})
		}
	}
}
