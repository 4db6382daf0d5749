package verify

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// Where a group member resumes: resume-skipped-ahead and resume-rewound-further.
//
// A member of a consumer group (a processor, whose transactions read: rpw inputs, a txn's
// reads; or a consumer whose polls name a group) starts its partitions afresh after an op that
// resets its positions: its first read, an assign (a rebalance), a crash (a new instance), a
// transaction that did not commit (the processor rewinds to the committed offsets, which
// Kafka's consumer does not do by itself: KAFKA-17582), a data-loss (its client moved the
// position, KIP-320), or any other op of its process. Its first record of a partition after
// that must be the first record its isolation level shows at or after the group's committed
// offset (for a data-loss, the offset the client said it resumes at). Every such resume is
// classified:
//
//   - at-committed: where some committed offset the history allows puts it;
//   - rewound-further: before every committed offset the history allows (it reads again what
//     the group had committed);
//   - skipped-ahead: past a record its isolation shows, at or after the largest committed
//     offset the history allows below its first read (the group never processes that record);
//   - unclassified: the history does not fix the committed offset (a plain consumer's group
//     that had read nothing: its reset policy is not in the history);
//   - superseded: another member of the group was assigned the partition after the member's
//     latest assign: the group no longer counts it as the partition's owner (a member the
//     coordinator dropped whose session has not yet ended), so the group's offsets do not bind
//     its reads, and its commits are fenced (KIP-447); not judged.
//
// What the group may have committed:
//   - A processor's group commits with its transactions: one that committed (ok) commits, for
//     each partition it read, the offset after the last record it read there; one whose outcome
//     is unknown (info) may have, at any time after it began. A commit that completed before the
//     member could have asked for the offsets (before the invoke of the member's op that
//     preceded the reset) is certain; of those, the one in force is the last, which is any whose
//     completion came after every other's invoke. A commit that completed later, but began
//     before the resume's read was recorded, may or may not have been seen.
//   - A plain consumer's group commits what its members read, some time after (a client
//     commits only what the history already shows): the committed offset is at most one past
//     the furthest record the group's consumers had returned before the resume's poll
//     completed, and the history says no more, since commits may lag. Such a resume is never
//     rewound-further, and is skipped-ahead only past that.
//
// Sinks' members are left out: their positions move with their stores (sinks.go judges them).

// resumeCause is what reset a member's positions before a resume.
type resumeCause uint8

const (
	causeStart resumeCause = iota
	causeAssign
	causeCrash
	causeAbort
	causeDataLoss
	causeOther
)

// resumeCauses names the causes in results.json, by resumeCause.
var resumeCauses = [...]results.ResumeCause{results.ResumeStart, results.ResumeAssign,
	results.ResumeCrash, results.ResumeAbort, results.ResumeDataLoss, results.ResumeOther}

// group is one consumer group, as its members' ops name it.
type group struct {
	name string
	// commits are its processors' certain commits by partition, in completion order; unsure
	// the ones whose outcome is unknown.
	commits map[uint32]*commitLog
	// read is, by partition, one past the furthest record its consumers' polls returned (0:
	// none).
	read []int64
	// latest: a member said (subscribe "reset":"latest") that the group starts where the log
	// ends when it has no committed offset, so a consumer's resume past its group's reads may be
	// that reset.
	latest bool
	// owner is, by partition, the latest ok assign op that gave it to a member.
	owner map[uint32]assignment
}

// assignment is an ok assign op (at ord) that gave a partition to process proc.
type assignment struct {
	proc int
	ord  uint32
}

// commitLog is a group's commits of one partition.
type commitLog struct {
	ok     []groupCommit
	unsure []groupCommit
	span   uint32 // the longest invoke-to-completion of an ok commit, in ordinals
}

// groupCommit is one transaction's commit of an offset: inv its invoke, done its completion
// (unsure commits: the info completion, after which it may still take effect), maxInv the
// latest invoke of the ok commits up to this one. An unsure commit is settled by the next ok
// commit of its process (settled: that one's completion; 0 while none): a transactional.id's
// transactions end in order, so by then it had taken effect or never would, and the later one
// overrides it.
type groupCommit struct {
	inv, done, maxInv uint32
	proc              int32
	settled           uint32
	off               int64
}

// A resume finding's ops are, in order: what reset the positions (none for a first read), the
// commit that set the offset it is held to (none: the log's start, or a data-loss's offset), the
// read, and (skipped-ahead) the first op that shows the skipped record.

// partCommit is the offset a transaction commits in one partition.
type partCommit struct {
	tp   uint32
	next int64
}

// resume is a member's first read of a partition after a reset, to be classified once every
// commit is known.
type resume struct {
	proc      int32
	group     uint32 // index into c.groups
	tp        uint32
	off       int64
	v         uint32 // the record read there
	ord       uint32 // the op that read it (the reads happened before it)
	from      uint32 // the earliest the member's client may have asked for the committed offsets
	causeOrd  uint32 // the op that reset its positions; none for its first read
	cause     resumeCause
	iso       int8
	processor bool
	// hi is, for a consumer, one past the furthest record its group had read (-1: none); seek
	// is where a data-loss said the client resumes (-1: none).
	hi, seek int64
	// superseded: another member was assigned the partition after this one's latest assign.
	superseded bool
}

// sinkProcess reports whether the header names process id as a sink's member or relay.
func (c *Checker) sinkProcess(id int) bool {
	for _, s := range c.cfg.Sinks {
		if slices.Contains(s.Processes, id) || (s.Relay != nil && *s.Relay == id) {
			return true
		}
	}
	return false
}

// groupOf returns the index of the group named name, adding it.
func (c *Checker) groupOf(name string) uint32 {
	for i := range c.groups {
		if c.groups[i].name == name {
			return uint32(i)
		}
	}
	c.groups = append(c.groups, group{name: name, commits: map[uint32]*commitLog{}})
	return uint32(len(c.groups) - 1)
}

// member is what an assign or subscribe op says of its consumer.
type member struct {
	Topics    []string `json:"topics"`
	Group     string   `json:"group"`
	Isolation string   `json:"isolation"`
	Reset     string   `json:"reset"`
}

// noteReset records what reset p's positions, the op at ord, for the resume check and for
// liveness (which follows a member's topics and a data-loss's truncation).
func (c *Checker) noteReset(p *proc, op *history.Op, ord uint32) {
	f, raw, ok := op.F, op.Value.Raw, op.Type == history.OK
	// A rebalance may have begun while the op before this one ran; a new instance starts
	// after its crash op.
	p.resetFrom, p.causeOrd = p.prevInv, ord
	switch f {
	case history.FAssign, history.FSubscribe:
		p.cause, p.seeks = causeOther, nil
		if f == history.FAssign {
			p.cause = causeAssign
		}
		var v member
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		if v.Group != "" {
			p.group = c.groupOf(v.Group) + 1
			g := &c.groups[p.group-1]
			g.latest = g.latest || v.Reset == "latest"
			if f == history.FAssign && ok && p.owned != nil {
				// ownership (called first) took the partitions it gives.
				if g.owner == nil {
					g.owner = map[uint32]assignment{}
				}
				for tp := range p.owned {
					g.owner[tp] = assignment{proc: p.id, ord: ord}
				}
			}
		}
		if c.liveOn && ok {
			c.liveMember(p, &v)
		}
	case history.FCrash:
		p.cause, p.seeks, p.resetFrom = causeCrash, nil, p.inv
	case history.FDataLoss:
		p.cause = causeDataLoss
		var d history.DataLoss
		if json.Unmarshal(raw, &d) != nil || d.Topic == "" {
			return
		}
		tp := c.parts.id(d.Topic, d.Partition)
		if d.ResetTo >= 0 {
			if p.seeks == nil {
				p.seeks = map[uint32]int64{}
			}
			p.seeks[tp] = d.ResetTo
		}
		if c.liveOn && ok {
			c.live.truncated(tp, op.Time, ord)
		}
	default:
		p.cause = causeOther
	}
}

// noteAbort records that p's transaction (invoked at inv, completed at ord) did not commit:
// the processor rewinds to the committed offsets.
func (c *Checker) noteAbort(p *proc, inv, ord uint32) {
	p.reset()
	p.resetFrom, p.causeOrd, p.cause = inv, ord, causeAbort
}

// resumeAt takes p's read of value v at offset off of tp, at isolation iso, in the op at ord:
// a resume when it is p's first read of tp since its positions were reset. A consumer's read
// (processor false) also moves its group's furthest read, after the resume is taken.
func (c *Checker) resumeAt(p *proc, tp uint32, off int64, v uint32, iso int, ord uint32, processor bool) {
	if p.group == 0 || p.sink || off < 0 {
		return
	}
	pp := p.at(tp, len(c.parts.ps))
	g := &c.groups[p.group-1]
	if pp.rgen != p.gen {
		pp.rgen = p.gen
		r := resume{proc: int32(p.id), group: p.group - 1, tp: tp, off: off, v: v, ord: ord, from: p.resetFrom,
			causeOrd: p.causeOrd, cause: p.cause, iso: int8(iso), processor: processor, hi: -1, seek: -1}
		if p.causeOrd == none {
			r.cause = causeStart
		}
		if s, ok := p.seeks[tp]; ok {
			r.seek = s
			delete(p.seeks, tp)
		}
		if int(tp) < len(g.read) && g.read[tp] > 0 {
			r.hi = g.read[tp]
		}
		if o, ok := g.owner[tp]; ok && p.owned != nil && o.proc != p.id && o.ord > p.ownedOrd {
			r.superseded = true
		}
		c.resumes = append(c.resumes, r)
	}
	if !processor {
		if int(tp) >= len(g.read) {
			g.read = append(g.read, make([]int64, int(tp)+1-len(g.read))...)
		}
		g.read[tp] = max(g.read[tp], off+1)
	}
}

// commitReads records the offsets transaction t of p (invoked at inv, completed at ord with
// outcome out) commits for its group: after the last record it read in each partition.
func (c *Checker) commitReads(p *proc, t *txn, inv, ord uint32, out uint8) {
	if p.group == 0 || t.inLen == 0 || t.abort || (out != outOK && out != outInfo) {
		return
	}
	g := &c.groups[p.group-1]
	// The offset after the last record read, per partition (a transaction reads few).
	c.commitScratch = c.commitScratch[:0]
	for _, v := range c.reads[t.inStart : t.inStart+t.inLen] {
		st := c.vals.at(v)
		if st.off < 0 {
			continue
		}
		if i := slices.IndexFunc(c.commitScratch, func(pc partCommit) bool { return pc.tp == st.tp }); i >= 0 {
			c.commitScratch[i].next = max(c.commitScratch[i].next, st.off+1)
		} else {
			c.commitScratch = append(c.commitScratch, partCommit{tp: st.tp, next: st.off + 1})
		}
	}
	for _, pc := range c.commitScratch {
		cl := g.commits[pc.tp]
		if cl == nil {
			cl = &commitLog{}
			g.commits[pc.tp] = cl
		}
		gc := groupCommit{inv: inv, done: ord, off: pc.next, proc: int32(p.id)}
		if out == outInfo {
			cl.unsure = append(cl.unsure, gc)
			continue
		}
		for j := range cl.unsure {
			if u := &cl.unsure[j]; u.proc == gc.proc && u.settled == 0 {
				u.settled = ord
			}
		}
		gc.maxInv = inv
		if n := len(cl.ok); n > 0 {
			gc.maxInv = max(gc.maxInv, cl.ok[n-1].maxInv)
		}
		cl.span = max(cl.span, ord-inv)
		cl.ok = append(cl.ok, gc)
	}
}

// committed lists the offsets r's group may have had committed in r's partition when r's
// member asked for them, each with the op that committed it; certain says whether some commit
// was certainly in force (else the group may have had none: the client's reset policy).
func (c *Checker) committed(r *resume) (cands []groupCommit, certain bool) {
	cl := c.groups[r.group].commits[r.tp]
	if cl == nil {
		return nil, false
	}
	// The certain commits are those completed before r.from; the last of them in force is
	// any whose completion came after every one's invoke.
	k, _ := slices.BinarySearchFunc(cl.ok, r.from, func(g groupCommit, from uint32) int {
		return cmp.Compare(g.done, from)
	})
	if k > 0 {
		certain = true
		latest := cl.ok[k-1].maxInv
		for j := k - 1; j >= 0 && cl.ok[j].done > latest; j-- {
			cands = append(cands, cl.ok[j])
		}
		if len(cands) == 0 {
			cands = append(cands, cl.ok[k-1])
		}
	}
	// Commits completed since, begun before r's read was recorded, may or may not have been
	// seen; one that began later cannot have been, nor can the reading transaction's own
	// (completed where its reads are recorded).
	for j := k; j < len(cl.ok) && cl.ok[j].done < r.ord+cl.span; j++ {
		if cl.ok[j].inv < r.ord && cl.ok[j].done != r.ord {
			cands = append(cands, cl.ok[j])
		}
	}
	for _, u := range cl.unsure {
		if u.inv < r.ord && (u.settled == 0 || u.settled >= r.from) {
			cands = append(cands, u)
		}
	}
	return cands, certain
}

// resumeClass is one resume's classification.
type resumeClass uint8

const (
	atCommitted resumeClass = iota
	rewoundFurther
	skippedAhead
	unclassified
	superseded
)

// checkResumes classifies every resume (once every read and final read is in: a gap is a skip
// only if the finished log knows a record in it) and reports the rewound and skipped ones.
func (c *Checker) checkResumes() {
	counts := map[resumeKey]*results.ResumeCount{}
	idx := map[uint32]*visibleIndex{}
	for i := range c.resumes {
		r := &c.resumes[i]
		class := c.classify(r, idx)
		k := resumeKey{cause: r.cause, processor: r.processor}
		rc := counts[k]
		if rc == nil {
			reader := results.ResumeConsumer
			if r.processor {
				reader = results.ResumeProcessor
			}
			rc = &results.ResumeCount{Reader: reader, Cause: resumeCauses[r.cause]}
			counts[k] = rc
		}
		switch class {
		case atCommitted:
			rc.AtCommitted++
		case rewoundFurther:
			rc.RewoundFurther++
		case skippedAhead:
			rc.SkippedAhead++
		case superseded:
			rc.Superseded++
		default:
			rc.Unclassified++
		}
	}
	c.resumeCounts = c.resumeCounts[:0]
	for _, rc := range counts {
		c.resumeCounts = append(c.resumeCounts, *rc)
	}
	slices.SortFunc(c.resumeCounts, func(a, b results.ResumeCount) int {
		return cmp.Or(cmp.Compare(a.Reader, b.Reader), cmp.Compare(a.Cause, b.Cause))
	})
	c.resumes = nil
}

type resumeKey struct {
	cause     resumeCause
	processor bool
}

// classify decides r's class, reporting a finding for a rewound or skipped resume.
func (c *Checker) classify(r *resume, idx map[uint32]*visibleIndex) resumeClass {
	if r.superseded {
		return superseded
	}
	if r.seek >= 0 {
		if r.off < r.seek {
			c.find(finding{a: guarantee.ResumeRewoundFurther, v: r.v, tp: r.tp, off: r.seek, off2: r.off, skipped: -1,
				ops: [4]uint32{r.causeOrd, none, r.ord, none}, proc: r.proc, iso: r.iso, cause: uint8(r.cause)})
			return rewoundFurther
		}
		return c.skipFrom(r, idx, r.seek, none)
	}
	if !r.processor {
		switch {
		case r.hi < 0:
			return unclassified
		case r.off <= r.hi:
			return atCommitted
		case c.groups[r.group].latest:
			// Its group may have committed nothing yet, and then starts at the log's end.
			if _, _, ok := c.firstVisibleBetween(idx, r.tp, r.hi-1, r.off, r.iso); ok {
				return unclassified
			}
			return atCommitted
		}
		return c.skipFrom(r, idx, r.hi, none)
	}
	cands, certain := c.committed(r)
	// below is the largest offset the group may have committed at or below r.off, by the op
	// at belowOrd; lo the smallest it may have committed, by the op at loOrd.
	below, belowOrd := int64(-1), none
	lo, loOrd := int64(-1), none
	for _, g := range cands {
		if loOrd == none || g.off < lo {
			lo, loOrd = g.off, g.done
		}
		if g.off <= r.off && (belowOrd == none || g.off > below) {
			below, belowOrd = g.off, g.done
		}
	}
	if belowOrd != none || loOrd == none {
		// From the largest commit at or below it, or from the log's start when the group had
		// certainly committed nothing (a processor then starts at the earliest offset).
		return c.skipFrom(r, idx, below, belowOrd)
	}
	// Every commit the group may have had lies past the read.
	if !certain {
		// It may also have had none: then the read is where it should be unless a record
		// lies before it.
		if _, _, ok := c.firstVisibleBetween(idx, r.tp, -1, r.off, r.iso); !ok {
			return atCommitted
		}
	}
	c.find(finding{a: guarantee.ResumeRewoundFurther, v: r.v, tp: r.tp, off: lo, off2: r.off, skipped: -1,
		ops: [4]uint32{r.causeOrd, loOrd, r.ord, none}, proc: r.proc, iso: r.iso, cause: uint8(r.cause)})
	return rewoundFurther
}

// skipFrom classifies r against the committed offset from (-1: the log's start), set by the op
// at fromOrd: skipped-ahead when a record r's isolation shows lies in [from, r.off).
func (c *Checker) skipFrom(r *resume, idx map[uint32]*visibleIndex, from int64, fromOrd uint32) resumeClass {
	if from >= r.off {
		return atCommitted
	}
	w, o, ok := c.firstVisibleBetween(idx, r.tp, from-1, r.off, r.iso)
	if !ok {
		return atCommitted
	}
	shown := c.vals.at(w).readOrd
	if shown == none {
		shown = c.vals.at(w).finalOrd
	}
	if shown == r.causeOrd {
		shown = none // the aborted step that read it: named once
	}
	c.find(finding{a: guarantee.ResumeSkippedAhead, v: w, tp: r.tp, off: from, off2: r.off, skipped: o,
		ops: [4]uint32{r.causeOrd, fromOrd, r.ord, shown}, proc: r.proc, iso: r.iso, cause: uint8(r.cause)})
	return skippedAhead
}

// describeResume says where a member resumed, after what, and against which committed offset.
func (c *Checker) describeResume(f *finding, part string) string {
	op := func(o uint32) string { return "op " + strconv.FormatInt(c.opIndex(o), 10) }
	after := "its first read"
	if f.ops[0] != none {
		after = fmt.Sprintf("%s (%s)", resumeCauses[f.cause], op(f.ops[0]))
	}
	read := f.ops[2]
	expected := "the log's start (the group had committed no offset)"
	switch {
	case resumeCause(f.cause) == causeDataLoss && f.a == guarantee.ResumeRewoundFurther:
		expected = fmt.Sprintf("offset %d, where its client said it resumed", f.off)
	case f.off >= 0 && f.ops[1] != none:
		expected = fmt.Sprintf("offset %d (committed by %s)", f.off, op(f.ops[1]))
	case f.off >= 0:
		expected = fmt.Sprintf("offset %d", f.off)
	}
	if f.a == guarantee.ResumeRewoundFurther {
		return fmt.Sprintf("process %d (%s) resumed %s at offset %d (%s) after %s, before its group's committed %s",
			f.proc, isoName(f.iso), part, f.off2, op(read), after, expected)
	}
	return fmt.Sprintf("process %d (%s) resumed %s at offset %d (%s) after %s, past %s at offset %d that it should have read from %s",
		f.proc, isoName(f.iso), part, f.off2, op(read), after, c.name(f.v), f.skipped, expected)
}
