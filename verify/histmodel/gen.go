package histmodel

import (
	"slices"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
)

// Generate simulates the clean run of seed: a model whose observations hold no anomaly under
// the header's settings. Mutators may then add to it; Finish and Render write the history.
func Generate(seed uint64, opts Options) *Model {
	m := newModel(seed, opts)
	m.start()
	for range m.opts.Steps {
		m.step()
	}
	return m
}

// header states the settings the simulated Kafka keeps its promises under: acks=all,
// idempotence, RF 3, min ISR 2, unclean election off. Under them every family but the
// always-permitted outbox-duplicate is forbidden or, for sinks, judged by the sink's mode.
func (m *Model) header() history.Config {
	all := kafkaconf.AcksAll
	cfg := history.Config{
		Scenario: "histmodel",
		Producer: &kafkaconf.ProducerConfig{Delivery: kafkaconf.Delivery{Acks: &all, Idempotence: new(true),
			MaxInFlight: new(5), Retries: new(10)}},
		Processes: map[int]kafkaconf.ProducerConfig{},
		Topic: &kafkaconf.TopicConfig{ReplicationFactor: new(nodes), MinInsyncReplicas: new(2),
			UncleanLeaderElection: new(false)},
		Isolation:   kafkaconf.ReadCommitted,
		Controllers: []int{1, 2, 3},
	}
	if m.opts.Transactions {
		cfg.Processes[procTxn] = kafkaconf.ProducerConfig{Transactional: new(true)}
	}
	if m.opts.RPW {
		cfg.Processes[procRPW] = kafkaconf.ProducerConfig{Transactional: new(true)}
	}
	if m.opts.Nemesis {
		cfg.Faults = []string{"kill"}
	}
	if m.opts.Sink != "" {
		si := history.SinkInfo{Mode: m.opts.Sink, Topic: topicSinkIn, Group: sinkGroup, Processes: []int{procSink}}
		if info, _ := m.opts.Sink.Info(); info.Relays {
			si.Outbox, si.Relay = topicOutbox, new(procRelay)
		}
		cfg.Sinks = map[string]history.SinkInfo{sinkName: si}
	}
	if s := m.share; s != nil {
		cfg.Share = &history.ShareConfig{Group: shareGroup, Topics: []string{topicShare}, LockMS: s.lock.Milliseconds(),
			DeliveryLimit: s.limit}
	}
	return cfg
}

// start writes what a run does before its workloads: the consumers' assignments, the
// watcher's first sample of every partition, and the share group's members joining.
func (m *Model) start() {
	if m.opts.ISR {
		for p := range m.opts.Partitions {
			t := tp{topicMain, int32(p)}
			m.leaders[t] = &leadership{leader: int32(1 + p%nodes)}
			m.sample(t, m.alive(), m.leaders[t].leader)
		}
	}
	if m.opts.RPW {
		// The processor's group assigns it the input partition, as the role records it.
		m.add(&action{proc: history.Client(procRPW), f: history.FAssign, out: history.OK,
			raw: mustJSON(map[string]any{"topics": []string{topicMain}, "partitions": map[string][]int{topicMain: {int(rpwInput().part)}},
				"group": rpwGroup, "isolation": history.ReadCommitted, "rebalance": true})})
	}
	if m.opts.Consumers {
		m.add(&action{proc: history.Client(procAssigned), f: history.FAssign, out: history.OK,
			raw: mustJSON(map[string]any{"topics": []string{topicMain}, "partitions": map[string][]int{topicMain: m.partitionList()},
				"isolation": m.consumerIso(procAssigned)})})
		m.add(&action{proc: history.Client(procGroup), f: history.FSubscribe, out: history.OK,
			raw: mustJSON(map[string]any{"topics": []string{topicMain}, "group": groupName, "isolation": m.consumerIso(procGroup)})})
	}
	if m.share != nil {
		for _, p := range m.shareMembers() {
			m.shareSubscribe(p)
		}
		// A few records first, so that every share run has deliveries to judge, not only
		// those whose steps happened to write the share topic.
		for range 2 + m.rng.IntN(3) {
			m.send(m.producer(), tp{topicShare, int32(m.rng.IntN(m.share.parts))}, history.OK, true)
		}
	}
}

func (m *Model) partitionList() []int {
	ps := make([]int, m.opts.Partitions)
	for i := range ps {
		ps[i] = i
	}
	return ps
}

// consumerIso is consumer c's isolation level. The group consumer reads read_uncommitted only
// where no transaction writes: there it would read aborted records, a permitted aborted-read,
// and a clean history has no finding at all.
func (m *Model) consumerIso(c int) string {
	if c == procGroup && !m.opts.Transactions {
		return history.ReadUncommitted
	}
	return history.ReadCommitted
}

// step advances the run by one client or nemesis step, chosen among the parts the options
// enable.
func (m *Model) step() {
	type choice struct {
		weight int
		run    func()
	}
	choices := []choice{{40, m.plainSend}}
	if m.opts.Transactions {
		choices = append(choices, choice{12, m.transaction})
	}
	if m.opts.RPW {
		choices = append(choices, choice{10, m.rpwStep})
	}
	if m.opts.Consumers {
		choices = append(choices, choice{18, func() { m.poll(procAssigned) }}, choice{12, func() { m.poll(procGroup) }},
			choice{3, func() { m.rebalance() }})
	}
	if m.opts.Nemesis {
		choices = append(choices, choice{5, m.nemesisStep})
	}
	if m.share != nil {
		choices = append(choices, choice{24, m.shareStep})
	}
	if m.opts.Sink != "" {
		choices = append(choices, choice{12, m.sinkStep})
		if info, _ := m.opts.Sink.Info(); info.Relays {
			choices = append(choices, choice{8, m.relayStep})
		}
	}
	total := 0
	for _, c := range choices {
		total += c.weight
	}
	x := m.rng.IntN(total)
	for _, c := range choices {
		if x < c.weight {
			c.run()
			return
		}
		x -= c.weight
	}
}

// plainSend sends one record from a plain producer: mostly ok; sometimes fail (not written);
// with Unknown, sometimes info (written or not: the client cannot tell).
func (m *Model) plainSend() {
	p := procProducerA + m.rng.IntN(2)
	t := tp{topicMain, int32(m.rng.IntN(m.opts.Partitions))}
	if m.opts.Sink != "" && m.rng.IntN(3) == 0 {
		t = tp{topicSinkIn, 0}
	}
	if m.share != nil && m.rng.IntN(3) == 0 {
		t = tp{topicShare, int32(m.rng.IntN(m.share.parts))}
	}
	out, reached := history.OK, true
	switch x := m.rng.IntN(100); {
	case x < 6:
		out, reached = history.Fail, false
	case x < 14 && m.opts.Unknown:
		out, reached = history.Info, m.rng.IntN(2) == 0
	}
	m.send(p, t, out, reached)
}

// send writes a send of process p to t with outcome out, its record in the log when reached.
func (m *Model) send(p int, t tp, out history.Type, reached bool) *action {
	e := m.newRecord(p, t, kindPlain)
	if reached {
		m.appendEntry(e)
	}
	return m.add(m.sendAction(p, e, out))
}

func (m *Model) sendAction(p int, e *entry, out history.Type) *action {
	a := &action{proc: history.Client(p), f: history.FSend, out: out, rec: e}
	switch out {
	case history.Fail:
		a.err = "kafka server: NOT_ENOUGH_REPLICAS"
	case history.Info:
		a.err = "kafka: request timed out (delivery.timeout.ms)"
	}
	return a
}

// transaction runs one transaction of the transactional producer: 1–3 records on the main
// topic, then a marker in each partition it wrote. An abort completes fail; a commit ok, or
// with Unknown sometimes info, having committed or not.
func (m *Model) transaction() {
	parts := make([]tp, 1+m.rng.IntN(3))
	for i := range parts {
		parts[i] = tp{topicMain, int32(m.rng.IntN(m.opts.Partitions))}
	}
	intent, out, committed := history.IntentCommit, history.OK, true
	switch x := m.rng.IntN(100); {
	case x < 20:
		intent, out, committed = history.IntentAbort, history.Fail, false
	case x < 30 && m.opts.Unknown:
		out, committed = history.Info, m.rng.IntN(2) == 0
	}
	m.txnOp(parts, intent, out, committed, true)
}

// txnOp writes a transaction of the transactional producer to parts with its records and,
// when markers, a marker in each partition it wrote.
func (m *Model) txnOp(parts []tp, intent string, out history.Type, committed, markers bool) *action {
	tx := &txn{id: txnIDOf(procTxn), proc: procTxn, intent: intent, committed: committed, endT: true}
	for _, t := range parts {
		e := m.newRecord(procTxn, t, kindTxn)
		e.txn = tx
		tx.recs = append(tx.recs, m.appendEntry(e))
	}
	if markers {
		m.markers(tx)
	}
	m.txns = append(m.txns, tx)
	return m.add(txnAction(procTxn, history.FTxn, out, tx))
}

// txnAction is the op of a transaction's client (a transactional producer or the processor)
// ending tx with outcome out, with the error a client reports for a failed or unknown end.
func txnAction(p int, f string, out history.Type, tx *txn) *action {
	a := &action{proc: history.Client(p), f: f, out: out, txn: tx}
	switch out {
	case history.Fail:
		a.err = "aborted"
	case history.Info:
		a.err = "kafka: commit timed out: coordinator not available"
	}
	return a
}

// txnIDOf is the transactional.id of process p.
func txnIDOf(p int) string { return "tx-" + itoa(p) }

// markers writes the marker that ends tx in each partition it wrote, in partition order.
func (m *Model) markers(tx *txn) {
	var parts []tp
	for _, e := range tx.recs {
		if !slices.Contains(parts, e.at) {
			parts = append(parts, e.at)
		}
	}
	slices.SortFunc(parts, func(a, b tp) int { return int(a.part - b.part) })
	for _, t := range parts {
		m.appendEntry(&entry{at: t, kind: kindMarker, txn: tx})
	}
}

// rpwInput is the processor's input partition.
func rpwInput() tp { return tp{topicMain, 0} }

// rpwBacklog lists the records the processor has not processed yet: every record of its
// input partition from its committed position that read_committed shows (up to max; 0 for
// all).
func (m *Model) rpwBacklog(max int) []*entry {
	var in []*entry
	for _, e := range m.log(rpwInput()).entries[m.rpwPos:] {
		if e.visible(history.ReadCommitted) && !e.lost {
			in = append(in, e)
			if max > 0 && len(in) == max {
				break
			}
		}
	}
	return in
}

// rpwStep processes up to three inputs in one transaction, one output each. An aborted step
// leaves the committed position where it was, so the next step processes the same inputs.
func (m *Model) rpwStep() {
	in := m.rpwBacklog(1 + m.rng.IntN(3))
	if len(in) == 0 {
		return
	}
	out, committed := history.OK, true
	switch x := m.rng.IntN(100); {
	case x < 12:
		out, committed = history.Fail, false
	case x < 20 && m.opts.Unknown:
		out, committed = history.Info, m.rng.IntN(2) == 0
	}
	m.rpwOp(in, out, committed)
}

// rpwOp writes one read-process-write step over inputs in, with its outputs and markers.
func (m *Model) rpwOp(in []*entry, out history.Type, committed bool) *action {
	tx := &txn{id: txnIDOf(procRPW), proc: procRPW, intent: history.IntentCommit, committed: committed, rpw: true, inputs: in}
	for range in {
		e := m.newRecord(procRPW, tp{topicOut, 0}, kindTxn)
		e.txn = tx
		tx.recs = append(tx.recs, m.appendEntry(e))
	}
	m.markers(tx)
	m.txns = append(m.txns, tx)
	if committed {
		m.rpwPos = in[len(in)-1].off + 1
	}
	return m.add(txnAction(procRPW, history.FRPW, out, tx))
}

// poll returns, from consumer c's positions, the records its isolation shows, partition after
// partition from a random one, up to four; the group consumer sometimes commits its offsets.
func (m *Model) poll(c int) {
	iso := m.consumerIso(c)
	var read []*entry
	start := m.rng.IntN(m.opts.Partitions)
	for k := range m.opts.Partitions {
		t := tp{topicMain, int32((start + k) % m.opts.Partitions)}
		read = append(read, m.readFrom(c, t, iso, 4-len(read), nil)...)
	}
	m.pollOp(c, iso, read)
	if c == procGroup && m.rng.IntN(2) == 0 {
		for t, o := range m.pos[c] {
			m.groupPos[t] = o
		}
	}
}

// readFrom advances consumer c in t over what isolation iso shows, returning up to max
// records (no limit when max < 0), and stopping after stop when it is met.
func (m *Model) readFrom(c int, t tp, iso string, max int, stop *entry) []*entry {
	if m.pos[c] == nil {
		m.pos[c] = map[tp]int64{}
	}
	var read []*entry
	l := m.log(t)
	o := m.pos[c][t]
	for ; o < int64(len(l.entries)) && max != 0; o++ {
		e := l.entries[o]
		if e.kind == kindStray && iso == history.ReadCommitted {
			break // the last stable offset
		}
		if !e.visible(iso) {
			continue
		}
		read = append(read, e)
		max--
		if e == stop {
			o++
			break
		}
	}
	m.pos[c][t] = o
	return read
}

func (m *Model) pollOp(c int, iso string, read []*entry) *action {
	a := &action{proc: history.Client(c), f: history.FPoll, out: history.OK, reads: read, iso: iso}
	if c == procGroup {
		a.group = groupName
	}
	return m.add(a)
}

// rebalance moves the group consumer back to its group's committed offsets, as a new
// generation of the group does.
func (m *Model) rebalance() *action {
	return m.assignGroup(m.partitionList())
}

// assignGroup is a new generation of the group that gives its consumer parts of the topic, as
// the consumer role records it (workloads.claimsPayload).
func (m *Model) assignGroup(parts []int) *action {
	m.pos[procGroup] = map[tp]int64{}
	for t, o := range m.groupPos {
		m.pos[procGroup][t] = o
	}
	return m.add(&action{proc: history.Client(procGroup), f: history.FAssign, out: history.OK,
		raw: mustJSON(map[string]any{"topics": []string{topicMain}, "partitions": map[string][]int{topicMain: parts}, "group": groupName,
			"isolation": m.consumerIso(procGroup), "rebalance": true})})
}

// alive lists the brokers not killed.
func (m *Model) alive() []int {
	var up []int
	for n := 1; n <= nodes; n++ {
		if n != m.killed {
			up = append(up, n)
		}
	}
	return up
}

// nemesisStep kills a broker, or starts the one killed. A killed leader hands its partitions
// to the next live broker with a new epoch; the watcher samples each change.
func (m *Model) nemesisStep() {
	if m.killed != 0 {
		m.restart()
		return
	}
	m.kill(1 + m.rng.IntN(nodes))
}

// kill kills broker n, none being down.
func (m *Model) kill(n int) {
	m.nemesisOp("kill", n)
	m.killed = n
	if !m.opts.ISR {
		return
	}
	for _, t := range m.watched() {
		l := m.leaders[t]
		if int(l.leader) == n {
			if m.opts.LeaderUnknown {
				m.sampleAt(t, m.alive(), -1, l.epoch)
			}
			l.leader, l.epoch, l.first = int32(m.alive()[m.rng.IntN(nodes-1)]), l.epoch+1, nil
		}
		m.sample(t, m.alive(), l.leader)
	}
}

// restart starts the killed broker; it rejoins every ISR.
func (m *Model) restart() {
	n := m.killed
	m.nemesisOp(history.FStart, n)
	m.killed = 0
	if !m.opts.ISR {
		return
	}
	for _, t := range m.watched() {
		m.sample(t, m.alive(), m.leaders[t].leader)
	}
}

// watched lists the partitions the watcher samples: the main topic's, and the sink's input
// once a liveness mutator had it sampled (settle).
func (m *Model) watched() []tp {
	var out []tp
	for p := range m.opts.Partitions {
		out = append(out, tp{topicMain, int32(p)})
	}
	if t := (tp{topicSinkIn, 0}); m.leaders[t] != nil {
		out = append(out, t)
	}
	return out
}

func (m *Model) nemesisOp(f string, node int) *action {
	v := mustJSON(map[string]any{"nodes": []int{node}})
	return m.add(&action{proc: history.NemesisP(), f: f, out: history.OK, raw: v, rawDone: v})
}

// sample writes the watcher's observation of t at its current epoch.
func (m *Model) sample(t tp, isr []int, leader int32) *action {
	return m.sampleAt(t, isr, leader, m.leaders[t].epoch)
}

// sampleAt writes an observation of t: an invoke without value, then the sample, as the
// watcher records them.
func (m *Model) sampleAt(t tp, isr []int, leader, epoch int32) *action {
	all := make([]int, nodes)
	for i := range all {
		all[i] = i + 1
	}
	v := mustJSON(map[string]any{"topic": t.topic, "partition": t.part, "isr": isr, "min_isr": 2, "replicas": all,
		"leader": leader, "leader_epoch": epoch})
	a := m.add(&action{proc: history.NemesisP(), f: "isr", out: history.OK, rawDone: v})
	if l := m.leaders[t]; l != nil && l.first == nil && l.epoch == epoch && l.leader == leader {
		l.first = a
	}
	return a
}

// sinkStep applies the sink's next input to its store and usually commits its position. A
// sink that de-duplicates may crash between the two and replay from its committed position
// (the store absorbs the repeat); one that does not commits at once, so that a clean history
// has no permitted duplicate either.
func (m *Model) sinkStep() {
	info, _ := m.opts.Sink.Info()
	if info.Dedupes && m.sink.pos > m.sink.committed && m.rng.IntN(4) == 0 {
		m.add(&action{proc: history.Client(procSink), f: history.FCrash, out: history.OK,
			raw: mustJSON(history.Crash{Reason: "killed before its offset commit"})})
		m.sink.pos = m.sink.committed
		return
	}
	l := m.log(tp{topicSinkIn, 0})
	if m.sink.pos >= int64(len(l.entries)) {
		return
	}
	m.effect(l.entries[m.sink.pos])
	m.sink.pos++
	if !info.Dedupes || m.rng.IntN(3) != 0 {
		m.sink.committed = m.sink.pos
	}
}

// effect applies e to the sink's store: applied unless the store already holds its event.
func (m *Model) effect(e *entry) *action {
	applied := m.sink.applied[e.value] == 0
	return m.effectApplied(e, applied)
}

// effectApplied writes an effect op of e that applied it or absorbed it.
func (m *Model) effectApplied(e *entry, applied bool) *action {
	v := map[string]any{"sink": sinkName, "event": e.value, "topic": e.at.topic, "partition": e.at.part, "offset": e.off}
	in := mustJSON(v)
	v["applied"] = applied
	a := m.add(&action{proc: history.Client(procSink), f: history.FEffect, out: history.OK, raw: in, rawDone: mustJSON(v)})
	m.sink.effects++
	if applied {
		if m.sink.applied[e.value] == 0 {
			m.sink.events = append(m.sink.events, e)
			m.sink.firstEffect[e.value] = a
		}
		m.sink.applied[e.value]++
	}
	return a
}

// relayStep publishes the next outbox row.
func (m *Model) relayStep() {
	if m.sink.published >= len(m.sink.events) {
		return
	}
	e := m.sink.events[m.sink.published]
	m.sink.published++
	if m.sink.unpublished[e.value] {
		return
	}
	m.publish(e, true)
}

// publish writes the relay's publish of e's event: ok at the outbox topic's end, or info.
func (m *Model) publish(e *entry, ok bool) (*action, *entry) {
	value := sink.OutboxValue(sinkName, e.value)
	v := map[string]any{"sink": sinkName, "event": e.value, "value": value, "topic": topicOutbox}
	in := mustJSON(v)
	if !ok {
		return m.add(&action{proc: history.Client(procRelay), f: history.FPublish, out: history.Info, raw: in, rawDone: in,
			err: "kafka: request timed out"}), nil
	}
	rec := m.appendEntry(&entry{at: tp{topicOutbox, 0}, value: value, key: e.value, kind: kindPlain})
	v["partition"], v["offset"] = 0, rec.off
	return m.add(&action{proc: history.Client(procRelay), f: history.FPublish, out: history.OK, raw: in, rawDone: mustJSON(v)}), rec
}
