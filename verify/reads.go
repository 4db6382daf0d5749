package verify

import (
	"github.com/verity-kafka/verity/verify/guarantee"
)

// Reads a transaction's records and their writers cannot explain:
//
// future-read: a consumer's read (a poll, a transaction's read, an rpw's input) written before
// any op that wrote its value was invoked — it read a record that was not yet being written.
//
// phantom-read: a record some reader saw (a final read included) that no op of the history
// wrote, and no fault (stray-txn-produce) or outbox relay (a publish op) wrote either. Judged
// only in a Verity run's history (its header names a scenario), which records every writer; a
// history another tool wrote may leave writers out.
//
// precommitted-read: a transaction read a record it wrote itself. Its records are in its own
// open transaction until it commits, which read_committed hides, its own consumer included.
//
// uncommitted-read: a read that completed before the writing transaction's end
// was even asked for (the op's end_t): the reader went past the last stable offset. It differs
// from aborted-read, which is about the transaction's outcome (it did not commit) whenever the
// read came; here the transaction may well commit later, and the read was early.

// earlyRead is a read of a transactional record whose transaction had not completed when the
// read was written; it is an uncommitted-read if the read came before the transaction's end was
// asked for (at read_uncommitted, what that level permits).
type earlyRead struct {
	v   uint32
	ord uint32
	t   int64
	iso int8
}

func (c *Checker) checkReads() {
	phantoms := c.phantomsJudged()
	for id := uint32(1); id < c.vals.len(); id++ {
		st := c.vals.at(id)
		switch {
		case st.kind() == kindNone:
			if phantoms && st.flags&fElsewise == 0 && st.flags&(fSeenAny|fFinalAny) != 0 {
				reader := st.readOrd
				if reader == none {
					reader = st.finalOrd
				}
				c.find(finding{a: guarantee.PhantomRead, v: id, tp: st.tp, off: st.off, off2: -1,
					ops: [4]uint32{reader, none, none, none}, proc: -1, txn: none})
			}
		case st.readOrd != none && st.writeOrd != none && st.writeOrd > st.readOrd:
			c.find(finding{a: guarantee.FutureRead, v: id, tp: st.tp, off: st.off, off2: -1,
				ops: [4]uint32{st.readOrd, st.writeOrd, none, none}, proc: st.proc, txn: none})
		}
	}
	for ti := range c.txns {
		t := &c.txns[ti]
		for _, v := range c.reads[t.inStart : t.inStart+t.inLen] {
			if st := c.vals.at(v); st.txn == uint32(ti) && (st.kind() == kindTxn || st.kind() == kindRPW) {
				c.find(finding{a: guarantee.PrecommittedRead, v: v, tp: st.tp, off: st.off, off2: -1,
					ops: [4]uint32{t.invokeOrd, t.doneOrd, none, none}, proc: t.proc, iso: t.readIso, txn: uint32(ti)})
			}
		}
	}
	found := map[earlyKey]bool{}
	for _, e := range c.early {
		if found[earlyKey{e.v, e.iso}] {
			continue
		}
		st := c.vals.at(e.v)
		if st.txn == none || int(st.txn) >= len(c.txns) {
			continue
		}
		t := &c.txns[st.txn]
		if t.endT == 0 || e.t >= t.endT || t.neverCommitted() {
			continue // not known when its end was asked for, or asked before; an aborted one is an aborted-read
		}
		found[earlyKey{e.v, e.iso}] = true
		c.find(finding{a: guarantee.UncommittedRead, v: e.v, tp: st.tp, off: st.off, off2: -1,
			ops: [4]uint32{t.invokeOrd, e.ord, t.doneOrd, none}, proc: t.proc, iso: e.iso, txn: st.txn})
	}
}

// phantomsJudged: the history records every writer (it is a Verity run's).
func (c *Checker) phantomsJudged() bool { return c.cfg.Scenario != "" }

type earlyKey struct {
	v   uint32
	iso int8
}
