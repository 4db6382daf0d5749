package verify

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/faultspan"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// Share groups (KIP-932; docs/share-groups.md). A share group's members acquire records of
// the partitions they share, each under a lock for the group's lock duration, and acknowledge
// each one: accept or reject ends its delivery, release hands it back with its delivery count
// raised, and a record delivered as many times as the delivery limit is archived. The checker
// follows every record's deliveries (share-poll ops, with the broker's delivery count) and
// acknowledgements (share-ack ops, with their commit's outcome), and judges, once the history is
// in:
//
//   - share-lost: a record below the share partition start offset the group's state held after
//     the final drain (share-state) that no member accepted or rejected and that was never
//     delivered as many times as the limit: the group moved past it without finishing it;
//   - share-redelivered: a record delivered again by a poll invoked after an accept or reject
//     of it was acknowledged (the commit's ok);
//   - share-double-acquire: a record acquired by a second poll while the first acquisition's
//     lock, or its renewal, was certainly still valid and nothing had released it (an
//     acknowledgement, the holder's crash);
//   - share-over-delivered: a record delivered more times than the limit, by the counts the
//     broker reported or by the deliveries the history shows;
//   - share-count-regressed: a record whose delivery count did not rise from one delivery to a
//     later one.
//
// Locks and delivery counts of acquired records live in the share partition leader's memory; a
// fault that took effect, or a change of the partition's leader, while a finding's ops ran is
// recorded with the finding (the guarantee table permits what it may explain).

// shareLockSlack is how far inside the lock duration a second acquisition must complete to
// count as certain: the broker's lock timer starts when it acquires (after the poll's invoke)
// and fires from a timer wheel, which may run a little late, never early.
const shareLockSlack = 500 * time.Millisecond

type shareKey struct {
	tp  uint32
	off int64
}

type shareDelivery struct {
	proc       int32
	inv, ok    uint32 // ordinals of the poll's invoke and completion
	invT, okT  int64
	count      int32
	instanceAt int // the process's crashes before the poll: which instance polled
}

type shareAckEv struct {
	proc        int32
	typ         history.AckType
	out         history.Type
	inv, done   uint32
	invT, doneT int64
}

type shareRec struct {
	dels []shareDelivery
	acks []shareAckEv
}

type shareStart struct {
	off int64
	ord uint32
}

type shareFinal struct {
	off int64
	ord uint32
}

// shareLeader is an observation of a share partition's leader: kept when it changes.
type shareLeader struct {
	t      int64
	leader int32
	epoch  int32
}

// shareState is what the checker keeps of a history's share group.
type shareState struct {
	on      bool // the header states the share group (history.Config.Share)
	seen    uint32
	firstOp uint32 // ordinal of the first share op, for the unknown reason
	recs    map[shareKey]*shareRec
	pending map[uint32]history.ShareAck // share-ack invokes by ordinal, awaiting completion
	crashes map[int32][]int64           // crash invokes of each process, in order
	leaders map[uint32][]shareLeader    // leaders and epochs observed per partition, in order
	starts  map[uint32]shareStart
	finals  map[uint32][]shareFinal
	topics  map[string]bool
	// read: share topics a read_uncommitted final read covered, records or none (an empty
	// topic read in full is read; finals holds only what reads showed).
	read   map[string]bool
	faults *faultspan.Tracker
	end    int64
	bad    []string             // payloads that could not be read
	spans  []faultspan.Interval // intervals' result, once taken
	open   map[uint32]shareOpen
	// blindEnds are the end times of the polls whose outcome is unknown (info): each may have
	// acquired any record available meanwhile, once, without the history showing it.
	blindEnds []int64
	// unseen counts records past their start offset whose shown deliveries stop below the
	// limit, that blind polls could have taken to it.
	unseen int64
}

func (s *shareState) init(cfg *history.ShareConfig) {
	s.recs = map[shareKey]*shareRec{}
	s.pending = map[uint32]history.ShareAck{}
	s.crashes = map[int32][]int64{}
	s.leaders = map[uint32][]shareLeader{}
	s.starts = map[uint32]shareStart{}
	s.finals = map[uint32][]shareFinal{}
	s.topics = map[string]bool{}
	s.read = map[string]bool{}
	s.faults = faultspan.NewTracker(0)
	s.firstOp = none
	if cfg != nil {
		s.on = true
		for _, t := range cfg.Topics {
			s.topics[t] = true
		}
	}
}

func (s *shareState) unreadable(op *history.Op, err error) {
	if len(s.bad) < 5 {
		s.bad = append(s.bad, fmt.Sprintf("op %d: %v", op.Index, err))
	}
}

// nemesis follows the faults, for the windows findings are judged in.
func (s *shareState) nemesis(op *history.Op) {
	s.faults.Add(op)
	s.end = max(s.end, op.Time)
}

// leader notes an observed leader and leader epoch of tp.
func (s *shareState) leader(tp uint32, leader, epoch int32, t int64) {
	ls := s.leaders[tp]
	if n := len(ls); n == 0 || ls[n-1].epoch != epoch || ls[n-1].leader != leader {
		s.leaders[tp] = append(ls, shareLeader{t: t, leader: leader, epoch: epoch})
	}
}

// shareInvoke keeps a share-ack's acknowledgements until its completion.
func (c *Checker) shareInvoke(op *history.Op, ord uint32) {
	if op.F != history.FShareAck {
		return
	}
	a, err := history.ParseShareAck(op.Value.Raw)
	if err != nil {
		c.share.unreadable(op, err)
		return
	}
	c.share.pending[ord] = a
}

// shareOp takes the completion of a share op or a crash.
func (c *Checker) shareOp(p *proc, pd *pending, op *history.Op, ord uint32) {
	s := &c.share
	s.end = max(s.end, op.Time)
	if op.F == history.FCrash {
		t := op.Time
		if pd != nil {
			t = pd.time
		}
		s.crashes[int32(p.id)] = append(s.crashes[int32(p.id)], t)
		return
	}
	s.seen++
	if s.firstOp == none {
		s.firstOp = ord
	}
	invOrd, invT := ord, op.Time
	if pd != nil {
		invOrd, invT = pd.ord, pd.time
	}
	switch op.F {
	case history.FSharePoll:
		if op.Type == history.Info {
			s.blindEnds = append(s.blindEnds, op.Time)
		}
		if op.Type != history.OK {
			return
		}
		sp, err := history.ParseSharePoll(op.Value.Raw)
		if err != nil {
			s.unreadable(op, err)
			return
		}
		crashes := len(s.crashes[int32(p.id)])
		for _, r := range sp.Records {
			tp := c.parts.id(r.Topic, r.Partition)
			rec := s.rec(tp, *r.Offset)
			rec.dels = append(rec.dels, shareDelivery{proc: int32(p.id), inv: invOrd, ok: ord, invT: invT, okT: op.Time,
				count: r.Delivery, instanceAt: crashes})
		}
	case history.FShareAck:
		a, ok := s.pending[invOrd]
		if pd == nil || !ok {
			var err error
			if a, err = history.ParseShareAck(op.Value.Raw); err != nil {
				s.unreadable(op, err)
				return
			}
		}
		delete(s.pending, invOrd)
		tp := c.parts.id(a.Topic, a.Partition)
		for _, e := range a.Acks {
			rec := s.rec(tp, e.Offset)
			rec.acks = append(rec.acks, shareAckEv{proc: int32(p.id), typ: e.Type, out: op.Type, inv: invOrd, done: ord, invT: invT, doneT: op.Time})
		}
	case history.FShareState:
		if op.Type != history.OK {
			return
		}
		st, err := history.ParseShareState(op.Value.Raw)
		if err != nil {
			s.unreadable(op, err)
			return
		}
		if st.StartOffset != nil {
			s.starts[c.parts.id(st.Topic, st.Partition)] = shareStart{off: *st.StartOffset, ord: ord}
		}
	}
}

func (s *shareState) rec(tp uint32, off int64) *shareRec {
	k := shareKey{tp, off}
	r := s.recs[k]
	if r == nil {
		r = &shareRec{}
		s.recs[k] = r
	}
	return r
}

// intervals are the run's faults, paired once the history is in: the judging and the stats
// both read them.
func (s *shareState) intervals() []faultspan.Interval {
	if s.spans == nil {
		s.spans = s.faults.Intervals(s.end)
		if s.spans == nil {
			s.spans = []faultspan.Interval{}
		}
	}
	return s.spans
}

// shareLock is the lock duration the header states; 0 without a share group.
func (c *Checker) shareLock() time.Duration {
	if c.cfg.Share == nil {
		return 0
	}
	return time.Duration(c.cfg.Share.LockMS) * time.Millisecond
}

// finalRead keeps what a read_uncommitted final read of a share topic showed: the records
// the share partition holds.
func (s *shareState) finalRead(tp uint32, fr *history.FinalRead, ord uint32) {
	if !s.topics[fr.Topic] || isoOf(fr.Isolation, isoRU) != isoRU {
		return
	}
	s.read[fr.Topic] = true
	for _, r := range fr.Records {
		if r.Offset != nil && *r.Offset >= 0 && r.Partition == fr.Partition && r.Topic == fr.Topic {
			s.finals[tp] = append(s.finals[tp], shareFinal{off: *r.Offset, ord: ord})
		}
	}
}

// disturbed reports whether a fault took effect, or tp's leader changed, between from and to:
// what may have released a lock or lost a delivery count kept in the leader's memory.
func (s *shareState) disturbed(tp uint32, from, to int64, faults []faultspan.Interval) bool {
	for _, f := range faults {
		if f.Start <= to && f.End >= from {
			return true
		}
	}
	for _, l := range s.leaders[tp][min(1, len(s.leaders[tp])):] {
		if l.t >= from && l.t <= to {
			return true
		}
	}
	return false
}

// shareLeaderGrace is how long after a finding's last op the ISR watch may take to show a
// leader change made before it: the watch samples every 500 ms and at once after each
// injection and heal, and a loaded machine delays a sample by seconds at most.
const shareLeaderGrace = 5 * time.Second

// leaderLost reports whether tp's share-partition leader may have lost its memory of the
// record's acquisitions between from and to (KIP-932: acquisitions are not persisted, and
// "in the unlikely event of a share-partition leader crash, memory of the in-flight delivery
// will be lost"): the watch showed another leader or leader epoch by to (or within
// shareLeaderGrace after it: a change it saw late), or a fault acted on the process of the
// node that led tp (kill, stop, pause, power or disk: faults that name no links), which may
// restart the broker without a new epoch. A history whose watch had not shown tp's leader by
// from cannot tell: any fault in between counts.
func (s *shareState) leaderLost(tp uint32, from, to int64, faults []faultspan.Interval) bool {
	ls := s.leaders[tp]
	i := -1
	for j, l := range ls {
		if l.t > from {
			break
		}
		i = j
	}
	if i < 0 {
		return s.disturbed(tp, from, to, faults)
	}
	at := ls[i]
	for _, l := range ls[i+1:] {
		if l.t > to+int64(shareLeaderGrace) {
			break
		}
		if l.leader != at.leader || l.epoch != at.epoch {
			return true
		}
	}
	for _, f := range faults {
		if f.Start <= to && f.End >= from && len(f.Links) == 0 && slices.Contains(f.Nodes, int(at.leader)) {
			return true
		}
	}
	return false
}

// crashedBetween reports whether process p began a crash within [from, to].
func (s *shareState) crashedBetween(p int32, from, to int64) bool {
	for _, t := range s.crashes[p] {
		if t >= from && t <= to {
			return true
		}
	}
	return false
}

// checkShare judges the share group's records once the history is in.
func (c *Checker) checkShare() {
	s := &c.share
	if !s.on || s.seen == 0 {
		return
	}
	faults := s.intervals()
	lock := c.shareLock()
	limit := c.cfg.Share.DeliveryLimit
	keys := slices.SortedFunc(maps.Keys(s.recs), func(a, b shareKey) int {
		return cmp.Or(cmp.Compare(a.tp, b.tp), cmp.Compare(a.off, b.off))
	})
	for _, k := range keys {
		r := s.recs[k]
		slices.SortStableFunc(r.dels, func(a, b shareDelivery) int { return cmp.Compare(a.ok, b.ok) })
		c.shareRegressed(k, r, faults)
		c.shareOverDelivered(k, r, limit, faults)
		c.shareRedelivered(k, r, faults)
		c.shareDoubleAcquire(k, r, lock, faults)
	}
	c.shareLost(limit)
}

// shareCirc is what happened while a share finding's ops ran, as the guarantee table reads it
// (guarantee.Facts).
type shareCirc uint8

const (
	// shareDisturbed: a fault took effect, or the partition's leader changed.
	shareDisturbed shareCirc = 1 << iota
	// shareLeaderLost: the share-partition leader changed or its node's process was faulted
	// (leaderLost), so its memory of acquisitions may be gone.
	shareLeaderLost
	// shareHolderLeft: a member that held an earlier delivery of the record crashed before the
	// later one.
	shareHolderLeft
)

func (sc shareCirc) facts(f *guarantee.Facts) {
	f.Disturbed, f.LeaderLost, f.HolderLeft = sc&shareDisturbed != 0, sc&shareLeaderLost != 0, sc&shareHolderLeft != 0
}

// circ is what happened to tp between from and to, for a finding about the deliveries of the
// record whose earlier one was holder's (-1: none).
func (s *shareState) circ(tp uint32, from, to int64, holder int32, faults []faultspan.Interval) shareCirc {
	var sc shareCirc
	if s.disturbed(tp, from, to, faults) {
		sc |= shareDisturbed
	}
	if s.leaderLost(tp, from, to, faults) {
		sc |= shareLeaderLost
	}
	if holder >= 0 && s.crashedBetween(holder, from, to) {
		sc |= shareHolderLeft
	}
	return sc
}

func (c *Checker) shareFinding(a guarantee.Anomaly, k shareKey, proc int32, sc shareCirc, ops ...uint32) {
	f := finding{a: a, tp: k.tp, off: k.off, off2: -1, proc: proc, ops: [4]uint32{none, none, none, none}, share: sc}
	copy(f.ops[:], ops)
	c.find(f)
}

// shareRegressed: a later delivery (polled after an earlier one completed) whose count is not
// above the earlier's. A leader change may repeat a count (acquisitions are not persisted, so
// the new leader counts from the last persisted one) but never go below a count the group's
// state holds: a release of the earlier delivery acknowledged before the later poll persisted
// it, and a repeat then is judged undisturbed.
func (c *Checker) shareRegressed(k shareKey, r *shareRec, faults []faultspan.Interval) {
	for j := 1; j < len(r.dels); j++ {
		for i := range j {
			a, b := r.dels[i], r.dels[j]
			if b.inv <= a.ok || b.count > a.count {
				continue
			}
			persisted := slices.ContainsFunc(r.acks, func(x shareAckEv) bool {
				return x.proc == a.proc && x.typ == history.AckRelease && x.out == history.OK && x.inv > a.ok && x.done < b.inv
			})
			var sc shareCirc
			if !persisted {
				sc = c.share.circ(k.tp, a.invT, b.okT, a.proc, faults)
			}
			c.shareFinding(guarantee.ShareCountRegressed, k, b.proc, sc, a.ok, b.ok)
			return
		}
	}
}

// shareOverDelivered: a delivery count above the limit (the broker archives a record at the
// limit, and its count never passes it), or more deliveries than the limit (a leader change may
// lose one count of an acquired record, so that one is judged by the disturbance).
func (c *Checker) shareOverDelivered(k shareKey, r *shareRec, limit int32, faults []faultspan.Interval) {
	if limit <= 0 || len(r.dels) == 0 {
		return
	}
	first := r.dels[0]
	for i, d := range r.dels {
		switch {
		case d.count > limit:
			c.shareFinding(guarantee.ShareOverDelivered, k, d.proc, 0, first.ok, d.ok)
			return
		case int32(i+1) > limit:
			sc := c.share.circ(k.tp, first.invT, d.okT, -1, faults)
			if slices.ContainsFunc(r.dels[:i], func(e shareDelivery) bool { return c.share.crashedBetween(e.proc, e.invT, d.okT) }) {
				sc |= shareHolderLeft
			}
			c.shareFinding(guarantee.ShareOverDelivered, k, d.proc, sc, first.ok, d.ok)
			return
		}
	}
}

// shareRedelivered: a delivery polled after an accept or reject of the record was
// acknowledged.
func (c *Checker) shareRedelivered(k shareKey, r *shareRec, faults []faultspan.Interval) {
	for _, a := range r.acks {
		if !a.typ.Terminal() || a.out != history.OK {
			continue
		}
		for _, d := range r.dels {
			if d.inv > a.done {
				c.shareFinding(guarantee.ShareRedelivered, k, d.proc, c.share.circ(k.tp, a.doneT, d.okT, -1, faults), a.done, d.ok)
				return
			}
		}
	}
}

// shareDoubleAcquire: of two deliveries in completion order, the later completed within the
// lock duration of the earlier poll's invoke, or of the invoke of the earlier holder's renew
// of that lock that was applied — so both acquisitions certainly held a valid lock at once —
// while no acknowledgement or crash of the earlier holder could have released it.
func (c *Checker) shareDoubleAcquire(k shareKey, r *shareRec, lock time.Duration, faults []faultspan.Interval) {
	if lock <= 0 {
		return
	}
	for j := 1; j < len(r.dels); j++ {
		a, b := r.dels[j-1], r.dels[j]
		from := min(a.invT, b.invT)
		// A renew (KIP-1222) the broker applied (ok) restarted the lock: it renews only a lock
		// its member still holds, so the lock holds a lock duration past the renew's invoke
		// at least, and the second acquisition came after it.
		held, renew := from+int64(lock), none
		for _, ack := range r.acks {
			if ack.proc == a.proc && ack.typ == history.AckRenew && ack.out == history.OK && ack.inv > a.ok &&
				ack.invT <= b.okT && ack.invT+int64(lock) > held {
				held, renew = ack.invT+int64(lock), ack.done
			}
		}
		if b.okT >= held-int64(shareLockSlack) {
			continue
		}
		if c.share.crashedBetween(a.proc, a.invT, b.okT) || c.share.crashedBetween(b.proc, b.invT, b.okT) {
			continue
		}
		released := false
		for _, ack := range r.acks {
			if ack.proc == a.proc && ack.typ != history.AckRenew && ack.out != history.Fail && ack.invT <= b.okT && ack.invT >= a.invT {
				released = true
				break
			}
		}
		if released {
			continue
		}
		c.shareFinding(guarantee.ShareDoubleAcquire, k, b.proc, c.share.circ(k.tp, from, b.okT, -1, faults), a.ok, b.ok, renew)
		return
	}
}

// finished reports whether the history shows r's delivery ended: an accept or reject that
// was, or may have been, applied, or a delivery at the limit (archived when it is not
// accepted).
func (r *shareRec) finished(limit int32) bool {
	for _, a := range r.acks {
		if a.typ.Terminal() && a.out != history.Fail {
			return true
		}
	}
	for _, d := range r.dels {
		if limit > 0 && d.count >= limit {
			return true
		}
	}
	return false
}

// shareLost: records the final read shows below the start offset of their share partition,
// whose delivery the history does not show ended. Records at or past the start offset that
// were never finished make the family unknown (the drain did not get to them), as do
// partitions whose start offset was not observed. A record that polls of unknown outcome could
// have taken to the limit unseen (mayReachLimit) is archived as documented, and counted.
func (c *Checker) shareLost(limit int32) {
	s := &c.share
	for _, tp := range slices.Sorted(maps.Keys(s.finals)) {
		st, known := s.starts[tp]
		for _, f := range s.finals[tp] {
			r := s.recs[shareKey{tp, f.off}]
			if r != nil && r.finished(limit) {
				continue
			}
			if !known || f.off >= st.off {
				s.unfinished(tp, known)
				continue
			}
			if s.mayReachLimit(r, limit) {
				s.unseen++
				continue
			}
			last := none
			if r != nil && len(r.dels) > 0 {
				last = r.dels[len(r.dels)-1].ok
			}
			c.shareFinding(guarantee.ShareLost, shareKey{tp, f.off}, -1, 0, f.ord, st.ord, last)
		}
	}
}

// mayReachLimit says whether the polls of unknown outcome could have delivered r, unseen, as
// many more times as it needed to reach the limit. A client fetches only while it polls, one
// fetch at a time, so each such poll acquired r at most once; and only after r's last delivery
// the history shows began (before it, r was not available to be acquired again).
func (s *shareState) mayReachLimit(r *shareRec, limit int32) bool {
	if limit <= 0 {
		return false
	}
	var count int32
	from := int64(math.MinInt64)
	if r != nil && len(r.dels) > 0 {
		last := r.dels[len(r.dels)-1]
		count, from = last.count, last.invT
	}
	for _, end := range s.blindEnds {
		if count >= limit {
			break
		}
		if end >= from {
			count++
		}
	}
	return count >= limit
}

// unfinished counts records whose end the run did not show, by partition and whether
// the start offset was known.
func (s *shareState) unfinished(tp uint32, known bool) {
	if s.open == nil {
		s.open = map[uint32]shareOpen{}
	}
	o := s.open[tp]
	o.n++
	o.known = known
	s.open[tp] = o
}

type shareOpen struct {
	n     int
	known bool
}

// shareUnknown says what kept the share group's records from being fully judged.
func (c *Checker) shareUnknown() []results.UnknownReason {
	s := &c.share
	var out []results.UnknownReason
	if s.seen > 0 && !s.on {
		out = append(out, results.UnknownReason{Cause: results.CauseHistoryMalformed, Text: fmt.Sprintf(
			"the history has share group ops (op %d) but its header states no share group (config.share): "+
				"the lock duration and delivery limit they are judged by are not known", c.opIndex(s.firstOp))})
	}
	if len(s.bad) > 0 {
		out = append(out, results.UnknownReason{Cause: results.CauseHistoryMalformed,
			Text: "share group payloads that could not be read were left out: " + nameList(s.bad)})
	}
	if !s.on || s.seen == 0 {
		return out
	}
	var noStart, undrained []string
	for _, tp := range slices.Sorted(maps.Keys(s.open)) {
		o := s.open[tp]
		name := fmt.Sprintf("%s (%d records)", c.parts.ps[tp].String(), o.n)
		if o.known {
			undrained = append(undrained, name)
		} else {
			noStart = append(noStart, name)
		}
	}
	if len(noStart) > 0 {
		out = append(out, results.UnknownReason{Cause: results.CauseFinalReadIncomplete,
			Text: "no share partition start offset was observed after the drain, so records never accepted or rejected could not be judged lost or not: " + nameList(noStart)})
	}
	if len(undrained) > 0 {
		out = append(out, results.UnknownReason{Cause: results.CauseFinalReadIncomplete,
			Text: "the final drain ended before the group finished these records (at or past the start offset, never accepted or rejected): " + nameList(undrained)})
	}
	for _, t := range slices.Sorted(maps.Keys(s.topics)) {
		if !s.read[t] {
			out = append(out, results.UnknownReason{Cause: results.CauseFinalReadIncomplete,
				Text: "no read_uncommitted final read of share topic " + t + ": share-lost was not judged there"})
		}
	}
	return out
}

// describeShare says in one sentence what a share group finding's ops show; at names its
// i-th evidence op.
func (c *Checker) describeShare(f *finding, at func(int) string) string {
	s := &c.share
	k := shareKey{f.tp, f.off}
	where := fmt.Sprintf("%s offset %d", c.parts.ps[f.tp].String(), f.off)
	r := s.recs[k]
	del := func(ord uint32) (shareDelivery, bool) {
		if r == nil {
			return shareDelivery{}, false
		}
		i := slices.IndexFunc(r.dels, func(d shareDelivery) bool { return d.ok == ord })
		if i < 0 {
			return shareDelivery{}, false
		}
		return r.dels[i], true
	}
	a, _ := del(f.ops[0])
	b, _ := del(f.ops[1])
	var text string
	switch f.a {
	case guarantee.ShareLost:
		last := "no member was ever delivered it"
		if f.ops[2] != none {
			if d, ok := del(f.ops[2]); ok {
				last = fmt.Sprintf("its last delivery (%s) had delivery count %d of the limit %d, and no accept or reject of it was applied", at(2), d.count, c.cfg.Share.DeliveryLimit)
			}
		}
		start := s.starts[f.tp].off
		text = fmt.Sprintf("the final read %s shows a record at %s, below the share partition start offset %d (%s); %s", at(0), where, start, at(1), last)
	case guarantee.ShareRedelivered:
		text = fmt.Sprintf("an accept or reject of %s was acknowledged (%s), yet process %d's poll invoked after it delivered the record again (%s, delivery count %d)", where, at(0), b.proc, at(1), b.count)
	case guarantee.ShareDoubleAcquire:
		within := fmt.Sprintf("within the lock duration of %d ms", c.cfg.Share.LockMS)
		if f.ops[2] != none {
			within += fmt.Sprintf(" of the first holder's renew of its lock (%s)", at(2))
		}
		text = fmt.Sprintf("process %d acquired %s (%s, delivery count %d) and process %d acquired it again (%s, delivery count %d) %s after the first poll began, %s, with no acknowledgement or crash of the first holder in between",
			a.proc, where, at(0), a.count, b.proc, at(1), b.count, time.Duration(b.okT-min(a.invT, b.invT)).Round(time.Millisecond), within)
	case guarantee.ShareOverDelivered:
		n := 0
		if r != nil {
			n = slices.IndexFunc(r.dels, func(d shareDelivery) bool { return d.ok == f.ops[1] }) + 1
		}
		text = fmt.Sprintf("%s was delivered %d times by the history (the last, %s, with delivery count %d), beyond the delivery limit %d",
			where, n, at(1), b.count, c.cfg.Share.DeliveryLimit)
	case guarantee.ShareCountRegressed:
		text = fmt.Sprintf("%s was delivered with delivery count %d (%s), then by a later poll with delivery count %d (%s)", where, a.count, at(0), b.count, at(1))
	}
	switch {
	case f.share&shareLeaderLost != 0:
		text += "; the partition's leader changed, or a fault acted on its node, in between"
	case f.share&shareDisturbed != 0:
		text += "; a fault took effect, or the partition's leader changed, in between"
	}
	if f.share&shareHolderLeft != 0 {
		text += "; a member that held an earlier delivery crashed in between"
	}
	return text
}

// shareStats counts the group's deliveries and acknowledgements, and why each record was
// delivered again.
func (c *Checker) shareStats() *results.ShareStats {
	s := &c.share
	if s.seen == 0 {
		return nil
	}
	out := &results.ShareStats{ByCount: map[string]int64{}, Redeliveries: map[results.ShareCause]int64{}, Acks: map[string]results.Outcomes{},
		ArchivedUnseen: s.unseen}
	faults, lock := s.intervals(), c.shareLock()
	for k, r := range s.recs {
		for _, a := range r.acks {
			o := out.Acks[string(a.typ)]
			switch a.out {
			case history.OK:
				o.OK++
			case history.Fail:
				o.Fail++
			default:
				o.Info++
			}
			out.Acks[string(a.typ)] = o
		}
		if len(r.dels) == 0 {
			continue
		}
		out.Records++
		for i, d := range r.dels {
			out.Deliveries++
			out.ByCount[strconv.Itoa(int(d.count))]++
			if i > 0 {
				out.Redeliveries[c.shareCause(k, r, r.dels[i-1], d, lock, faults)]++
			}
		}
	}
	return out
}

// shareCause is why b, a later delivery of r, could follow a: what ended a's hold, as the
// history shows it.
func (c *Checker) shareCause(k shareKey, r *shareRec, a, b shareDelivery, lock time.Duration, faults []faultspan.Interval) results.ShareCause {
	var released, unknown bool
	for _, x := range r.acks {
		if x.proc != a.proc || x.inv < a.ok || x.inv > b.ok || x.typ == history.AckRenew {
			continue
		}
		if x.typ == history.AckRelease && x.out == history.OK {
			released = true
		}
		if x.out != history.OK {
			unknown = true
		}
	}
	switch {
	case released:
		return results.ShareAfterRelease
	case c.share.crashedBetween(a.proc, a.invT, b.okT):
		return results.ShareAfterCrash
	case unknown:
		return results.ShareAfterUnknownAck
	case lock > 0 && b.okT-a.invT >= int64(lock):
		return results.ShareAfterLockExpired
	case c.share.disturbed(k.tp, a.invT, b.okT, faults):
		return results.ShareAfterFault
	}
	return results.ShareUnexplained
}
