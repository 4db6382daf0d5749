package histmodel

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/results"
)

// Liveness mutators: after the clean run, every reader catches up and the nemesis heals what
// is broken; then one client goes without progress, with work available to it, for
// verify.StuckAfter and two seconds (StuckWait) before it progresses again, which the checker
// reports as that client stuck. The near variant waits StuckAfter less two seconds
// (NearWait): a stall the checker must not report. They are kept apart from Mutators, whose
// table follows the safety families of guarantee.Anomalies().

// StuckWait and NearWait are how long a liveness mutator's client goes without progress.
const (
	StuckWait = verify.StuckAfter + 2*time.Second
	NearWait  = verify.StuckAfter - 2*time.Second
)

// LivenessMutator makes one client stuck: Inject has it go wait without progress, with work
// available.
type LivenessMutator struct {
	Family results.LivenessFamily
	Needs  Needs
	Inject func(m *Model, wait time.Duration) (*LiveInjection, error)
}

// LiveInjection is what a liveness mutator did: its family, the variant and the op indices of
// the evidence (the op that showed the work, the op that ended the stall), set by BuildLive.
type LiveInjection struct {
	Family  results.LivenessFamily
	Variant string
	Wait    time.Duration
	Ops     []int64
	refs    []ref
}

// LivenessMutators lists one mutator per stuck family, in results.StuckFamilies() order.
func LivenessMutators() []LivenessMutator {
	return []LivenessMutator{
		{results.StuckProducer, Needs{}, stuckProducer},
		{results.StuckConsumer, Needs{Consumers: true}, stuckConsumer},
		{results.StuckProcessor, Needs{RPW: true}, stuckProcessor},
		{results.StuckSink, Needs{Sink: true}, stuckSink},
	}
}

// LiveBuild says how BuildLive builds a history: near makes the stall StuckAfter less two
// seconds instead of two more; bounds, when not nil, are the header's stated liveness bounds.
type LiveBuild struct {
	Near   bool
	Bounds *history.LivenessBounds
	// HealAfter, when not zero, has the nemesis kill a broker as the stall begins and start
	// it HealAfter into the stall, which lasts that much longer: stuck time counts from the
	// last heal. The history then has the nemesis.
	HealAfter time.Duration
	// UnavailableFor, when not zero, has the watcher show the stalled partition without a
	// leader as the stall begins and with one UnavailableFor into it, which lasts that much
	// longer: stuck time counts while the partition could serve. The history then has the ISR
	// watch.
	UnavailableFor time.Duration
}

// BuildLive generates seed's history with opts' parts (and what mut needs), makes mut's client
// stuck and renders it; the injection's Ops are then set.
func BuildLive(seed uint64, opts Options, mut LivenessMutator, b LiveBuild) (*History, *LiveInjection, error) {
	opts.Parts = mut.Needs.Apply(opts.Parts, rand.New(rand.NewPCG(seed, 0x4e45)))
	opts.Nemesis = opts.Nemesis || b.HealAfter > 0
	opts.ISR = opts.ISR || b.UnavailableFor > 0
	m := Generate(seed, opts)
	m.healAfter, m.unavailableFor = b.HealAfter, b.UnavailableFor
	if b.Bounds != nil {
		m.cfg.Liveness = b.Bounds
	}
	wait := StuckWait
	if b.Near {
		wait = NearWait
	}
	inj, err := mut.Inject(m, wait)
	if err != nil {
		return nil, nil, fmt.Errorf("histmodel: %s mutator, seed %d: %w", mut.Family, seed, err)
	}
	inj.Family, inj.Wait = mut.Family, wait
	h := m.Render()
	if inj.Ops, err = m.resolve(inj.refs); err != nil {
		return nil, nil, fmt.Errorf("histmodel: %s mutator, seed %d: %w", mut.Family, seed, err)
	}
	return h, inj, nil
}

// stall lets d pass in n parts, each after a run of step (when not nil): a client that keeps
// trying without progress on partition at, from the start of the wait. It lasts longer, so
// that d is still what counts as stuck, with healAfter set (a broker is killed as the stall
// begins and started healAfter into it: stuck time counts from the last heal) or with
// unavailableFor set (the watcher shows at without a leader as the stall begins and with one
// unavailableFor into it: stuck time counts while the partition could serve).
func (m *Model) stall(at tp, d time.Duration, n int, step func()) {
	var extra time.Duration
	var end func()
	switch {
	case m.healAfter > 0:
		extra, end = m.healAfter, m.restart
		m.nemesisStep() // settle started every broker: this kills one
	case m.unavailableFor > 0 && m.leaders[at] != nil:
		l := m.leaders[at]
		extra, end = m.unavailableFor, func() { m.sample(at, m.alive(), l.leader) }
		m.sampleAt(at, m.alive(), -1, l.epoch)
	}
	d += extra
	var elapsed time.Duration
	for i := range n {
		if step != nil {
			step()
		}
		next := d
		if i < n-1 {
			next = elapsed + d/time.Duration(n)
		}
		if end != nil && elapsed <= extra && extra < next {
			m.wait(extra - elapsed)
			end()
			elapsed = extra
		}
		m.wait(next - elapsed)
		elapsed = next
	}
}

// settle ends what the clean run left open, so that no client but the mutator's has work it
// does not do: the nemesis starts the broker it killed, the watcher samples the sink's topic
// (its partition is then shown able to serve, as the main topic's are), the processor's group
// takes every partition of its topic, and every reader catches up.
//
// The processor's group is given every partition because the checker follows a group on
// every partition of the topics it subscribed to or was assigned, while the clean run's
// processor owns the input partition alone (verify/liveness_model_test.go).
func (m *Model) settle() {
	if m.killed != 0 {
		m.restart()
	}
	if m.opts.ISR && m.opts.Sink != "" {
		t := tp{topicSinkIn, 0}
		if m.leaders[t] == nil {
			m.leaders[t] = &leadership{leader: 1}
		}
		m.sample(t, m.alive(), m.leaders[t].leader)
	}
	if m.opts.RPW {
		// A step whose commit went unanswered (info) is no progress the checker can see, even
		// when it committed: a new input on each partition, committed, moves the group past it.
		for p := range m.opts.Partitions {
			m.send(m.producer(), tp{topicMain, int32(p)}, history.OK, true)
		}
		m.add(&action{proc: history.Client(procRPW), f: history.FAssign, out: history.OK,
			raw: mustJSON(map[string]any{"topics": []string{topicMain}, "partitions": map[string][]int{topicMain: m.partitionList()},
				"group": rpwGroup, "isolation": history.ReadCommitted, "rebalance": true})})
	}
	if m.opts.Sink != "" && m.sink.effects == 0 {
		// The checker follows a sink from its first effect on.
		m.sinkApplyNew()
	}
	m.catchUp(0)
}

// catchUp has every reader but skip (a process) read all there is for it.
func (m *Model) catchUp(skip int) {
	if m.opts.Consumers {
		for _, c := range []int{procAssigned, procGroup} {
			if c != skip {
				m.pollAll(c)
			}
		}
	}
	if m.opts.RPW && skip != procRPW {
		m.rpwAll()
	}
	if m.opts.Sink != "" && skip != procSink {
		m.sinkDrain()
	}
}

// pollAll has consumer c read everything its isolation shows, in one poll when there is any.
func (m *Model) pollAll(c int) *action {
	iso := m.consumerIso(c)
	var read []*entry
	for p := range m.opts.Partitions {
		read = append(read, m.readFrom(c, tp{topicMain, int32(p)}, iso, -1, nil)...)
	}
	if len(read) == 0 {
		return nil
	}
	return m.pollOp(c, iso, read)
}

// rpwAll has the processor process, in one committed step per partition, every input of
// every partition of its topic it has not (once settle gave it them all).
func (m *Model) rpwAll() {
	if in := m.rpwBacklog(0); len(in) > 0 {
		m.rpwOp(in, history.OK, true)
	}
	pos := m.rpwPos
	for p := 1; p < m.opts.Partitions; p++ {
		t := tp{topicMain, int32(p)}
		in := m.readFrom(procRPW, t, history.ReadCommitted, -1, nil)
		if len(in) > 0 {
			m.rpwOp(in, history.OK, true)
		}
	}
	m.rpwPos = pos
}

// stuckProducer: a producer's send is pending (or fails or times out, and is sent again) for
// wait, then acknowledged; or, with transactions, the transactional producer's commit is
// pending for wait, then ok.
func stuckProducer(m *Model, wait time.Duration) (*LiveInjection, error) {
	p, t := m.producer(), m.mainPart()
	m.send(p, t, history.OK, true) // the producer's earlier failed send, if any, is done with
	if m.opts.Transactions {
		// Its earlier commit that went unanswered, if any, is done with too.
		m.txnOp([]tp{t}, history.IntentCommit, history.OK, true, true)
	}
	m.settle()
	v := m.rng.IntN(3)
	if v == 2 && !m.opts.Transactions {
		v = 0
	}
	switch v {
	case 0:
		e := m.newRecord(p, t, kindPlain)
		a := m.sendAction(p, e, history.OK)
		m.invokeOnly(a)
		m.stall(t, wait, 1, nil)
		m.appendEntry(e)
		m.complete(a)
		return &LiveInjection{Variant: "send pending", refs: []ref{invokeOf(a), doneOf(a)}}, nil
	case 1:
		out := history.Fail
		if m.opts.Unknown && m.rng.IntN(2) == 0 {
			out = history.Info
		}
		var last *action
		m.stall(t, wait, 4, func() { last = m.send(p, t, out, false) })
		a := m.send(p, t, history.OK, true)
		// The checker shows the work from the last unsuccessful send's completion: the last
		// moment a write was known pending.
		return &LiveInjection{Variant: "send " + string(out), refs: []ref{doneOf(last), doneOf(a)}}, nil
	}
	// No end_t: the model would write it just before the completion, as if the application had
	// held the transaction open all along, which is no stall (the writer waits on itself).
	tx := &txn{id: txnIDOf(procTxn), proc: procTxn, intent: history.IntentCommit, committed: true}
	e := m.newRecord(procTxn, t, kindTxn)
	e.txn = tx
	tx.recs = append(tx.recs, m.appendEntry(e))
	m.markers(tx)
	m.txns = append(m.txns, tx)
	a := m.invokeOnly(txnAction(procTxn, history.FTxn, history.OK, tx))
	m.stall(t, wait, 1, nil)
	m.complete(a)
	return &LiveInjection{Variant: "commit pending", refs: []ref{invokeOf(a), doneOf(a)}}, nil
}

// stuckConsumer: a record is acknowledged on a partition the group consumer reads (a send's,
// or with transactions sometimes a committed transaction's); every other reader reads it at
// once, the group polls empty for wait, then reads it.
func stuckConsumer(m *Model, wait time.Duration) (*LiveInjection, error) {
	m.settle()
	t := m.mainPart()
	var a *action
	v := "send"
	if m.opts.Transactions && m.rng.IntN(2) == 0 {
		a, v = m.txnOp([]tp{t}, history.IntentCommit, history.OK, true, true), "transaction"
	} else {
		a = m.send(m.producer(), t, history.OK, true)
	}
	m.catchUp(procGroup)
	iso := m.consumerIso(procGroup)
	m.stall(t, wait, 5, func() { m.pollOp(procGroup, iso, nil) })
	read := m.pollAll(procGroup)
	return &LiveInjection{Variant: v, refs: []ref{doneOf(a), doneOf(read)}}, nil
}

// stuckProcessor: an input is acknowledged; the processor's steps over it abort before they
// write anything for wait, then one commits it.
func stuckProcessor(m *Model, wait time.Duration) (*LiveInjection, error) {
	m.settle()
	a := m.send(m.producer(), rpwInput(), history.OK, true)
	m.catchUp(procRPW)
	in := m.rpwBacklog(0)
	m.stall(rpwInput(), wait, 4, func() {
		tx := &txn{id: txnIDOf(procRPW), proc: procRPW, intent: history.IntentCommit, rpw: true, inputs: in}
		m.txns = append(m.txns, tx)
		m.add(txnAction(procRPW, history.FRPW, history.Fail, tx))
	})
	commit := m.rpwOp(in, history.OK, true)
	return &LiveInjection{refs: []ref{doneOf(a), doneOf(commit)}}, nil
}

// stuckSink: an input of the sink is acknowledged; its effects fail for wait, then it is
// applied.
func stuckSink(m *Model, wait time.Duration) (*LiveInjection, error) {
	m.settle()
	in := tp{topicSinkIn, 0}
	a := m.send(m.producer(), in, history.OK, true)
	e := a.rec
	m.catchUp(procSink)
	m.stall(in, wait, 4, func() {
		v := mustJSON(map[string]any{"sink": sinkName, "event": e.value, "topic": e.at.topic, "partition": e.at.part, "offset": e.off})
		m.add(&action{proc: history.Client(procSink), f: history.FEffect, out: history.Fail, raw: v, rawDone: v,
			err: "store: connection refused"})
	})
	m.sinkDrain()
	effect := m.sink.firstEffect[e.value]
	if effect == nil {
		return nil, fmt.Errorf("the sink's store held %s already", e.value)
	}
	return &LiveInjection{Variant: string(m.opts.Sink), refs: []ref{doneOf(a), doneOf(effect)}}, nil
}
