package verify

import (
	"cmp"
	"encoding/json"
	"slices"
	"sync"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// partial-transaction: a transaction's records split between visible and invisible in the
// read_committed final log (part of a committed transaction missing, or part of an aborted or
// unknown one showing). zombie-write: a transaction an instance began after another instance
// had taken its transactional.id (and so fenced it) became visible as committed.
//
// An instance takes a transactional.id with its first op that names it (initTransactions comes
// before that op); a client that crashed comes back as a new instance. Only transactions the
// fenced instance began after that first op are judged, since one already under way may have
// committed before the new instance initialised.

// txnView is how much of one transaction the read_committed view shows.
type txnView struct {
	visible, hidden     uint32
	firstVis, firstHide uint32 // values
	seenRC              uint32 // a record a read_committed reader saw
}

// txnViews computes each transaction's view once; the EOS checker uses it too. A record that
// the read_committed scan did not reach (beyond its end, the LSO) is hidden only if the
// read_uncommitted log lacks it too; otherwise its visibility is unknown, and records of
// committed transactions in that state are counted by partition for the verdict (unjudgedRC).
func (c *Checker) txnViews() []txnView {
	if c.views != nil || len(c.txns) == 0 {
		return c.views
	}
	views := make([]txnView, len(c.txns))
	var maybe []uint32 // unreached records of transactions whose outcome is unknown
	for id := uint32(1); id < c.vals.len(); id++ {
		st := c.vals.at(id)
		if k := st.kind(); (k != kindTxn && k != kindRPW) || st.txn == none || st.tp == 0 {
			continue
		}
		w := &views[st.txn]
		if st.flags&fSeenRC != 0 && w.seenRC == 0 {
			w.seenRC = id
		}
		if st.flags&fFinalRC != 0 {
			w.visible++
			if w.firstVis == 0 {
				w.firstVis = id
			}
			continue
		}
		rc := &c.parts.ps[st.tp].final[isoRC]
		if !rc.done() {
			continue // the verdict names partitions with no read_committed final read
		}
		covered := false
		if st.off >= 0 {
			_, covered = rc.covers(st.off, false)
		}
		if !covered {
			_, covered = c.absentFromRU(st)
		}
		if covered {
			w.hidden++
			if w.firstHide == 0 {
				w.firstHide = id
			}
			continue
		}
		switch t := &c.txns[st.txn]; {
		case t.committed():
			c.unjudgedRC(st.tp)
		case !t.neverCommitted():
			maybe = append(maybe, id)
		}
	}
	// A transaction of unknown outcome that shows anywhere committed.
	for _, id := range maybe {
		if st := c.vals.at(id); views[st.txn].visible > 0 {
			c.unjudgedRC(st.tp)
		}
	}
	c.views = views
	return views
}

// unjudgedRC counts a committed record of tp whose read_committed visibility no final read
// could show.
func (c *Checker) unjudgedRC(tp uint32) {
	if c.unjudged == nil {
		c.unjudged = map[uint32]int{}
	}
	c.unjudged[tp]++
}

func (c *Checker) checkTransactions() {
	views := c.txnViews()
	for i := range c.txns {
		t, w := &c.txns[i], &views[i]
		if w.visible > 0 && w.hidden > 0 {
			c.find(finding{a: guarantee.PartialTransaction, v: w.firstHide, v2: w.firstVis,
				tp: c.vals.at(w.firstHide).tp, off: c.vals.at(w.firstHide).off, off2: -1,
				ops: [4]uint32{t.invokeOrd, t.doneOrd, c.vals.at(w.firstVis).finalOrd, none}, proc: t.proc, txn: uint32(i)})
		}
		if !t.zombie {
			continue
		}
		shown, reader := w.firstVis, none
		if shown != 0 {
			reader = c.vals.at(shown).finalOrd
		} else if w.seenRC != 0 {
			shown, reader = w.seenRC, c.vals.at(w.seenRC).rcOrd
		}
		if shown == 0 {
			continue
		}
		c.find(finding{a: guarantee.ZombieWrite, v: shown, tp: c.vals.at(shown).tp, off: c.vals.at(shown).off, off2: -1,
			ops: [4]uint32{t.fenceOrd, t.invokeOrd, t.doneOrd, reader}, proc: t.proc, txn: uint32(i)})
	}
}

// merged-transaction: two transactions of one transactional.id that follow each other in a
// partition both wrote (the id's transactions in between, if any, did not write it), the first
// ended (its client reported an outcome) before the second began, with no offset left between
// them there. A transaction ends with a marker (a control record) in every partition it wrote,
// and the coordinator answers CONCURRENT_TRANSACTIONS to the id's next transaction until those
// markers are written; the transactions in between wait the same way, so the first one's marker
// must sit below the second one's records in every partition the first wrote; an offset that
// holds no record at all is where it is. Without one, the two ended as one: the first's outcome
// was decided by the second's end, after its client had been told it was over.
//
// Only offsets some op reported a record at count as filled, so a gap the history cannot
// explain (a record nobody acknowledged or read) is taken for a marker: the rule can miss a
// merge, never invent one.

// mergedSearch is the search for merged transactions. It needs no finding made before it, and
// reads only what no check changes once the history is in (the transactions, the partitions'
// logs, and a snapshot of the values' offsets): it runs on a goroutine of its own from the
// start of finish (startMerged), and checkMergedTransactions reports what it found at its
// place among the checks.
type mergedSearch struct {
	wg    sync.WaitGroup
	found []finding
}

// startMerged starts the search on the snapshot recs (txnRecords), with two transactions or
// more.
func (c *Checker) startMerged(recs *txnRecords) *mergedSearch {
	ms := &mergedSearch{}
	ms.wg.Go(func() { ms.found = c.mergedTransactions(txnSpans(len(c.txns), recs.spans)) })
	return ms
}

// checkMergedTransactions reports what the search that startMerged started found.
func (c *Checker) checkMergedTransactions(ms *mergedSearch) {
	if ms == nil {
		return
	}
	ms.wg.Wait()
	for _, f := range ms.found {
		c.find(f)
	}
}

// mergedTransactions returns the findings of merged-transaction, in the order the checker
// reports them.
func (c *Checker) mergedTransactions(spans [][]txnSpan) (found []finding) {
	type idPart struct{ id, tp uint32 }
	last := map[idPart]int{} // the id's latest transaction so far that wrote the partition
	for j := range c.txns {
		t2 := &c.txns[j]
		for _, s2 := range spans[j] {
			key := idPart{t2.id, s2.tp}
			i, ok := last[key]
			last[key] = j
			if !ok {
				continue
			}
			t1 := &c.txns[i]
			if t1.doneOrd == none || t1.doneOrd > t2.invokeOrd {
				continue // not ended before the next began: a zombie's, or never completed
			}
			s1 := spans[i][slices.IndexFunc(spans[i], func(s txnSpan) bool { return s.tp == s2.tp })]
			if s2.lo <= s1.hi || !c.parts.ps[s1.tp].log.filled(s1.hi+1, s2.lo-1) {
				continue
			}
			found = append(found, finding{a: guarantee.MergedTransaction, v: s1.vhi, v2: s2.vlo, tp: s1.tp, off: s1.hi, tp2: s1.tp, off2: s2.lo,
				ops: [4]uint32{t1.invokeOrd, t1.doneOrd, t2.invokeOrd, t2.doneOrd}, proc: t1.proc, txn: uint32(i)})
		}
	}
	return found
}

// txnSpan is where one transaction's records lie in one partition: its lowest and highest
// offsets and the values there.
type txnSpan struct {
	tp       uint32
	lo, hi   int64
	vlo, vhi uint32
}

// txnSpans returns each of the n transactions' spans over the records at (txnRecords' spans),
// by partition in increasing order.
func txnSpans(n int, at []logAt) [][]txnSpan {
	spans := make([][]txnSpan, n)
	for _, a := range at {
		ss := spans[a.txn]
		k := slices.IndexFunc(ss, func(s txnSpan) bool { return s.tp == a.tp })
		if k < 0 {
			spans[a.txn] = append(ss, txnSpan{tp: a.tp, lo: a.off, hi: a.off, vlo: a.v, vhi: a.v})
			continue
		}
		s := &ss[k]
		if a.off < s.lo {
			s.lo, s.vlo = a.off, a.v
		}
		if a.off > s.hi {
			s.hi, s.vhi = a.off, a.v
		}
	}
	for _, ss := range spans {
		slices.SortFunc(ss, func(a, b txnSpan) int { return cmp.Compare(a.tp, b.tp) })
	}
	return spans
}

// hanging-transaction: a transactional record written outside any transaction its coordinator
// knows (a stray-txn-produce event that succeeded) that no marker ever ended: the
// read_uncommitted final read went past it, the read_committed one stopped at or below it
// (the scans wait for the last stable offset to reach the high watermark first).

// stray is a transactional record a nemesis event wrote outside any transaction.
type stray struct {
	tp  uint32
	off int64
	ord uint32
}

// observeStray takes a stray-txn-produce event: every event names the record the fault writes
// (so that reading it is no phantom-read, even when the fault's answer was lost); an ok
// completion with its offset is what hanging-transaction judges.
func (c *Checker) observeStray(op *history.Op, ord uint32) {
	var v struct {
		Records []history.Record `json:"records"`
	}
	if len(op.Value.Raw) == 0 || json.Unmarshal(op.Value.Raw, &v) != nil {
		return
	}
	for _, r := range v.Records {
		c.vals.at(c.vals.intern(r.Value)).flags |= fElsewise
		if op.Type == history.OK && r.Offset != nil && *r.Offset >= 0 {
			c.strays = append(c.strays, stray{tp: c.parts.id(r.Topic, r.Partition), off: *r.Offset, ord: ord})
		}
	}
}

func (c *Checker) checkHangingTransactions() {
	for _, s := range c.strays {
		p := c.parts.ps[s.tp]
		ru, rc := &p.final[isoRU], &p.final[isoRC]
		if !ru.complete() || !rc.done() || rc.incomplete {
			continue
		}
		if _, past := ru.within(s.off); !past {
			continue
		}
		if _, passed := rc.within(s.off); passed {
			continue
		}
		last := rc.last()
		if last.end > s.off {
			continue
		}
		c.find(finding{a: guarantee.HangingTransaction, tp: s.tp, off: s.off, tp2: s.tp, off2: last.end,
			ops: [4]uint32{s.ord, last.ord, none, none}, proc: -1})
	}
}
