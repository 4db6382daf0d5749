package histmodel

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// Needs are the parts of a run a mutator needs the generator to include.
type Needs struct {
	Transactions, RPW, Consumers, ISR bool
	// Sink: a sink whose mode does not relay (a relaying one would publish an effect applied
	// twice twice, a second finding); Outbox: an outbox sink and its relay.
	Sink, Outbox bool
	// Share: the share topic and its share group.
	Share bool
}

// Apply turns on in p the parts n needs, choosing a sink mode with rng where p's does not do.
func (n Needs) Apply(p Parts, rng *rand.Rand) Parts {
	p.Transactions = p.Transactions || n.Transactions
	p.RPW = p.RPW || n.RPW
	p.Consumers = p.Consumers || n.Consumers
	p.ISR = p.ISR || n.ISR
	p.Share = p.Share || n.Share
	info, _ := p.Sink.Info()
	switch {
	case n.Outbox:
		p.Sink = sink.Outbox
	case n.Sink && (p.Sink == "" || info.Relays):
		var plain []sink.Mode
		for _, in := range sink.Modes() {
			if !in.Relays {
				plain = append(plain, in.Mode)
			}
		}
		p.Sink = plain[rng.IntN(len(plain))]
	}
	return p
}

// Mutator injects exactly one anomaly of its family into a clean model, after the clean run:
// the anomaly's ops form a tail that no other observer of the model looks at, so that the
// history holds that one finding and nothing else.
type Mutator struct {
	Family guarantee.Anomaly
	Needs  Needs
	Inject func(m *Model) (*Injection, error)
}

// Injection is what a mutator did: the family, the op indices that prove the anomaly (once
// the history is rendered), and the circumstances the guarantee table judges it by.
type Injection struct {
	Family guarantee.Anomaly
	// Variant says which form of the anomaly the mutator chose, for messages.
	Variant string
	// Ops are the indices of the ops that prove the anomaly, set by Build.
	Ops []int64
	// Implied are the families the same anomaly always shows as too (a processor that resumes
	// past its committed offset leaves an input unprocessed: eos-missing): each holds one
	// finding as well, judged as the table says under Facts.
	Implied []guarantee.Anomaly
	Facts   guarantee.Facts
	// Clean: a near miss (NearMisses) whose history must hold no finding at all; a near miss
	// without it holds the one finding its Facts make permitted.
	Clean bool
	refs  []ref
}

// ref names an op of the evidence before the history has indices: an action's invoke or
// completion, the final read of a partition at an isolation that covers an offset (the last
// one when the offset lies past the scan's end), the first final read that shows a record, or
// the sink's final state.
type ref struct {
	act      *action
	done     bool
	covering *offsetAt
	showing  *entry
	iso      string // of showing; "" for any
	sinkRead bool
}

// offsetAt is an offset of a partition, as a scan at iso covers it.
type offsetAt struct {
	at  tp
	iso string
	off int64
}

func invokeOf(a *action) ref { return ref{act: a} }
func doneOf(a *action) ref   { return ref{act: a, done: true} }
func covering(at tp, iso string, off int64) ref {
	return ref{covering: &offsetAt{at: at, iso: iso, off: off}}
}
func showing(e *entry, iso string) ref { return ref{showing: e, iso: iso} }

// Mutators lists one mutator per anomaly family, in guarantee.Anomalies() order.
func Mutators() []Mutator {
	return []Mutator{
		{guarantee.LostWrite, Needs{}, lostWrite},
		{guarantee.LostObserved, Needs{Consumers: true}, lostObserved},
		{guarantee.Duplicate, Needs{}, duplicate},
		{guarantee.Reorder, Needs{}, reorder},
		{guarantee.InconsistentOffset, Needs{}, inconsistentOffset},
		{guarantee.AbortedRead, Needs{Transactions: true}, abortedRead},
		{guarantee.PartialTransaction, Needs{Transactions: true}, partialTransaction},
		{guarantee.ZombieWrite, Needs{Transactions: true}, zombieWrite},
		{guarantee.MergedTransaction, Needs{Transactions: true}, mergedTransaction},
		{guarantee.HangingTransaction, Needs{Transactions: true}, hangingTransaction},
		{guarantee.EOSMissing, Needs{RPW: true}, eosMissing},
		{guarantee.EOSDuplicate, Needs{RPW: true}, eosDuplicate},
		{guarantee.G1c, Needs{}, g1c},
		{guarantee.G1cProcess, Needs{}, g1cOrdered(true)},
		{guarantee.G1cRealtime, Needs{}, g1cOrdered(false)},
		{guarantee.PrecommittedRead, Needs{}, precommittedRead},
		{guarantee.UncommittedRead, Needs{}, uncommittedRead},
		{guarantee.FutureRead, Needs{}, futureRead},
		{guarantee.PhantomRead, Needs{}, phantomRead},
		{guarantee.G0, Needs{}, g0},
		{guarantee.NonmonotonicPoll, Needs{Consumers: true}, nonmonotonicPoll},
		{guarantee.PollSkip, Needs{Consumers: true}, pollSkip},
		{guarantee.PollUnowned, Needs{Consumers: true}, pollUnowned},
		{guarantee.ResumeSkippedAhead, Needs{RPW: true}, resumeSkippedAhead},
		{guarantee.ResumeRewoundFurther, Needs{RPW: true}, resumeRewoundFurther},
		{guarantee.UnexpectedAck, Needs{ISR: true}, unexpectedAck},
		{guarantee.MetadataLost, Needs{ISR: true}, metadataLost},
		{guarantee.EffectDuplicate, Needs{Sink: true}, effectDuplicate},
		{guarantee.EffectMissing, Needs{Sink: true}, effectMissing},
		{guarantee.OutboxLost, Needs{Outbox: true}, outboxLost},
		{guarantee.OutboxDuplicate, Needs{Outbox: true}, outboxDuplicate},
		{guarantee.ShareLost, Needs{Share: true}, shareLost},
		{guarantee.ShareRedelivered, Needs{Share: true}, shareRedelivered},
		{guarantee.ShareDoubleAcquire, Needs{Share: true}, shareDoubleAcquire},
		{guarantee.ShareOverDelivered, Needs{Share: true}, shareOverDelivered},
		{guarantee.ShareCountRegressed, Needs{Share: true}, shareCountRegressed},
	}
}

// MutatorFor returns the mutator of family a.
func MutatorFor(a guarantee.Anomaly) (Mutator, bool) {
	ms := Mutators()
	i := slices.IndexFunc(ms, func(m Mutator) bool { return m.Family == a })
	if i < 0 {
		return Mutator{}, false
	}
	return ms[i], true
}

// Build generates seed's history with opts' parts (and what mut needs), injects mut's anomaly
// when mut is not nil, and renders it; the injection's Ops are then set.
func Build(seed uint64, opts Options, mut *Mutator) (*History, *Injection, error) {
	if mut != nil {
		opts.Parts = mut.Needs.Apply(opts.Parts, rand.New(rand.NewPCG(seed, 0x4e45)))
	}
	m := Generate(seed, opts)
	var inj *Injection
	if mut != nil {
		var err error
		if inj, err = mut.Inject(m); err != nil {
			return nil, nil, fmt.Errorf("histmodel: %s mutator, seed %d: %w", mut.Family, seed, err)
		}
		inj.Family = mut.Family
	}
	h := m.Render()
	if inj != nil {
		ops, err := m.resolve(inj.refs)
		if err != nil {
			return nil, nil, fmt.Errorf("histmodel: %s mutator, seed %d: %w", mut.Family, seed, err)
		}
		inj.Ops = ops
	}
	return h, inj, nil
}

// resolve turns refs into op indices of the rendered history.
func (m *Model) resolve(refs []ref) ([]int64, error) {
	out := make([]int64, 0, len(refs))
	for _, r := range refs {
		switch {
		case r.act != nil && r.done:
			out = append(out, r.act.done)
		case r.act != nil:
			out = append(out, r.act.inv)
		case r.sinkRead && m.sinkRead != nil:
			out = append(out, m.sinkRead.done)
		case r.covering != nil:
			a := m.scanCovering(r.covering.at, r.covering.iso, r.covering.off)
			if a == nil {
				return nil, fmt.Errorf("no %s final read of %s covers offset %d", r.covering.iso, r.covering.at.key(), r.covering.off)
			}
			out = append(out, a.done)
		case r.showing != nil:
			a := m.scanShowing(r.showing, r.iso)
			if a == nil {
				return nil, fmt.Errorf("no final read shows %s", r.showing.value)
			}
			out = append(out, a.done)
		default:
			return nil, fmt.Errorf("an evidence ref names nothing")
		}
	}
	return out, nil
}

// scanCovering is the final read of at at iso whose range holds off, or the last one when off
// lies past every range (a scan to the high watermark covers what lies beyond it).
func (m *Model) scanCovering(at tp, iso string, off int64) *action {
	var last *action
	for _, a := range m.scans {
		if s := a.scan; s.at == at && s.iso == iso {
			if s.from <= off && off < s.end {
				return a
			}
			last = a
		}
	}
	if last != nil && off >= last.scan.end {
		return last
	}
	return nil
}

// scanShowing is the first final read (at iso, or any when "") whose records include e.
func (m *Model) scanShowing(e *entry, iso string) *action {
	for _, a := range m.scans {
		if iso != "" && a.scan.iso != iso {
			continue
		}
		for _, s := range a.scan.shown {
			if s == e {
				return a
			}
		}
	}
	return nil
}

// Variants of the header a mutator may judge its anomaly under, so that both the forbidding
// and the permitting rows of the table are exercised.

// uncleanTopic enables unclean leader election on topic: truncation is possible there.
func (m *Model) uncleanTopic(topic string) {
	if m.cfg.Topics == nil {
		m.cfg.Topics = map[string]kafkaconf.TopicConfig{}
	}
	m.cfg.Topics[topic] = kafkaconf.TopicConfig{UncleanLeaderElection: new(true)}
}

// producerDelivery gives process p its own delivery settings over the header's defaults.
func (m *Model) producerDelivery(p int, d kafkaconf.Delivery) {
	pc := m.cfg.Processes[p]
	pc.Delivery = d
	m.cfg.Processes[p] = pc
}

func (m *Model) acksLeader(p int) {
	m.producerDelivery(p, kafkaconf.Delivery{Acks: new(kafkaconf.AcksLeader)})
}

func (m *Model) notIdempotent(p int) {
	m.producerDelivery(p, kafkaconf.Delivery{Idempotence: new(false)})
}

// producer picks a plain producer; mainPart a partition of the main topic, otherPart another.
func (m *Model) producer() int { return procProducerA + m.rng.IntN(2) }
func (m *Model) mainPart() tp  { return tp{topicMain, int32(m.rng.IntN(m.opts.Partitions))} }
func (m *Model) otherPart(t tp) tp {
	return tp{topicMain, (t.part + 1 + int32(m.rng.IntN(m.opts.Partitions-1))) % int32(m.opts.Partitions)}
}

// sinkFacts are the circumstances of a sink finding about topic.
func (m *Model) sinkFacts(topic string) guarantee.Facts {
	f := m.facts(0, "", topic, "")
	f.Sink = m.opts.Sink
	return f
}

// writeVariant picks how the header judges a lost or reused write of producer p: as it is
// (forbidden), with p at acks=1, or with unclean election on the main topic (both permitted).
func (m *Model) writeVariant(p int) string {
	switch m.rng.IntN(3) {
	case 1:
		m.acksLeader(p)
		return "acks=1"
	case 2:
		m.uncleanTopic(topicMain)
		return "unclean"
	}
	return "strict"
}

// truncVariant picks whether topic may be truncated (unclean election) or not.
func (m *Model) truncVariant(topic string) string {
	if m.rng.IntN(3) == 0 {
		m.uncleanTopic(topic)
		return "unclean"
	}
	return "strict"
}

// lostWrite: an acknowledged send is cut from the end of its partition's log before anyone
// read it.
func lostWrite(m *Model) (*Injection, error) {
	p, t := m.producer(), m.mainPart()
	v := m.writeVariant(p)
	a := m.send(p, t, history.OK, true)
	a.rec.lost = true
	return &Injection{Variant: v, Facts: m.facts(p, guarantee.WriterSend, topicMain, ""),
		refs: []ref{invokeOf(a), doneOf(a), covering(t, history.ReadUncommitted, a.rec.off)}}, nil
}

// lostObserved: a send whose answer was lost (info) reached the log, a consumer read it, and
// the log was cut back under it: no acknowledged write is lost, an observed one is.
func lostObserved(m *Model) (*Injection, error) {
	p, t := m.producer(), m.mainPart()
	v := m.truncVariant(topicMain)
	a := m.send(p, t, history.Info, true)
	poll := m.pollOp(procAssigned, history.ReadCommitted, m.readFrom(procAssigned, t, history.ReadCommitted, -1, a.rec))
	a.rec.lost = true
	return &Injection{Variant: v, Facts: m.facts(p, guarantee.WriterSend, topicMain, ""),
		refs: []ref{doneOf(poll), covering(t, history.ReadUncommitted, a.rec.off)}}, nil
}

// duplicate: an acknowledged send's batch is appended again (a retry the broker did not
// recognise).
func duplicate(m *Model) (*Injection, error) {
	p, t := m.producer(), m.mainPart()
	v := "strict"
	if m.rng.IntN(2) == 0 {
		m.notIdempotent(p)
		v = "not idempotent"
	}
	a := m.send(p, t, history.OK, true)
	again := m.appendEntry(&entry{at: t, value: a.rec.value, key: a.rec.key, kind: kindPlain})
	return &Injection{Variant: v, Facts: m.facts(p, guarantee.WriterSend, topicMain, ""),
		refs: []ref{doneOf(a), showing(again, "")}}, nil
}

// reorder: two sends of one producer in flight together land in the other order.
func reorder(m *Model) (*Injection, error) {
	p, t := m.producer(), m.mainPart()
	v := "strict"
	if m.rng.IntN(2) == 0 {
		m.notIdempotent(p)
		v = "not idempotent"
	}
	first, second := m.newRecord(p, t, kindPlain), m.newRecord(p, t, kindPlain)
	a, b := m.sendAction(p, first, history.OK), m.sendAction(p, second, history.OK)
	a.async, b.async = true, true
	m.invokeOnly(a)
	m.invokeOnly(b)
	m.appendEntry(second)
	m.appendEntry(first)
	m.complete(b)
	m.complete(a)
	return &Injection{Variant: v, Facts: m.facts(p, guarantee.WriterSend, topicMain, ""),
		refs: []ref{invokeOf(a), invokeOf(b), doneOf(b)}}, nil
}

// inconsistentOffset: an acknowledged record is at its offset when the read_uncommitted scan
// runs; the log is cut back and refilled by another producer's record (whose answer was lost)
// before the read_committed scan, which finds that one there.
func inconsistentOffset(m *Model) (*Injection, error) {
	p, t := m.producer(), m.mainPart()
	q := procProducerA + procProducerB - p
	v := "strict"
	if m.rng.IntN(2) == 0 {
		m.acksLeader(p)
		v = "acks=1"
	}
	a := m.send(p, t, history.OK, true)
	other := m.newRecord(q, t, kindPlain)
	other.off = a.rec.off
	a.rec.rcSees = other
	m.add(m.sendAction(q, other, history.Info))
	return &Injection{Variant: v, Facts: m.facts(p, guarantee.WriterSend, topicMain, ""),
		refs: []ref{doneOf(a), showing(other, history.ReadCommitted)}}, nil
}

// freshConsumer starts a consumer process of its own, assigned to t alone.
func (m *Model) freshConsumer(t tp, iso string) {
	m.add(&action{proc: history.Client(procReader), f: history.FAssign, out: history.OK,
		raw: mustJSON(map[string]any{"topic": t.topic, "partitions": []int32{t.part}, "isolation": iso})})
}

// abortedRead: a consumer is shown a record that never committed: an aborted transaction's
// at read_committed (forbidden) or read_uncommitted (permitted), or a failed send's.
func abortedRead(m *Model) (*Injection, error) {
	t := m.mainPart()
	iso, writer, kind := history.ReadCommitted, procTxn, guarantee.WriterTxn
	var w *action
	var target *entry
	v := m.rng.IntN(3)
	switch v {
	case 0, 1:
		if v == 1 {
			iso = history.ReadUncommitted
		}
		w = m.txnOp([]tp{t, m.mainPart()}, history.IntentAbort, history.Fail, false, true)
		target = w.txn.recs[0]
	default:
		writer, kind = m.producer(), guarantee.WriterSend
		w = m.send(writer, t, history.Fail, true)
		target = w.rec
	}
	m.freshConsumer(t, iso)
	poll := m.pollOp(procReader, iso, []*entry{target})
	return &Injection{Variant: []string{"read_committed", "read_uncommitted", "failed send"}[v],
		Facts: m.facts(writer, kind, topicMain, kafkaconf.Isolation(iso)),
		refs:  []ref{invokeOf(w), doneOf(w), doneOf(poll)}}, nil
}

// partialTransaction: a transaction whose commit went unanswered (info) got a commit marker
// in one partition and an abort marker in the other.
func partialTransaction(m *Model) (*Injection, error) {
	v := m.truncVariant(topicMain)
	t := m.mainPart()
	a := m.txnOp([]tp{t, m.otherPart(t)}, history.IntentCommit, history.Info, true, true)
	a.txn.recs[1].abortedHere = true
	return &Injection{Variant: v, Facts: m.facts(0, "", topicMain, ""),
		refs: []ref{invokeOf(a), doneOf(a), showing(a.txn.recs[0], "")}}, nil
}

// zombieWrite: a second instance initialises the transactional producer's id, and the first
// instance's next transaction commits all the same.
func zombieWrite(m *Model) (*Injection, error) {
	if !slices.ContainsFunc(m.txns, func(tx *txn) bool { return tx.proc == procTxn }) {
		// The first instance must hold the id before the second takes it.
		m.txnOp([]tp{m.mainPart()}, history.IntentCommit, history.OK, true, true)
	}
	fence := m.add(&action{proc: history.Client(procFenced), f: "init", out: history.OK,
		raw: mustJSON(map[string]any{"txn_id": txnIDOf(procTxn)})})
	a := m.txnOp([]tp{m.mainPart()}, history.IntentCommit, history.OK, true, true)
	return &Injection{Facts: m.facts(0, "", topicMain, ""),
		refs: []ref{doneOf(fence), invokeOf(a), doneOf(a), showing(a.txn.recs[0], "")}}, nil
}

// mergedTransaction: a transaction reported over wrote no marker, and the same id's next
// transaction's records follow its own in a shared partition: one marker ended both. In the
// third form another transaction of the id, on another partition, comes between the two.
func mergedTransaction(m *Model) (*Injection, error) {
	t := m.mainPart()
	var first, second *action
	v := m.rng.IntN(3)
	switch v {
	case 0:
		first = m.txnOp([]tp{t, t}, history.IntentCommit, history.Info, true, false)
		second = m.txnOp([]tp{t}, history.IntentCommit, history.OK, true, true)
	case 1:
		first = m.txnOp([]tp{t}, history.IntentAbort, history.Fail, false, false)
		second = m.txnOp([]tp{t}, history.IntentAbort, history.Fail, false, true)
	default:
		first = m.txnOp([]tp{t}, history.IntentCommit, history.Info, true, false)
		m.txnOp([]tp{m.otherPart(t)}, history.IntentCommit, history.OK, true, true)
		second = m.txnOp([]tp{t}, history.IntentCommit, history.OK, true, true)
	}
	return &Injection{Variant: []string{"unknown then committed", "aborted twice", "skipped the partition between"}[v],
		Facts: m.facts(0, "", topicMain, ""),
		refs:  []ref{invokeOf(first), doneOf(first), invokeOf(second), doneOf(second)}}, nil
}

// hangingTransaction: a transactional record written outside any transaction (the nemesis's
// stray produce) is never ended by a marker; the read_committed scan stops at it.
func hangingTransaction(m *Model) (*Injection, error) {
	t := m.mainPart()
	e := m.appendEntry(&entry{at: t, value: "stray-1", key: "stray", kind: kindStray})
	a := m.add(&action{proc: history.NemesisP(), f: history.FStrayTxnProduce, out: history.OK,
		raw:     mustJSON(map[string]any{"topic": t.topic, "partition": t.part}),
		rawDone: mustJSON(history.Faults{Records: []history.Record{e.record()}})})
	if m.rng.IntN(2) == 0 {
		m.send(m.producer(), t, history.OK, true) // shown by read_uncommitted alone
	}
	return &Injection{Facts: m.facts(0, "", topicMain, ""),
		refs: []ref{doneOf(a), covering(t, history.ReadCommitted, e.off)}}, nil
}

// rpwThrough is the processor's backlog up to and including e.
func (m *Model) rpwThrough(e *entry) []*entry {
	in := m.rpwBacklog(0)
	return in[:slices.Index(in, e)+1]
}

// eosMissing: after an aborted step the processor resumes past the aborted step's input
// instead of at it, so a committed input in the processed range is never processed.
func eosMissing(m *Model) (*Injection, error) {
	v := m.truncVariant(topicMain)
	p := m.producer()
	a, b, c := m.send(p, rpwInput(), history.OK, true), m.send(p, rpwInput(), history.OK, true), m.send(p, rpwInput(), history.OK, true)
	m.rpwOp(m.rpwThrough(a.rec), history.OK, true)
	m.rpwOp([]*entry{b.rec}, history.Fail, false)
	m.rpwOp([]*entry{c.rec}, history.OK, true)
	return &Injection{Variant: v, Facts: m.facts(0, "", topicMain, ""),
		refs: []ref{invokeOf(b), showing(b.rec, "")}, Implied: []guarantee.Anomaly{guarantee.ResumeSkippedAhead}}, nil
}

// eosDuplicate: an input is processed by two committed steps: after a crash whose restart
// did not find the first step's offsets, or after a step whose commit went unanswered but
// took effect.
func eosDuplicate(m *Model) (*Injection, error) {
	if m.rng.IntN(2) == 0 {
		a := m.send(m.producer(), rpwInput(), history.OK, true)
		first := m.rpwOp(m.rpwThrough(a.rec), history.OK, true)
		m.rpwCrash()
		// The new instance reads the committed input again: it resumed before its group's
		// committed offset too.
		second := m.rpwOp([]*entry{a.rec}, history.OK, true)
		return &Injection{Variant: "crash", Facts: m.facts(0, "", topicMain, ""), Implied: []guarantee.Anomaly{guarantee.ResumeRewoundFurther},
			refs: []ref{invokeOf(first), doneOf(first), invokeOf(second), doneOf(second)}}, nil
	}
	// The backlog is processed first, so that the unknown step reads one input: had it not
	// committed, the second step would be where the processor should resume.
	if in := m.rpwBacklog(0); len(in) > 0 {
		m.rpwOp(in, history.OK, true)
	}
	a := m.send(m.producer(), rpwInput(), history.OK, true)
	first := m.rpwOp([]*entry{a.rec}, history.Info, true)
	second := m.rpwOp([]*entry{a.rec}, history.OK, true)
	return &Injection{Variant: "unknown commit", Facts: m.facts(0, "", topicMain, ""),
		refs: []ref{invokeOf(first), doneOf(first), invokeOf(second), doneOf(second)}}, nil
}

// rpwCrash ends the processor's instance; the next step is a new instance's.
func (m *Model) rpwCrash() *action {
	return m.add(&action{proc: history.Client(procRPW), f: history.FCrash, out: history.OK,
		raw: mustJSON(history.Crash{Reason: "killed", TxnID: txnIDOf(procRPW)})})
}

// resumeSkippedAhead: a group member starts a partition past a record it should have read.
// Either the group consumer, after a rebalance, resumes beyond everything its group had read
// (it can have committed no further); or the processor, after an aborted step, resumes past
// the aborted input instead of at its committed offset, and aborts that step too (a committed
// one would also be an eos-missing).
func resumeSkippedAhead(m *Model) (*Injection, error) {
	v := m.truncVariant(topicMain)
	p := m.producer()
	if m.opts.Consumers && (!m.opts.RPW || m.rng.IntN(2) == 0) {
		t := m.mainPart()
		x, skipped, y := m.send(p, t, history.OK, true), m.send(p, t, history.OK, true), m.send(p, t, history.OK, true)
		iso := m.consumerIso(procGroup)
		m.pollOp(procGroup, iso, m.readFrom(procGroup, t, iso, -1, x.rec))
		reb := m.rebalance()
		m.pos[procGroup][t] = skipped.rec.off + 1
		after := m.pollOp(procGroup, iso, m.readFrom(procGroup, t, iso, -1, y.rec))
		return &Injection{Variant: v + ", a consumer after a rebalance", Facts: m.facts(0, "", topicMain, kafkaconf.Isolation(iso)),
			refs: []ref{doneOf(reb), doneOf(after), showing(skipped.rec, "")}}, nil
	}
	z := m.send(p, rpwInput(), history.OK, true)
	commit := m.rpwOp(m.rpwThrough(z.rec), history.OK, true)
	skipped, b := m.send(p, rpwInput(), history.OK, true), m.send(p, rpwInput(), history.OK, true)
	aborted := m.rpwOp([]*entry{skipped.rec}, history.Fail, false)
	resumed := m.rpwOp([]*entry{b.rec}, history.Fail, false)
	return &Injection{Variant: v + ", the processor after an abort", Facts: m.facts(0, "", topicMain, kafkaconf.ReadCommitted),
		refs: []ref{doneOf(aborted), doneOf(commit), invokeOf(resumed), invokeOf(aborted)}}, nil
}

// resumeRewoundFurther: the processor commits a step, then (a crash, or an aborted step later)
// reads the committed input again, before its group's committed offset, in a step that aborts
// (a committed one would also be an eos-duplicate).
func resumeRewoundFurther(m *Model) (*Injection, error) {
	v := m.truncVariant(topicMain)
	p := m.producer()
	a := m.send(p, rpwInput(), history.OK, true)
	commit := m.rpwOp(m.rpwThrough(a.rec), history.OK, true)
	var reset *action
	if m.rng.IntN(2) == 0 {
		v += ", after a crash"
		reset = m.rpwCrash()
	} else {
		v += ", after an aborted step"
		b := m.send(p, rpwInput(), history.OK, true)
		reset = m.rpwOp([]*entry{b.rec}, history.Fail, false)
	}
	again := m.rpwOp([]*entry{a.rec}, history.Fail, false)
	return &Injection{Variant: v, Facts: m.facts(0, "", topicMain, kafkaconf.ReadCommitted),
		refs: []ref{doneOf(reset), doneOf(commit), invokeOf(again)}}, nil
}

// nonmonotonicPoll: the assigned consumer reads a record, then is returned it again with no
// rebalance or seek between.
func nonmonotonicPoll(m *Model) (*Injection, error) {
	v := m.truncVariant(topicMain)
	t := m.mainPart()
	a := m.send(m.producer(), t, history.OK, true)
	first := m.pollOp(procAssigned, history.ReadCommitted, m.readFrom(procAssigned, t, history.ReadCommitted, -1, a.rec))
	again := m.pollOp(procAssigned, history.ReadCommitted, []*entry{a.rec})
	return &Injection{Variant: v, Facts: m.facts(0, "", topicMain, kafkaconf.ReadCommitted),
		refs: []ref{doneOf(first), doneOf(again)}}, nil
}

// pollSkip: the assigned consumer's position jumps over a record it should have read. What
// shows that record is the group consumer's poll, or only the final reads.
func pollSkip(m *Model) (*Injection, error) {
	v := m.truncVariant(topicMain)
	t, p := m.mainPart(), m.producer()
	x, skipped, y := m.send(p, t, history.OK, true), m.send(p, t, history.OK, true), m.send(p, t, history.OK, true)
	before := m.pollOp(procAssigned, history.ReadCommitted, m.readFrom(procAssigned, t, history.ReadCommitted, -1, x.rec))
	m.pos[procAssigned][t] = skipped.rec.off + 1
	after := m.pollOp(procAssigned, history.ReadCommitted, m.readFrom(procAssigned, t, history.ReadCommitted, -1, y.rec))
	proof := showing(skipped.rec, "")
	if m.rng.IntN(2) == 0 {
		iso := m.consumerIso(procGroup)
		proof = doneOf(m.pollOp(procGroup, iso, m.readFrom(procGroup, t, iso, -1, skipped.rec)))
		v += ", read by another consumer"
	} else {
		v += ", shown by the final reads alone"
	}
	return &Injection{Variant: v, Facts: m.facts(0, "", topicMain, kafkaconf.ReadCommitted),
		refs: []ref{doneOf(before), doneOf(after), proof}}, nil
}

// pollUnowned: a rebalance leaves a partition out of the group consumer's assignment, and its
// next poll still returns a record of it (a client that returned what it fetched before the
// partition was revoked or lost); the next generation gives the whole topic back.
func pollUnowned(m *Model) (*Injection, error) {
	t, p := m.mainPart(), m.producer()
	a := m.send(p, t, history.OK, true)
	var rest []int
	for _, n := range m.partitionList() {
		if int32(n) != t.part {
			rest = append(rest, n)
		}
	}
	v := "the partition revoked"
	if len(rest) == 0 {
		v = "every partition lost"
	}
	narrowed := m.assignGroup(rest)
	iso := m.consumerIso(procGroup)
	read := m.pollOp(procGroup, iso, m.readFrom(procGroup, t, iso, -1, a.rec))
	m.rebalance()
	return &Injection{Variant: v, Facts: m.facts(0, "", topicMain, ""), refs: []ref{doneOf(narrowed), doneOf(read)}}, nil
}

// unexpectedAck: the watcher sees the ISR at the leader alone, below min ISR 2, before an
// acks=all send that was acknowledged, and still long enough after it that no expansion the
// metadata had yet to show explains the ack.
func unexpectedAck(m *Model) (*Injection, error) {
	t, p := m.mainPart(), m.producer()
	l := m.leaders[t]
	below := []int{int(l.leader)}
	since := m.sampleAt(t, below, l.leader, l.epoch)
	a := m.send(p, t, history.OK, true)
	m.wait(verify.ISRCommitLag)
	still := m.sampleAt(t, below, l.leader, l.epoch)
	m.sample(t, m.alive(), l.leader)
	return &Injection{Facts: m.facts(p, guarantee.WriterSend, topicMain, ""),
		refs: []ref{doneOf(since), invokeOf(a), doneOf(a), doneOf(still)}}, nil
}

// metadataLost: the metadata the watcher samples forgets a committed leader change: the
// current epoch names a second leader, or the epoch goes back to the one before and stays.
func metadataLost(m *Model) (*Injection, error) {
	t := m.mainPart()
	l := m.leaders[t]
	var others []int
	for _, n := range m.alive() {
		if int32(n) != l.leader {
			others = append(others, n)
		}
	}
	other := int32(others[m.rng.IntN(len(others))])
	if m.rng.IntN(2) == 0 {
		first := l.first
		s := m.sampleAt(t, m.alive(), other, l.epoch)
		l.leader = other
		return &Injection{Variant: "epoch reused", Facts: m.facts(0, "", topicMain, ""),
			refs: []ref{doneOf(first), doneOf(s)}}, nil
	}
	old, oldEpoch := l.leader, l.epoch
	l.leader, l.epoch, l.first = other, l.epoch+1, nil
	m.sample(t, m.alive(), l.leader)
	high := l.first
	// The cluster settles on the epoch before, with its leader: later samples stay there.
	l.leader, l.epoch = old, oldEpoch
	back := m.sample(t, m.alive(), l.leader)
	return &Injection{Variant: "epoch gone back", Facts: m.facts(0, "", topicMain, ""),
		refs: []ref{doneOf(high), doneOf(back)}}, nil
}

// sinkDrain has the sink apply every record of its topic it has not applied, committing
// after each.
func (m *Model) sinkDrain() {
	l := m.log(tp{topicSinkIn, 0})
	for ; m.sink.pos < int64(len(l.entries)); m.sink.pos++ {
		m.effect(l.entries[m.sink.pos])
		m.sink.committed = m.sink.pos + 1
	}
}

// sinkApplyNew sends a new record to the sink's topic and has the sink apply it (and all
// before it), returning the record and its effect.
func (m *Model) sinkApplyNew() (*entry, *action) {
	m.sinkDrain()
	e := m.send(m.producer(), tp{topicSinkIn, 0}, history.OK, true).rec
	m.sinkDrain()
	return e, m.sink.firstEffect[e.value]
}

// effectDuplicate: the sink crashes after an input's effect and before its offset commit,
// and its store applies the replayed input again.
func effectDuplicate(m *Model) (*Injection, error) {
	e, first := m.sinkApplyNew()
	m.add(&action{proc: history.Client(procSink), f: history.FCrash, out: history.OK,
		raw: mustJSON(history.Crash{Reason: "killed before its offset commit"})})
	second := m.effectApplied(e, true)
	return &Injection{Variant: string(m.opts.Sink), Facts: m.sinkFacts(topicSinkIn),
		refs: []ref{doneOf(first), doneOf(second), {sinkRead: true}}}, nil
}

// effectMissing: the sink commits a position past an input it never applied.
func effectMissing(m *Model) (*Injection, error) {
	v := m.truncVariant(topicSinkIn)
	m.sinkDrain()
	p, in := m.producer(), tp{topicSinkIn, 0}
	skipped := m.send(p, in, history.OK, true).rec
	m.send(p, in, history.OK, true)
	m.sink.pos = skipped.off + 1
	m.sinkDrain()
	return &Injection{Variant: string(m.opts.Sink) + ", " + v, Facts: m.sinkFacts(topicSinkIn),
		refs: []ref{showing(skipped, ""), {sinkRead: true}}}, nil
}

// relayUpTo has the relay publish the outbox rows up to the nth.
func (m *Model) relayUpTo(n int) {
	for m.sink.published < n {
		m.relayStep()
	}
}

// outboxLost: a business row's outbox row is marked sent without its publish, or its
// acknowledged publish is cut from the outbox topic.
func outboxLost(m *Model) (*Injection, error) {
	v := m.truncVariant(topicOutbox)
	e, effect := m.sinkApplyNew()
	m.relayUpTo(len(m.sink.events) - 1)
	refs := []ref{doneOf(effect), {sinkRead: true}}
	if m.rng.IntN(2) == 0 {
		m.sink.unpublished[e.value] = true
		v += ", never published"
	} else {
		pub, rec := m.publish(e, true)
		m.sink.published++
		rec.lost = true
		refs = append(refs, doneOf(pub))
		v += ", published and cut"
	}
	return &Injection{Variant: v, Facts: m.sinkFacts(topicOutbox), refs: refs}, nil
}

// outboxDuplicate: the relay crashes after an acknowledged publish and before marking the row
// sent, and publishes it again.
func outboxDuplicate(m *Model) (*Injection, error) {
	e, _ := m.sinkApplyNew()
	m.relayUpTo(len(m.sink.events) - 1)
	first, _ := m.publish(e, true)
	m.add(&action{proc: history.Client(procRelay), f: history.FCrash, out: history.OK,
		raw: mustJSON(history.Crash{Reason: "killed before marking the row sent"})})
	second, _ := m.publish(e, true)
	m.sink.published++
	return &Injection{Facts: m.sinkFacts(topicOutbox), refs: []ref{doneOf(first), doneOf(second)}}, nil
}
