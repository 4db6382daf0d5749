package verify

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// Where an offset report came from: the writer's acknowledgement, a consumer, or a final read.
type source uint8

const (
	srcAck source = iota
	srcRead
	srcFinal
)

// write notes that the op at ord, by p, writes value v (record seq of the op).
func (c *Checker) write(v, ord uint32, p *proc, kind uint16, t, seq uint32) {
	p.wrote = true
	st := c.vals.at(v)
	if st.writeOrd == none {
		st.writeOrd, st.proc, st.txn, st.seq = ord, int32(p.id), t, seq
		st.flags = st.flags&^kindMask | kind
		return
	}
	if st.writeOrd == ord {
		return // the same op lists the value twice
	}
	st.flags |= fResent
	// A new attempt can succeed where an earlier one failed.
	if st.outcome() == outFail {
		st.flags = st.flags&^outMask | outPending
	}
	// A transaction retried with the same payload: the value's fate is the newest attempt's
	// unless an earlier one committed.
	if t != none && st.txn != none && int(st.txn) < len(c.txns) && !c.txns[st.txn].committed() {
		st.txn, st.writeOrd, st.proc, st.seq = t, ord, int32(p.id), seq
		st.flags = st.flags&^kindMask | kind
	}
}

// settle records the outcome of a plain send of v. Over several sends of one value (an
// application resend) an ok outcome wins, then an unknown one; fail stands only if every
// attempt failed.
func (c *Checker) settle(st *value, out uint16, ord uint32) {
	prev := st.outcome()
	switch {
	case prev == outOK:
	case out == outOK:
		st.flags = st.flags&^outMask | outOK
		st.doneOrd = ord
	case out == outInfo:
		st.flags = st.flags&^outMask | outInfo
		if st.doneOrd == none {
			st.doneOrd = ord
		}
	case out == outFail && prev == outPending:
		st.flags = st.flags&^outMask | outFail
		st.doneOrd = ord
	}
}

func (c *Checker) newTxn(p *proc, id string, ord uint32, abort, rpw bool) uint32 {
	p.txn = true
	tid := c.txnID(id, p, ord)
	t := txn{proc: int32(p.id), id: tid, invokeOrd: ord, doneOrd: none, abort: abort, rpw: rpw, fenceOrd: none}
	if !c.claim(p, tid, ord) {
		if o := c.txnOwner[tid]; o.proc != int32(p.id) {
			t.zombie, t.fenceOrd = true, o.since
		}
	}
	c.txns = append(c.txns, t)
	return uint32(len(c.txns) - 1)
}

// txnID interns a transactional.id.
func (c *Checker) txnID(id string, p *proc, ord uint32) uint32 {
	tid, ok := c.txnIDs[id]
	if !ok {
		tid = uint32(len(c.txnOwner))
		c.txnIDs[string([]byte(id))] = tid
		c.txnOwner = append(c.txnOwner, txnOwner{proc: int32(p.id), since: ord})
	}
	return tid
}

// claim notes p's use of transactional.id tid at ord. The first op of an instance with the id
// shows it has initialised it (initTransactions comes first) and so fenced whichever instance
// held it before; claim reports whether this was that first op.
func (c *Checker) claim(p *proc, tid, ord uint32) bool {
	use := txnUse{tid, int32(p.id)}
	if _, used := c.txnUsed[use]; used {
		return false
	}
	c.txnUsed[use] = struct{}{}
	c.txnOwner[tid] = txnOwner{proc: int32(p.id), since: ord}
	return true
}

// claimFromOp takes an explicit initialisation (an ok op of another f, such as "init", whose
// value names a "txn_id") as the moment p took that transactional.id.
func (c *Checker) claimFromOp(p *proc, op *history.Op, ord uint32) {
	if op.Type != history.OK || !bytes.Contains(op.Value.Raw, []byte(`"txn_id"`)) {
		return
	}
	var v struct {
		TxnID string `json:"txn_id"`
	}
	if json.Unmarshal(op.Value.Raw, &v) != nil || v.TxnID == "" {
		return
	}
	p.txn = true
	c.claim(p, c.txnID(v.TxnID, p, ord), ord)
}

// forgetTxnIDs: a crashed client comes back as a new instance, which initialises its
// transactional.id again.
func (c *Checker) forgetTxnIDs(p *proc) {
	for use := range c.txnUsed {
		if use.proc == int32(p.id) {
			delete(c.txnUsed, use)
		}
	}
}

func (c *Checker) writeTxnRecords(pd *pending, p *proc, recs []history.Record, ord uint32) {
	kind := uint16(kindTxn)
	if pd.f == fRPW {
		kind = kindRPW
	}
	ids := c.internAll(recs)
	c.txnWrites += len(recs)
	for i := range recs {
		r := &recs[i]
		v := ids[i]
		c.write(v, ord, p, kind, pd.txn, uint32(i))
		c.vals.at(v).flags |= fTxnOpen
		pd.vals = append(pd.vals, v)
		tp := c.parts.id(r.Topic, r.Partition)
		if st := c.vals.at(v); st.off < 0 {
			st.tp = tp
		}
		c.parts.ps[tp].committedTxn = true
		if c.liveOn && c.parts.known(tp) && !slices.ContainsFunc(recs[:i], func(o history.Record) bool { return o.Topic == r.Topic && o.Partition == r.Partition }) {
			c.live.writeInvoke(p.id, tp, c.now, ord)
			c.live.openTxn(tp, pd.ord)
		}
	}
}

// txnReads notes what the transaction pd read (an rpw's inputs, a txn's reads) at isolation
// iso; the reads happened before the op at ord was written.
func (c *Checker) txnReads(pd *pending, recs []history.Record, iso int, ord uint32) {
	t := &c.txns[pd.txn]
	t.inStart, t.readIso = uint32(len(c.reads)), int8(iso)
	ids := c.internAll(recs)
	for i := range recs {
		v := ids[i]
		tp, off := c.read(&recs[i], v, iso, ord)
		c.resumeAt(pd.proc, tp, off, v, iso, ord, true)
		c.reads = append(c.reads, v)
		if t.rpw {
			c.eos.inputPartition(tp)
		}
	}
	t.inLen = uint32(len(recs))
}

// readIsolation is the isolation of a transaction's reads: the op's own, else the header's.
func (c *Checker) readIsolation(own string) int {
	return isoOf(own, isoOf(string(c.cfg.ReadIsolation()), isoRC))
}

// internAll interns the values of recs, in order, and returns their ids (valid until the next
// call). It also touches each one's state: the states of a history's values take tens of
// megabytes, and the records of a read are mostly far apart in them, so each first touch is a
// cache miss. In this tight loop the processor overlaps those misses, where the checks that
// follow, one record at a time, would wait for each in turn.
func (c *Checker) internAll(recs []history.Record) []uint32 {
	ids := c.ids[:0]
	for i := range recs {
		ids = append(ids, c.vals.intern(recs[i].Value))
	}
	var flags uint16
	for _, v := range ids {
		flags |= c.vals.at(v).flags
	}
	c.ids, c.touched = ids, flags
	return ids
}

// read notes that a consumer at isolation iso read r, whose value is v, in the op at ord.
func (c *Checker) read(r *history.Record, v uint32, iso int, ord uint32) (tp uint32, off int64) {
	tp = c.parts.id(r.Topic, r.Partition)
	st := c.vals.at(v)
	if iso == isoRC {
		st.flags |= fSeenRC
		if st.rcOrd == none {
			st.rcOrd = ord
		}
	} else {
		st.flags |= fSeenRU
		c.sawRU = true
	}
	if st.flags&fTxnOpen != 0 {
		c.early = append(c.early, earlyRead{v: v, ord: ord, t: c.now, iso: int8(iso)})
	}
	if st.readOrd == none {
		st.readOrd = ord
	}
	c.parts.ps[tp].touch()
	off = -1
	if r.Offset != nil && *r.Offset >= 0 {
		off = *r.Offset
		c.place(tp, off, v, ord, srcRead)
	} else if st.off < 0 {
		st.tp = tp
	}
	return tp, off
}

// sendPartition is the partition a send's completion is about: the one it names, else its
// invoke's (a client may know the partition only once it has chosen one, or not at all when
// its error names none), else the topic's records of no known partition; 0 when neither
// carried a record.
func (c *Checker) sendPartition(pd *pending, r *history.Record) uint32 {
	switch {
	case r != nil && r.Partition != history.NoPartition:
		return c.parts.id(r.Topic, r.Partition)
	case pd != nil && pd.tp != 0:
		return pd.tp
	case r != nil:
		return c.parts.id(r.Topic, r.Partition)
	}
	return 0
}

// completeSend takes the completion of a send about partition tp (sendPartition).
func (c *Checker) completeSend(p *proc, pd *pending, op *history.Op, ord uint32, tp uint32) {
	r := op.Value.Send
	var v uint32
	switch {
	case pd != nil && len(pd.vals) > 0:
		v = pd.vals[0]
	case r != nil:
		// A completion without its invoke (a hand-made or cut history): it writes on its own.
		v = c.vals.intern(r.Value)
		c.write(v, ord, p, kindSend, none, 0)
	default:
		return
	}
	st := c.vals.at(v)
	out := outcomeOf(op.Type)
	if st.kind() == kindSend {
		c.settle(st, out, ord)
	}
	if tp == 0 {
		return
	}
	known := c.parts.known(tp)
	if out == outOK || out == outInfo {
		c.parts.ps[tp].touch()
	}
	if out == outOK && r != nil && r.Offset != nil && *r.Offset >= 0 && known {
		c.place(tp, *r.Offset, v, ord, srcAck)
	} else if st.off < 0 && (known || st.tp == 0) {
		st.tp = tp // the broker's partition, known now (or at least the topic)
	}
	if !known {
		// Availability and stalls are per partition: a write of no known partition tells
		// nothing of any one (the error counts still count it, under its topic).
		return
	}
	c.stats.write(tp, op.Time, pd, out)
	if c.liveOn {
		c.liveSend(p, pd, tp, out, r, v, op.Time, ord)
	}
	if out == outOK && pd != nil && pd.isrEpoch != 0 && pd.tp == tp {
		c.isr.acked(pd, tp, v, ord, op.Time)
	}
}

func (c *Checker) completeTxn(p *proc, pd *pending, k fkind, op *history.Op, ord uint32) {
	if pd == nil || pd.txn == none {
		// No invoke carried the transaction: take it from the completion.
		scratch := c.newPending()
		scratch.f, scratch.txn, scratch.ord, scratch.time, scratch.proc = k, none, ord, op.Time, p
		switch {
		case k == fTxn && op.Value.Txn != nil:
			t := op.Value.Txn
			scratch.txn = c.newTxn(p, t.TxnID, ord, t.Intent == history.IntentAbort, false)
			c.writeTxnRecords(scratch, p, t.Records, ord)
			c.txnReads(scratch, t.Reads, c.readIsolation(t.Isolation), ord)
		case k == fRPW && op.Value.RPW != nil:
			r := op.Value.RPW
			scratch.txn = c.newTxn(p, r.TxnID, ord, false, true)
			c.writeTxnRecords(scratch, p, r.Output, ord)
			c.txnReads(scratch, r.Input, c.readIsolation(""), ord)
		}
		if pd != nil {
			scratch.time = pd.time
		}
		defer c.release(scratch)
		pd = scratch
		if pd.txn == none {
			return
		}
	}
	t := &c.txns[pd.txn]
	out := uint8(outcomeOf(op.Type))
	t.doneOrd, t.outcome = ord, out
	var recs []history.Record
	switch {
	case k == fTxn && op.Value.Txn != nil:
		tx := op.Value.Txn
		recs = tx.Records
		if tx.Intent == history.IntentAbort {
			t.abort = true
		}
		if t.inLen == 0 && len(tx.Reads) > 0 { // the reads are known once the transaction polled
			c.txnReads(pd, tx.Reads, c.readIsolation(tx.Isolation), ord)
			t = &c.txns[pd.txn]
		}
		if tx.EndT != 0 {
			t.endT = tx.EndT
		}
	case k == fRPW && op.Value.RPW != nil:
		recs = op.Value.RPW.Output
		if op.Value.RPW.EndT != 0 {
			t.endT = op.Value.RPW.EndT
		}
	}
	if t.committed() {
		// Offsets the producer reports for committed records are acknowledgements.
		for i := range recs {
			r := &recs[i]
			if r.Offset != nil && *r.Offset >= 0 {
				tp, v := c.parts.id(r.Topic, r.Partition), c.vals.intern(r.Value)
				c.place(tp, *r.Offset, v, ord, srcAck)
				if c.liveOn {
					c.liveAcked(tp, *r.Offset, v, op.Time, ord)
				}
			}
		}
	}
	// Partitions written: needed for final-read coverage and availability. An intended abort
	// is no write for availability, unless its answer never came (info): that timeout says as
	// much about the partitions as a send's would. It cannot have committed all the same
	// (txn.neverCommitted).
	aborting := t.abort && op.Type != history.Info
	var last uint32
	for _, v := range pd.vals {
		c.vals.at(v).flags &^= fTxnOpen
		tp := c.vals.at(v).tp
		if tp == 0 || tp == last {
			continue
		}
		last = tp
		if out == outOK || out == outInfo {
			c.parts.ps[tp].touch()
		}
		if !aborting && c.parts.known(tp) {
			c.stats.write(tp, op.Time, pd, uint16(out))
		}
		if c.liveOn && c.parts.known(tp) {
			if t.endT != 0 {
				c.live.txnEnded(p.id, tp, pd.ord, t.endT)
			}
			// An intended abort that completed did what it was asked: progress.
			c.live.writeDone(p.id, tp, out == outOK || t.abort && out == outFail, op.Time, ord)
			c.live.closeTxn(tp, pd.ord, op.Time)
		}
	}
	if c.liveOn && t.inLen > 0 {
		switch {
		case out == outOK:
			c.liveTxnReads(p, t, op, ord)
		case out == outInfo && len(pd.vals) > 0:
			c.liveUnknownStep(p, t, pd.txn, pd.vals[0], op.Time, ord)
		}
	}
	if k != fRPW && t.inLen == 0 {
		return // a transaction that read nothing moves no consumer's positions
	}
	c.commitReads(p, t, pd.ord, ord, uint8(out))
	switch out {
	case outOK:
		// An rpw's inputs move its consumer's positions (poll-skip, nonmonotonic-poll); a txn's
		// reads are judged by where its member resumes and by the dependency graph: following
		// them between resumes too costs a tenth of the checker's speed on a history of
		// transactions that read, since nearly every step of theirs crosses a marker.
		if k == fRPW {
			c.eos.commit(pd.txn)
			for _, v := range c.reads[t.inStart : t.inStart+t.inLen] {
				if st := c.vals.at(v); st.off >= 0 {
					c.advance(p, st.tp, st.off, ord, int(t.readIso))
				}
			}
		}
	default:
		if k == fRPW && out == outInfo {
			c.eos.unknown(pd.txn)
		}
		// After a transaction that did not commit the processor seeks back to its committed
		// offsets.
		c.noteAbort(p, pd.ord, ord)
	}
}

func (c *Checker) completePoll(p *proc, op *history.Op, ord uint32) {
	pl := op.Value.Poll
	if pl == nil {
		return
	}
	if pl.Group != "" && (p.group == 0 || c.groups[p.group-1].name != pl.Group) {
		p.group = c.groupOf(pl.Group) + 1
	}
	iso := isoOf(pl.Isolation, isoOf(string(c.cfg.ReadIsolation()), isoRC))
	ok := op.Type == history.OK
	live := int32(-1)
	if c.liveOn && ok && !p.sink && len(pl.Records) > 0 {
		live = c.live.reader(p.id, pl.Group, results.KindConsumer, iso)
	}
	var (
		unowned []uint32
		liveTP  uint32
		liveOff int64
	)
	ids := c.internAll(pl.Records)
	for i := range pl.Records {
		v := ids[i]
		tp, off := c.read(&pl.Records[i], v, iso, ord)
		if ok && off >= 0 {
			c.resumeAt(p, tp, off, v, iso, ord, false)
			c.advance(p, tp, off, ord, iso)
			unowned = c.unowned(p, tp, off, ord, unowned)
			if live >= 0 {
				// A poll's records come grouped by partition: liveness takes the highest of each
				// group at once.
				switch {
				case tp != liveTP:
					if liveTP != 0 {
						c.live.read(live, liveTP, liveOff, op.Time, ord)
					}
					liveTP, liveOff = tp, off
				case off > liveOff:
					liveOff = off
				}
			}
		}
	}
	if liveTP != 0 {
		c.live.read(live, liveTP, liveOff, op.Time, ord)
	}
}

func (c *Checker) completeFinal(pd *pending, op *history.Op, ord uint32) {
	fr := op.Value.FinalRead
	if fr == nil {
		if pd != nil && pd.tp != 0 {
			cov := &c.parts.ps[pd.tp].final[pd.iso]
			cov.incomplete, cov.incOrd = true, ord
		}
		return
	}
	tp := c.parts.id(fr.Topic, fr.Partition)
	iso := isoOf(fr.Isolation, isoRU)
	cov := &c.parts.ps[tp].final[iso]
	if op.Type == history.OK && !fr.Incomplete {
		cov.add(rng{from: fr.From, end: fr.End, ord: ord})
	} else if !cov.incomplete {
		cov.incomplete, cov.incOrd = true, ord
	}
	if c.share.on && op.Type == history.OK {
		c.share.finalRead(tp, fr, ord)
	}
	flag := uint16(fFinalRU)
	if iso == isoRC {
		flag = fFinalRC
	}
	ids := c.internAll(fr.Records)
	for i := range fr.Records {
		r := &fr.Records[i]
		rtp := tp
		if r.Partition != fr.Partition || r.Topic != fr.Topic {
			rtp = c.parts.id(r.Topic, r.Partition)
		}
		v := ids[i]
		st := c.vals.at(v)
		st.flags |= flag
		if st.finalOrd == none {
			st.finalOrd = ord
		}
		if iso == isoRC && st.rcOrd == none {
			st.rcOrd = ord
		}
		cov.records++
		if r.Offset != nil && *r.Offset >= 0 {
			c.place(rtp, *r.Offset, v, ord, srcFinal)
		} else if st.off < 0 {
			st.tp = rtp
		}
	}
}

type conflictKey struct {
	tp  uint32
	off int64
	v   uint32
}

// place puts value v at offset off of partition tp, as reported by the op at ord. The first
// report of an offset fills it; a different value there later is an inconsistent offset, and
// a value reported at a second position is a duplicate.
func (c *Checker) place(tp uint32, off int64, v, ord uint32, src source) {
	part := c.parts.ps[tp]
	s := part.log.get(off)
	switch {
	case s.val == 0:
		part.log.set(off, slot{val: v, ord: ord})
	case s.val != v:
		c.conflict(tp, off, s, v, ord, src)
	}
	st := c.vals.at(v)
	if st.off < 0 {
		st.off, st.tp = off, tp
		return
	}
	if (st.off != off || st.tp != tp) && st.flags&fDup == 0 {
		st.flags |= fDup
		firstOrd := st.writeOrd
		if first := c.parts.ps[st.tp].log.get(st.off); first.val == v {
			firstOrd = first.ord
		}
		a, sinkIdx := c.duplicateFamily(tp)
		c.find(finding{a: a, v: v, tp: st.tp, off: st.off, tp2: tp, off2: off,
			ops: [4]uint32{firstOrd, ord, none, none}, proc: -1, sink: sinkIdx})
	}
}

func (c *Checker) conflict(tp uint32, off int64, s slot, v, ord uint32, src source) {
	// What the final read shows at an offset where reports differ, whether or not a poll
	// showed the same conflict first.
	if src == srcFinal {
		if part := c.parts.ps[tp]; part.finalAt == nil {
			part.finalAt = map[int64]uint32{off: v}
		} else if _, ok := part.finalAt[off]; !ok {
			part.finalAt[off] = v
		}
	}
	key := conflictKey{tp, off, v}
	if _, seen := c.conflicts[key]; seen {
		return
	}
	c.conflicts[key] = struct{}{}
	c.find(finding{a: guarantee.InconsistentOffset, v: s.val, v2: v, tp: tp, off: off, tp2: tp, off2: off,
		ops: [4]uint32{s.ord, ord, none, none}, proc: -1})
	if src != srcFinal {
		return
	}
	// A final read shows another record where a consumer saw this one: the observed record
	// changed at its offset.
	w := c.vals.at(s.val)
	if w.flags&fSeenAny != 0 && w.off == off && w.tp == tp && w.flags&fLostObs == 0 {
		w.flags |= fLostObs
		c.find(finding{a: guarantee.LostObserved, v: s.val, v2: v, tp: tp, off: off, tp2: tp, off2: off,
			ops: [4]uint32{w.readOrd, ord, none, none}, proc: -1, note: noteChanged})
	}
}
