package histmodel

import (
	"slices"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// The share group (KIP-932) of a history with the Share part: shareMembers processes share
// the share topic's partitions. The model keeps what the share-partition leader keeps of
// each record — its delivery count, the member holding it and until when its lock holds,
// whether its delivery ended — and the members acquire records as that leader hands them
// out: an available record (never delivered, released, or its holder's lock expired or its
// holder crashed) is acquired with its count raised by one, and a record whose count reached
// the delivery limit is archived when released instead of being delivered again. A clean run
// then holds no share finding: counts rise by one per delivery, no record is acquired while
// another member's lock certainly holds, none is delivered after an accept or reject, none
// past the limit, and the final drain accepts every record left, so that the start offset
// each share-state op reports is the partition's end.

// shareMembers is how many processes the share group has.
const shareMembers = 3

// shareLockMS is the group's acquisition lock duration. Short, so that the clean run's
// pauses (two lock expiries, each a wait of a lock and a little, and three shorter ones) stay
// far below verify.StuckAfter, and no liveness finding follows from them; still four times
// the checker's 500 ms slack, so that a second acquisition 1 s into a lock is certain.
const shareLockMS = 2000

// shareRec is what the share-partition leader keeps of one record of the share topic.
type shareRec struct {
	e      *entry
	count  int32         // deliveries so far: the count its last delivery carried
	holder int           // the member holding it (a process), 0 when none
	until  time.Duration // while held: when its lock expires (model time, Render's clock)
	done   bool          // accepted, rejected, or archived at the limit
}

// shareModel is the share group's state.
type shareModel struct {
	parts    int   // partitions of the share topic
	limit    int32 // delivery limit
	lock     time.Duration
	recs     map[*entry]*shareRec
	held     map[int][]*shareRec // what each member holds, in acquisition order
	expiries int                 // lock expiries the clean run waited for
	pauses   int                 // pauses within the locks the clean run took
	releases int                 // percent of the clean run's acknowledgements that release
	drained  bool
	states   map[int32]*action // the share-state op of each partition, once drained
}

// newShare chooses the share topic's partitions, the delivery limit and how often the clean
// run releases (from a quarter to three quarters of acknowledgements: the more, the more records
// are delivered up to the limit and archived). The limit is 3 at least: the count-regressed
// near miss delivers one record three times.
func (m *Model) newShare() {
	m.share = &shareModel{parts: 1 + m.rng.IntN(2), limit: int32(3 + m.rng.IntN(3)), lock: shareLockMS * time.Millisecond,
		releases: 25 + m.rng.IntN(51), recs: map[*entry]*shareRec{}, held: map[int][]*shareRec{}, states: map[int32]*action{}}
}

func (m *Model) shareMembers() []int {
	ps := make([]int, shareMembers)
	for i := range ps {
		ps[i] = procShareA + i
	}
	return ps
}

// shareMember picks a member; shareOther another than p.
func (m *Model) shareMember() int { return procShareA + m.rng.IntN(shareMembers) }
func (m *Model) shareOther(p int) int {
	return procShareA + (p-procShareA+1+m.rng.IntN(shareMembers-1))%shareMembers
}

func (m *Model) shareRecOf(e *entry) *shareRec {
	r := m.share.recs[e]
	if r == nil {
		r = &shareRec{e: e}
		m.share.recs[e] = r
	}
	return r
}

// nextT is the time the next step on the timeline will have.
func (m *Model) nextT() time.Duration { return m.clock + time.Millisecond + m.idle }

// shareSubscribe writes member p (a new instance, after a crash) joining the group.
func (m *Model) shareSubscribe(p int) *action {
	v := mustJSON(history.ShareSubscribe{Group: shareGroup, Topics: []string{topicShare}})
	return m.add(&action{proc: history.Client(p), f: history.FShareSubscribe, out: history.OK, raw: v, rawDone: v})
}

// unhold takes r from its holder, as an acknowledgement, a crash or the lock's expiry does.
func (m *Model) unhold(r *shareRec) {
	if r.holder != 0 {
		m.share.held[r.holder] = slices.DeleteFunc(m.share.held[r.holder], func(x *shareRec) bool { return x == r })
	}
	r.holder = 0
}

// shareRelease hands r back: available again, or archived once delivered as many times as
// the limit.
func (m *Model) shareRelease(r *shareRec) {
	m.unhold(r)
	if r.count >= m.share.limit {
		r.done = true
	}
}

// shareExpire releases every record whose lock has certainly expired by the next step: its
// expiry lies before that step, and the lock counted from the acquiring poll's completion,
// the latest the leader could have acquired it.
func (m *Model) shareExpire() {
	at := m.nextT()
	for _, p := range m.shareMembers() {
		for _, r := range slices.Clone(m.share.held[p]) {
			if r.until < at {
				m.shareRelease(r)
			}
		}
	}
}

// shareAvailable lists the records the leader would hand out now, partition after partition
// from start, in offset order, up to max, but skip.
func (m *Model) shareAvailable(start, max int, skip *entry) []*shareRec {
	var out []*shareRec
	for k := range m.share.parts {
		for _, e := range m.log(tp{topicShare, int32((start + k) % m.share.parts)}).entries {
			if len(out) == max {
				return out
			}
			r := m.shareRecOf(e)
			if e != skip && !e.lost && !r.done && r.holder == 0 {
				out = append(out, r)
			}
		}
	}
	return out
}

// sharePollAt writes a poll of member p that acquired recs, each with the count in counts,
// and has the model hold them for p from the poll's completion for a lock. The counts are the
// leader's (one above the record's last) unless a mutator says otherwise.
func (m *Model) sharePollAt(p int, recs []*shareRec, counts []int32) *action {
	sp := history.SharePoll{Group: shareGroup}
	for i, r := range recs {
		sp.Records = append(sp.Records, history.SharedRecord(r.e.record(), counts[i]))
	}
	a := m.add(&action{proc: history.Client(p), f: history.FSharePoll, out: history.OK,
		raw: mustJSON(history.SharePoll{Group: shareGroup}), rawDone: mustJSON(sp)})
	for i, r := range recs {
		m.unhold(r)
		r.count, r.holder, r.until = counts[i], p, m.clock+m.share.lock
		m.share.held[p] = append(m.share.held[p], r)
	}
	return a
}

// sharePoll has member p acquire up to max available records (but skip), as the leader
// hands them out; a poll that finds none returns none.
func (m *Model) sharePoll(p, max int, skip *entry) (*action, []*shareRec) {
	m.shareExpire()
	recs := m.shareAvailable(m.rng.IntN(m.share.parts), max, skip)
	counts := make([]int32, len(recs))
	for i, r := range recs {
		counts[i] = r.count + 1
	}
	return m.sharePollAt(p, recs, counts), recs
}

// shareAck writes member p's acknowledgement of recs (of one partition), each with its type
// in typs, completing out; applied: the leader applied them (an ok's always, a fail's never,
// an info's as the caller says).
func (m *Model) shareAck(p int, recs []*shareRec, typs []history.AckType, out history.Type, applied bool) *action {
	at := recs[0].e.at
	sa := history.ShareAck{Group: shareGroup, Topic: at.topic, Partition: at.part}
	for i, r := range recs {
		sa.Acks = append(sa.Acks, history.ShareAckEntry{Offset: r.e.off, Type: typs[i]})
	}
	a := &action{proc: history.Client(p), f: history.FShareAck, out: out, raw: mustJSON(sa)}
	switch out {
	case history.Fail:
		a.err = "kafka server: INVALID_RECORD_STATE"
	case history.Info:
		a.err = "kafka: request timed out"
	}
	m.add(a)
	if !applied {
		return a
	}
	for i, r := range recs {
		switch typs[i] {
		case history.AckAccept, history.AckReject:
			m.unhold(r)
			r.done = true
		case history.AckRelease:
			m.shareRelease(r)
		case history.AckRenew:
			r.until = m.clock + m.share.lock
		}
	}
	return a
}

// shareAckAll has member p acknowledge all it holds with typ, ok, one op per partition.
func (m *Model) shareAckAll(p int, typ history.AckType) {
	m.shareExpire()
	for k := range m.share.parts {
		var recs []*shareRec
		for _, r := range m.share.held[p] {
			if r.e.at.part == int32(k) {
				recs = append(recs, r)
			}
		}
		if len(recs) > 0 {
			m.shareAck(p, recs, repeatAck(typ, len(recs)), history.OK, true)
		}
	}
}

func repeatAck(typ history.AckType, n int) []history.AckType {
	out := make([]history.AckType, n)
	for i := range out {
		out[i] = typ
	}
	return out
}

// shareCrash ends member p's instance: its share session closes, and the leader releases
// what it held (kept counts; archived at the limit). A new instance joins.
func (m *Model) shareCrash(p int) *action {
	a := m.add(&action{proc: history.Client(p), f: history.FCrash, out: history.OK,
		raw: mustJSON(history.Crash{Reason: "killed holding acquired records"})})
	for _, r := range slices.Clone(m.share.held[p]) {
		m.shareRelease(r)
	}
	m.shareSubscribe(p)
	return a
}

// shareStep is a burst of one to four member actions: a poll, an acknowledgement of one
// partition's records a member holds with the seed's mix of accept, release, reject and renew
// (its commit sometimes failing, or with the Unknown part unanswered), now and then a crash of
// a member holding records, a pause of 0.3 to 1.2 s within the locks (three a run at most),
// or, twice a run at most, a pause until the locks expire. The pauses add up to 8 s at most,
// far below verify.StuckAfter: no client's stall in them is a liveness finding.
func (m *Model) shareStep() {
	for range 1 + m.rng.IntN(4) {
		m.shareAction()
	}
}

func (m *Model) shareAction() {
	s := m.share
	p := m.shareMember()
	m.shareExpire()
	holds := len(s.held[p]) > 0
	switch x := m.rng.IntN(100); {
	case holds && x < 5:
		m.shareCrash(p)
	case holds && x < 12 && s.expiries < 2:
		// The member stalls past its locks; the next poll finds the records available.
		s.expiries++
		m.wait(s.lock + 100*time.Millisecond)
	case holds && x < 22 && s.pauses < 3:
		// The member works on its records for a while, within their locks: the other
		// members' polls meanwhile must not find them available.
		s.pauses++
		m.wait(300*time.Millisecond + time.Duration(m.rng.IntN(900))*time.Millisecond)
	case holds && x < 60:
		part := s.held[p][0].e.at.part
		var recs []*shareRec
		var typs []history.AckType
		for _, r := range s.held[p] {
			if r.e.at.part != part {
				continue
			}
			recs = append(recs, r)
			switch y := m.rng.IntN(100); {
			case y < s.releases:
				typs = append(typs, history.AckRelease)
			case y < 90:
				typs = append(typs, history.AckAccept)
			case y < 96:
				typs = append(typs, history.AckReject)
			default:
				typs = append(typs, history.AckRenew)
			}
		}
		out, applied := history.OK, true
		switch y := m.rng.IntN(20); {
		case y < 2:
			out, applied = history.Fail, false // nothing applied: the member holds them still
		case y < 4 && m.opts.Unknown:
			// Unanswered: applied or not. Not applied, the records stay the member's until
			// its lock expires or it crashes (its drain may accept them again).
			out, applied = history.Info, m.rng.IntN(2) == 0
		}
		m.shareAck(p, recs, typs, out, applied)
	default:
		m.sharePoll(p, 1+m.rng.IntN(3), nil)
	}
}

// shareDrain is the final drain: every member accepts what it holds, then the first member
// acquires and accepts everything left (but skip: a record a mutator has the group move past
// unfinished), and a share-state op per partition observes its start offset, the
// partition's end.
func (m *Model) shareDrain(skip *entry) {
	s := m.share
	s.drained = true
	for _, p := range m.shareMembers() {
		m.shareAckAll(p, history.AckAccept)
	}
	for {
		_, recs := m.sharePoll(procShareA, 5, skip)
		if len(recs) == 0 {
			break
		}
		m.shareAckAll(procShareA, history.AckAccept)
	}
	for k := range s.parts {
		end := int64(len(m.log(tp{topicShare, int32(k)}).entries))
		st := history.ShareState{Group: shareGroup, Topic: topicShare, Partition: int32(k)}
		in := mustJSON(st)
		st.StartOffset = &end
		s.states[int32(k)] = m.add(&action{proc: history.Client(procShareState), f: history.FShareState, out: history.OK,
			raw: in, rawDone: mustJSON(st)})
	}
}

// Share mutators. Each first ends what the clean run left disturbing (a killed broker: its
// fault interval would make the finding permitted), then sends a new record to the share
// topic and has the members mistreat it, or, in the near miss, come as close to that as the
// rules allow.

// shareSettle starts the broker the nemesis killed and sends a new record to a share
// partition, returning its state.
func (m *Model) shareSettle() *shareRec {
	if m.killed != 0 {
		m.restart()
	}
	t := tp{topicShare, int32(m.rng.IntN(m.share.parts))}
	return m.shareRecOf(m.send(m.producer(), t, history.OK, true).rec)
}

// shareFacts are the circumstances of a share finding: disturbed, or not. The model disturbs a
// finding by a leader change, or by a broker kill that only the double acquisition reads (it
// reads no more than whether something disturbed it), so the leader counts as lost with it.
func (m *Model) shareFacts(disturbed bool) guarantee.Facts {
	f := m.facts(0, "", topicShare, "")
	f.Disturbed, f.LeaderLost = disturbed, disturbed
	return f
}

// deliver has member p acquire r alone with count n.
func (m *Model) deliver(p int, r *shareRec, n int32) *action {
	return m.sharePollAt(p, []*shareRec{r}, []int32{n})
}

// ackOne has member p acknowledge r alone.
func (m *Model) ackOne(p int, r *shareRec, typ history.AckType, out history.Type) *action {
	return m.shareAck(p, []*shareRec{r}, []history.AckType{typ}, out, out != history.Fail)
}

// releasedToLimit delivers r limit times, each delivery released by its member (the last
// archives it); it returns the first delivery.
func (m *Model) releasedToLimit(r *shareRec) *action {
	var first *action
	for n := int32(1); n <= m.share.limit; n++ {
		p := m.shareMember()
		a := m.deliver(p, r, n)
		if first == nil {
			first = a
		}
		m.ackOne(p, r, history.AckRelease, history.OK)
	}
	return first
}

// blindTake has member p stop while it polls, holding nothing, its last fetch having acquired r
// unseen (the poll's outcome is unknown); the leader archives r at the limit when p closes,
// and p starts again.
func (m *Model) blindTake(p int, r *shareRec) {
	m.shareAckAll(p, history.AckAccept)
	v := mustJSON(history.SharePoll{Group: shareGroup})
	m.add(&action{proc: history.Client(p), f: history.FSharePoll, out: history.Info, raw: v, rawDone: v,
		err: "the member stopped while it polled"})
	m.unhold(r)
	r.count++
	m.shareRelease(r)
	m.shareSubscribe(p)
}

// shareLost: the group's start offset moves past a record no member finished: never
// delivered, or delivered and released below the limit. Near miss: a record released at the
// limit (archived), accepted by a commit whose outcome is unknown, or released one below the
// limit and then taken to it by a poll of unknown outcome.
func shareLost(m *Model) (*Injection, error) { return shareLostVariant(m, false) }
func shareLostNear(m *Model) (*Injection, error) {
	return shareLostVariant(m, true)
}

func shareLostVariant(m *Model, near bool) (*Injection, error) {
	r := m.shareSettle()
	if near {
		v := "released at the limit"
		switch m.rng.IntN(3) {
		case 0:
			m.releasedToLimit(r)
		case 1:
			v = "released below the limit, then taken to it unseen by a poll of unknown outcome"
			for n := int32(1); n < m.share.limit; n++ {
				p := m.shareMember()
				m.deliver(p, r, n)
				m.ackOne(p, r, history.AckRelease, history.OK)
			}
			m.blindTake(m.shareMember(), r)
		default:
			v = "accepted, the commit unanswered"
			p := m.shareMember()
			m.deliver(p, r, 1)
			m.ackOne(p, r, history.AckAccept, history.Info)
		}
		m.shareDrain(nil)
		return &Injection{Variant: v, Clean: true}, nil
	}
	v := m.truncVariant(topicShare)
	refs := []ref{showing(r.e, history.ReadUncommitted)}
	if m.rng.IntN(2) == 0 {
		v += ", never delivered"
	} else {
		v += ", released below the limit"
		p := m.shareMember()
		refs = append(refs, doneOf(m.deliver(p, r, 1)))
		m.ackOne(p, r, history.AckRelease, history.OK)
	}
	m.shareDrain(r.e)
	refs = append(refs, doneOf(m.share.states[r.e.at.part]))
	return &Injection{Variant: v, Facts: m.shareFacts(false), refs: refs}, nil
}

// shareRedelivered: a record accepted or rejected, acknowledged ok, is delivered again to
// another member. Near miss: the accept's commit went unanswered (and had not applied: the
// record comes back once the lock expired), or the record was released.
func shareRedelivered(m *Model) (*Injection, error) { return shareRedeliveredVariant(m, false) }
func shareRedeliveredNear(m *Model) (*Injection, error) {
	return shareRedeliveredVariant(m, true)
}

func shareRedeliveredVariant(m *Model, near bool) (*Injection, error) {
	r := m.shareSettle()
	p := m.shareMember()
	q := m.shareOther(p)
	m.deliver(p, r, 1)
	if near {
		v := "released"
		if m.rng.IntN(2) == 0 {
			v = "accepted, the commit unanswered"
			m.shareAck(p, []*shareRec{r}, []history.AckType{history.AckAccept}, history.Info, false)
			m.wait(m.share.lock + 100*time.Millisecond)
			m.shareExpire()
		} else {
			m.ackOne(p, r, history.AckRelease, history.OK)
		}
		m.deliver(q, r, 2)
		m.ackOne(q, r, history.AckAccept, history.OK)
		return &Injection{Variant: v, Clean: true}, nil
	}
	v := m.truncVariant(topicShare)
	typ := history.AckAccept
	if m.rng.IntN(3) == 0 {
		typ = history.AckReject
	}
	ack := m.ackOne(p, r, typ, history.OK)
	again := m.deliver(q, r, 2)
	m.ackOne(q, r, history.AckAccept, history.OK)
	return &Injection{Variant: v + ", " + string(typ), Facts: m.shareFacts(false), refs: []ref{doneOf(ack), doneOf(again)}}, nil
}

// shareDoubleAcquire: another member acquires a record 1 s into the first member's lock, or
// 1.2 s after the first member renewed its lock (ok), 2.4 s after its poll: past the lock it
// acquired with, within the renewed one. No acknowledgement or crash of the first member
// comes in between. With the nemesis, the 1 s form is sometimes run with a broker killed
// meanwhile: permitted. Near miss: it does so once the lock expired, after the first member
// crashed, or 2.4 s after the poll when the renew's commit failed (the lock expired unrenewed).
func shareDoubleAcquire(m *Model) (*Injection, error) { return shareDoubleAcquireVariant(m, false) }
func shareDoubleAcquireNear(m *Model) (*Injection, error) {
	return shareDoubleAcquireVariant(m, true)
}

func shareDoubleAcquireVariant(m *Model, near bool) (*Injection, error) {
	r := m.shareSettle()
	p := m.shareMember()
	q := m.shareOther(p)
	first := m.deliver(p, r, 1)
	refs := []ref{doneOf(first)}
	// renewed has p renew its lock 1.2 s into it, the commit's outcome out, and lets 1.2 s
	// more pass.
	renewed := func(out history.Type) *action {
		m.wait(1200 * time.Millisecond)
		a := m.ackOne(p, r, history.AckRenew, out)
		m.wait(1200 * time.Millisecond)
		m.shareExpire()
		return a
	}
	var v string
	disturbed := false
	switch x := m.rng.IntN(3); {
	case !near && x == 0:
		v = "2.4 s after the poll, 1.2 s after a renew"
		refs = append(refs, doneOf(renewed(history.OK)))
	case !near && x == 1 && m.opts.Nemesis:
		// Permitted: a broker is down while both acquisitions run (the share session of the
		// first member may have closed with a lost connection).
		v, disturbed = "1 s into the lock, a broker killed", true
		m.nemesisStep()
		m.wait(time.Second)
	case !near:
		v = "1 s into the lock"
		m.wait(time.Second)
	case x == 0:
		v = "after the lock expired"
		m.wait(m.share.lock + 100*time.Millisecond)
		m.shareExpire()
	case x == 1:
		v = "after the holder crashed"
		m.shareCrash(p)
	default:
		v = "2.4 s after the poll, its renew failed"
		renewed(history.Fail)
	}
	second := m.deliver(q, r, 2)
	if disturbed {
		m.restart()
	}
	m.ackOne(q, r, history.AckAccept, history.OK)
	if near {
		return &Injection{Variant: v, Clean: true}, nil
	}
	return &Injection{Variant: v, Facts: m.shareFacts(disturbed), refs: append(refs, doneOf(second))}, nil
}

// shareOverDelivered: a record released at every delivery up to the limit is delivered once
// more, with a count past the limit; or (permitted) delivered once more than the limit with
// no count past it, across a leader change that lost the unpersisted last count. Near miss: delivered exactly limit times, the last
// accepted or released (archived).
func shareOverDelivered(m *Model) (*Injection, error) { return shareOverDeliveredVariant(m, false) }
func shareOverDeliveredNear(m *Model) (*Injection, error) {
	return shareOverDeliveredVariant(m, true)
}

func shareOverDeliveredVariant(m *Model, near bool) (*Injection, error) {
	r := m.shareSettle()
	if near {
		v := "released at the limit"
		if m.rng.IntN(2) == 0 {
			v = "accepted at the limit"
			for n := int32(1); n < m.share.limit; n++ {
				p := m.shareMember()
				m.deliver(p, r, n)
				m.ackOne(p, r, history.AckRelease, history.OK)
			}
			p := m.shareMember()
			m.deliver(p, r, m.share.limit)
			m.ackOne(p, r, history.AckAccept, history.OK)
		} else {
			m.releasedToLimit(r)
		}
		return &Injection{Variant: v, Clean: true}, nil
	}
	if m.rng.IntN(3) == 0 {
		// Permitted: the delivery at the limit was never persisted, and across a leader
		// change the new leader counts from the persisted limit-1, so the record is delivered
		// once more than the limit, with the limit's count again (a repeated count too).
		m.shareLeaderSample(r.e.at, false)
		var first *action
		p := m.shareMember()
		for n := int32(1); n < m.share.limit; n++ {
			a := m.deliver(p, r, n)
			if first == nil {
				first = a
			}
			m.ackOne(p, r, history.AckRelease, history.OK)
		}
		m.deliver(p, r, m.share.limit)
		m.shareLeaderSample(r.e.at, true)
		m.shareCrash(p)
		q := m.shareOther(p)
		extra := m.deliver(q, r, m.share.limit)
		m.ackOne(q, r, history.AckAccept, history.OK)
		return &Injection{Variant: "once past the limit across a leader change", Facts: m.shareFacts(true),
			Implied: []guarantee.Anomaly{guarantee.ShareCountRegressed}, refs: []ref{doneOf(first), doneOf(extra)}}, nil
	}
	first := m.releasedToLimit(r)
	p := m.shareMember()
	extra := m.deliver(p, r, m.share.limit+1)
	m.ackOne(p, r, history.AckAccept, history.OK)
	return &Injection{Variant: "count past the limit", Facts: m.shareFacts(false), refs: []ref{doneOf(first), doneOf(extra)}}, nil
}

// shareLeaderSample has the watcher sample the leader of t's share partition, as it is, or
// after a change to another broker with a new epoch.
func (m *Model) shareLeaderSample(t tp, change bool) {
	l := m.leaders[t]
	if l == nil {
		l = &leadership{leader: 1}
		m.leaders[t] = l
	}
	if change {
		l.leader, l.epoch, l.first = 1+l.leader%nodes, l.epoch+1, nil
	}
	m.sample(t, m.alive(), l.leader)
}

// shareCountRegressed: a record released with count 1 is delivered again with count 1; or,
// released at counts 1 and 2 (so that the group's state holds 2), delivered with count 2
// again after its partition's leader changed. Near miss, permitted: the second delivery, of
// count 2, was never persisted (no release of it; its holder crashed), and across the leader
// change the new leader counts from the persisted 1, so 2 repeats.
func shareCountRegressed(m *Model) (*Injection, error) { return shareCountRegressedVariant(m, false) }
func shareCountRegressedNear(m *Model) (*Injection, error) {
	return shareCountRegressedVariant(m, true)
}

func shareCountRegressedVariant(m *Model, near bool) (*Injection, error) {
	r := m.shareSettle()
	p := m.shareMember()
	q := m.shareOther(p)
	if !near && m.opts.Nemesis && m.opts.ISR && m.rng.IntN(3) == 0 {
		return shareCountForgotten(m, r, p, q), nil
	}
	persisted := !near && m.rng.IntN(2) == 0
	if !near && !persisted {
		earlier := m.deliver(p, r, 1)
		m.ackOne(p, r, history.AckRelease, history.OK)
		later := m.deliver(q, r, 1)
		m.ackOne(q, r, history.AckAccept, history.OK)
		return &Injection{Variant: "a count repeated", Facts: m.shareFacts(false), refs: []ref{doneOf(earlier), doneOf(later)}}, nil
	}
	m.shareLeaderSample(r.e.at, false)
	m.deliver(p, r, 1)
	m.ackOne(p, r, history.AckRelease, history.OK)
	earlier := m.deliver(p, r, 2)
	v := "below a persisted count across a leader change"
	if persisted {
		m.ackOne(p, r, history.AckRelease, history.OK)
	} else {
		v = "an unpersisted count repeated across a leader change"
	}
	m.shareLeaderSample(r.e.at, true)
	if !persisted {
		m.shareCrash(p)
	}
	later := m.deliver(q, r, 2)
	m.ackOne(q, r, history.AckAccept, history.OK)
	return &Injection{Variant: v, Facts: m.shareFacts(!persisted), refs: []ref{doneOf(earlier), doneOf(later)}}, nil
}

// shareCountForgotten: the known issue share-count-forgotten. Member p is handed r and
// crashes holding it while a broker other than r's partition's leader is down (the share
// coordinator, as it may be); q is handed r with the same count, the leader unchanged.
func shareCountForgotten(m *Model, r *shareRec, p, q int) *Injection {
	m.shareLeaderSample(r.e.at, false)
	earlier := m.deliver(p, r, 1)
	leader := int(m.leaders[r.e.at].leader)
	m.kill(1 + (leader+m.rng.IntN(nodes-1))%nodes)
	m.shareCrash(p)
	later := m.deliver(q, r, 1)
	m.restart()
	m.ackOne(q, r, history.AckAccept, history.OK)
	f := m.shareFacts(false)
	f.Disturbed, f.HolderLeft, f.Faults.Kinds = true, true, []string{guarantee.FaultKind("kill")}
	return &Injection{Variant: "a count repeated after its holder crashed, a broker beside the leader killed", Facts: f,
		refs: []ref{doneOf(earlier), doneOf(later)}}
}

// NearMisses lists, for each share family, its mutator's near variant: a history as close to
// the anomaly as the family's rule allows, which must hold no finding (Injection.Clean), or
// only the finding the rule permits.
func NearMisses() []Mutator {
	return []Mutator{
		{guarantee.ShareLost, Needs{Share: true}, shareLostNear},
		{guarantee.ShareRedelivered, Needs{Share: true}, shareRedeliveredNear},
		{guarantee.ShareDoubleAcquire, Needs{Share: true}, shareDoubleAcquireNear},
		{guarantee.ShareOverDelivered, Needs{Share: true}, shareOverDeliveredNear},
		{guarantee.ShareCountRegressed, Needs{Share: true}, shareCountRegressedNear},
	}
}
