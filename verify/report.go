package verify

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// finding is one anomaly, compact until it is judged and reported. Ops are ordinals.
type finding struct {
	a         guarantee.Anomaly
	v, v2     uint32 // values concerned (0: none)
	tp, tp2   uint32
	off       int64
	off2      int64
	skipped   int64
	ops       [4]uint32 // none-padded
	proc      int32     // the reader (poll anomalies) or transactional producer; -1 none
	iso       int8
	txn       uint32
	meta      uint32 // metadata-lost: its evidence, c.meta.evidence[meta-1]; 0 none
	cycle     uint32 // G0, G1c…: its witness cycle, c.cycles[cycle-1]; 0 none
	sink      uint8  // effect-*: the sink's mode, c.sinks.modes[sink-1]; 0 none
	cause     uint8  // resume-*: what reset the member's positions (resumeCause)
	note      note
	share     shareCirc           // share group findings: what happened while their ops ran
	judgement guarantee.Judgement // once judged
	known     guarantee.KnownIssue
}

type note uint8

const (
	noteNone note = iota
	noteChanged
	noteInputMissing
	noteOutputMissing
)

func (c *Checker) find(f finding) { c.findings.push(f) }

// finish runs the checks that need the whole history. It runs once.
func (c *Checker) finish() {
	if c.finished {
		return
	}
	c.finished = true
	// Ops never completed: unknown outcome; a final read never completed is incomplete.
	closePending := func(pd *pending) {
		c.stats.pendingOp(pd, c.parts.known(pd.tp))
		if pd.f == fFinal && pd.tp != 0 {
			cov := &c.parts.ps[pd.tp].final[pd.iso]
			if !cov.incomplete {
				cov.incomplete, cov.incOrd = true, pd.ord
			}
		}
		if pd.f == fRPW && pd.txn != none {
			c.eos.unknown(pd.txn)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.procs)) {
		if p := c.procs[id]; p.sync != nil {
			closePending(p.sync)
			p.sync = nil
		}
	}
	for _, idx := range slices.Sorted(maps.Keys(c.async)) {
		closePending(c.async[idx])
	}
	c.async = map[int64]*pending{}
	// The cycle and merged-transaction searches run on their own while the checks before
	// them do; they read the values' states as they are now.
	var (
		cycles *cycleSearch
		merged *mergedSearch
	)
	if len(c.txns) >= 2 {
		recs := c.txnRecords()
		cycles, merged = c.startCycles(recs), c.startMerged(recs)
	}
	c.checkUnexpectedAck()
	c.checkSkips()
	c.checkResumes()
	c.checkLostWrite()
	c.checkLostObserved()
	c.checkReorder()
	c.checkAbortedRead()
	c.checkReads()
	c.checkCycles(cycles)
	c.checkTransactions()
	c.checkMergedTransactions(merged)
	c.checkHangingTransactions()
	c.checkEOS()
	c.checkMetadataLost()
	c.checkSinks()
	c.checkShare()
}

// producerSettings are the effective settings of process p (cached): what the header states of
// it, Kafka's defaults for the rest, and transactional when the history shows it writing
// transactions.
func (c *Checker) producerSettings(p int32) kafkaconf.Resolved {
	if s, ok := c.prodCache[p]; ok {
		return s
	}
	pc := c.cfg.ProducerOf(int(p))
	if pr := c.procs[int(p)]; pr != nil && pr.txn && pc.Transactional == nil {
		pc.Transactional = new(true)
	}
	s := kafkaconf.ResolveProducer(pc, kafkaconf.JavaClient())
	if c.prodCache == nil {
		c.prodCache = map[int32]kafkaconf.Resolved{}
	}
	c.prodCache[p] = s
	return s
}

// client is the client the header says ran, and the transaction protocol it spoke.
func (c *Checker) client() (kafkaconf.ClientName, kafkaconf.TxnProtocol) {
	if c.cfg.Client == nil {
		return "", ""
	}
	return c.cfg.Client.Name, c.cfg.Client.TxnProtocol
}

func (c *Checker) topicSettings(tp uint32) kafkaconf.ResolvedTopic {
	return c.topicNamed(c.parts.ps[tp].topic)
}

func (c *Checker) topicNamed(topic string) kafkaconf.ResolvedTopic {
	if s, ok := c.topicCache[topic]; ok {
		return s
	}
	s := kafkaconf.ResolveTopic(c.cfg.TopicOf(topic))
	if c.topicCache == nil {
		c.topicCache = map[string]kafkaconf.ResolvedTopic{}
	}
	c.topicCache[topic] = s
	return s
}

// writerAnomaly: families judged by the settings of the producer that wrote the record.
func writerAnomaly(a guarantee.Anomaly) bool {
	switch a {
	case guarantee.LostWrite, guarantee.LostObserved, guarantee.Duplicate, guarantee.Reorder,
		guarantee.InconsistentOffset, guarantee.AbortedRead, guarantee.UnexpectedAck:
		return true
	}
	return false
}

// judgeKey is everything a decision depends on, so that a million findings of one kind are
// judged once.
type judgeKey struct {
	a      guarantee.Anomaly
	writer int32 // -1: no writer
	kind   uint16
	resent bool
	weak   int32 // a second writer with weaker acks (inconsistent-offset), or -1
	tp     uint32
	tp2    uint32 // a second partition (a duplicate across partitions), or 0
	iso    int8
	sink   uint8
	note   note
	share  shareCirc
}

func (c *Checker) judge(f *finding, table guarantee.Table, cache map[judgeKey]guarantee.Decision) guarantee.Decision {
	k := judgeKey{a: f.a, writer: -1, weak: -1, tp: f.tp, iso: f.iso, sink: f.sink, note: f.note, share: f.share}
	if f.tp2 != f.tp {
		k.tp2 = f.tp2
	}
	if writerAnomaly(f.a) && f.v != 0 {
		st := c.vals.at(f.v)
		if st.kind() != kindNone {
			k.writer, k.kind, k.resent = st.proc, uint16(st.kind()), st.flags&fResent != 0
		}
		if f.a == guarantee.InconsistentOffset && f.v2 != 0 {
			if w := c.vals.at(f.v2); w.kind() != kindNone && c.producerSettings(w.proc).Acks != kafkaconf.AcksAll {
				k.weak = w.proc
			}
		}
	}
	if d, ok := cache[k]; ok {
		return d
	}
	facts := guarantee.Facts{Faults: c.faultsOf(k.tp, k.tp2), Isolation: isoName(f.iso)}
	f.share.facts(&facts)
	if f.a.OfShareGroups() {
		// A share group's state lives in __share_group_state, wherever its leader is: every
		// fault of the run may have reached it.
		facts.Faults = c.faults.all()
	}
	facts.Client, facts.TxnProtocol = c.client()
	if f.sink != 0 {
		facts.Sink = c.sinks.modes[f.sink-1]
	}
	if f.tp != 0 {
		facts.Topic = c.topicSettings(f.tp)
	}
	if k.writer >= 0 || (k.kind != 0) {
		facts.HasWriter = true
		facts.Producer = c.producerSettings(k.writer)
		facts.WriterKind = writerKindName(k.kind)
		facts.Resent = k.resent
	}
	if k.weak >= 0 && facts.HasWriter && facts.Producer.Acks == kafkaconf.AcksAll {
		facts.Producer = c.producerSettings(k.weak)
	}
	d := table.Judge(f.a, facts)
	cache[k] = d
	return d
}

// faultsOf is what the run did to the partitions of a finding: tp, and tp2 unless 0. A
// finding with no partition is judged by every fault that took effect.
func (c *Checker) faultsOf(tp, tp2 uint32) guarantee.Faults {
	if tp == 0 {
		return c.faults.all()
	}
	f := c.faults.of(tp, c.parts.ps[tp])
	if tp2 != 0 && tp2 != tp {
		g := c.faults.of(tp2, c.parts.ps[tp2])
		f.UncleanElection = f.UncleanElection || g.UncleanElection
		switch {
		case f.DiskLossNodes == 0:
			f.DiskLossNodes = g.DiskLossNodes
		case g.DiskLossNodes != 0:
			f.DiskLossNodes = max(f.DiskLossNodes, g.DiskLossNodes) // -1 (a count not known) stands for 1
		}
	}
	return f
}

func writerKindName(k uint16) string {
	switch k {
	case kindSend:
		return guarantee.WriterSend
	case kindTxn:
		return guarantee.WriterTxn
	case kindRPW:
		return guarantee.WriterRPW
	}
	return ""
}

func isoName(iso int8) kafkaconf.Isolation {
	switch iso {
	case isoRC:
		return kafkaconf.ReadCommitted
	case isoRU:
		return kafkaconf.ReadUncommitted
	}
	return ""
}

// Results finishes the check and returns results.json's content. The caller fills what only
// it knows — Seed, Config, History.Path, the run's Timings; Results may be called more than once.
func (c *Checker) Results() *results.Results {
	c.finish()
	faults := c.faults.all()
	r := &results.Results{
		Version:    results.Version,
		Scenario:   c.cfg.Scenario,
		Deviations: append([]string{}, c.cfg.Deviations...),
		Anomalies:  map[guarantee.Anomaly]results.Anomaly{},
		Faults:     faults.Kinds,
	}
	table := guarantee.Rules()
	cache := map[judgeKey]guarantee.Decision{}
	per := map[guarantee.Anomaly][]int{} // finding indices, by family
	for i := range c.findings.len() {
		a := c.findings.at(i).a
		per[a] = append(per[a], i)
	}
	unknownJudged := 0
	for _, a := range guarantee.Anomalies() {
		entry, unknown := c.anomaly(a, per[a], table, cache)
		r.Anomalies[a] = entry
		unknownJudged += unknown
	}
	r.Stats = c.buildStats()
	r.Liveness = c.liveness()
	r.Assumed = c.assumed()
	r.AddUnknown(c.unknownReasons()...)
	if c.malformed != nil {
		r.AddUnknown(results.UnknownReason{Cause: results.CauseHistoryMalformed,
			Text: "the history is malformed, and the checks left out " + c.malformed.Error()})
	}
	if unknownJudged > 0 {
		r.AddUnknown(results.UnknownReason{Cause: results.CauseNoGuarantee, Text: fmt.Sprintf(
			"%d finding(s) under settings no documented guarantee covers (see each anomaly's why)", unknownJudged)})
	}
	r.Verdict = verdictOf(r)
	r.History = &results.HistoryInfo{Ops: c.ops, TornLine: c.torn}
	r.BrokerMetrics = c.brokerMetrics()
	return r
}

// brokerMetrics checks the sampled broker metrics' alerts against the ISR observations.
func (c *Checker) brokerMetrics() *results.BrokerMetrics {
	m := c.opts.Metrics
	if m == nil {
		return nil
	}
	out := &results.BrokerMetrics{File: c.opts.MetricsFile, Source: m.Header.Source, IntervalMS: m.Header.IntervalMS,
		Samples: len(m.Samples)}
	for _, s := range m.Samples {
		if s.Error != "" {
			out.Unanswered++
		}
	}
	out.Alerts = metrics.Check(m.Samples, c.observed, time.Duration(m.Header.IntervalMS)*time.Millisecond)
	return out
}

// anomaly judges the findings idx of family a and builds its results entry. It returns how
// many findings no documented guarantee covers.
func (c *Checker) anomaly(a guarantee.Anomaly, idx []int, table guarantee.Table, cache map[judgeKey]guarantee.Decision) (results.Anomaly, int) {
	if len(idx) == 0 {
		d := c.defaultDecision(a, table)
		return results.Anomaly{Judgement: d.Judgement, Why: d.Why, Unchecked: c.unchecked(a)}, 0
	}
	// Group the findings by the row that judged them.
	type group struct {
		d     guarantee.Decision
		count int
	}
	var groups []group
	for _, i := range idx {
		d := c.judge(c.findings.at(i), table, cache)
		j := slices.IndexFunc(groups, func(g group) bool { return g.d.Rule == d.Rule && g.d.Why == d.Why && g.d.Known == d.Known })
		if j < 0 {
			groups = append(groups, group{d: d})
			j = len(groups) - 1
		}
		groups[j].count++
		c.findings.at(i).judgement, c.findings.at(i).known = d.Judgement, d.Known
	}
	slices.SortStableFunc(groups, func(x, y group) int { return cmp.Compare(x.d.Judgement.Severity(), y.d.Judgement.Severity()) })
	// The entry speaks for its worst finding.
	worst := groups[0].d
	e := results.Anomaly{Count: len(idx), Judgement: worst.Judgement, Why: worst.Why}
	unknown := 0
	for _, g := range groups {
		switch g.d.Judgement {
		case guarantee.Forbidden:
			e.Forbidden += g.count
		case guarantee.Unknown:
			unknown += g.count
		}
		if g.d.Known != "" {
			e.Known += g.count
			if !slices.Contains(e.KnownIssues, g.d.Known) {
				e.KnownIssues = append(e.KnownIssues, g.d.Known)
			}
		}
		if len(groups) > 1 {
			e.ByRule = append(e.ByRule, results.RuleCount{Count: g.count, Judgement: g.d.Judgement, Why: g.d.Why, KnownIssue: g.d.Known})
		}
	}
	// Examples: the worst first, in history order within each judgement.
	ex := slices.Clone(idx)
	slices.SortStableFunc(ex, func(x, y int) int {
		return cmp.Compare(c.findings.at(x).judgement.Severity(), c.findings.at(y).judgement.Severity())
	})
	for _, i := range ex[:min(len(ex), c.opts.MaxExamples)] {
		f := c.findings.at(i)
		e.Examples = append(e.Examples, c.example(f))
	}
	return e, unknown
}

// defaultDecision is what the table says of an anomaly no finding showed, under the settings
// the run used: for every producer that wrote (or the header lists) and every partition the run
// touched (or topic the header lists), with the faults that took effect there, at each isolation
// its readers used. The worst decision speaks for the family, so that its reason cites only
// settings of the run.
func (c *Checker) defaultDecision(a guarantee.Anomaly, table guarantee.Table) guarantee.Decision {
	var best guarantee.Decision
	found := false
	facts := c.runFacts()
	if a.OfSinks() {
		facts = c.sinkFacts()
	}
	for _, f := range facts {
		d := table.Judge(a, f)
		if !found || d.Judgement.Severity() < best.Judgement.Severity() {
			best, found = d, true
		}
	}
	return best
}

// runFacts are the circumstances the run's settings give a finding: every writer × every
// partition (or listed topic) × every isolation its readers used. Computed once.
func (c *Checker) runFacts() []guarantee.Facts {
	if c.facts != nil {
		return c.facts
	}
	type where struct {
		topic  kafkaconf.ResolvedTopic
		faults guarantee.Faults
	}
	var places []where
	for tp := uint32(1); tp < uint32(len(c.parts.ps)); tp++ {
		if p := c.parts.ps[tp]; p.needsFinal {
			places = append(places, where{c.topicSettings(tp), c.faultsOf(tp, 0)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.cfg.Topics)) {
		if !c.touchedTopic(name) {
			places = append(places, where{c.topicNamed(name), c.faults.all()})
		}
	}
	if len(places) == 0 {
		places = append(places, where{c.topicNamed(""), c.faults.all()})
	}
	isos := []kafkaconf.Isolation{c.cfg.ReadIsolation()}
	if c.sawRU && !slices.Contains(isos, kafkaconf.ReadUncommitted) {
		isos = append(isos, kafkaconf.ReadUncommitted)
	}
	var facts []guarantee.Facts
	for _, p := range c.writers() {
		kind := guarantee.WriterSend
		if pr := c.procs[int(p)]; (pr != nil && pr.txn) || c.producerSettings(p).Transactional {
			kind = guarantee.WriterTxn
		}
		for _, w := range places {
			for _, iso := range isos {
				f := guarantee.Facts{HasWriter: true, Producer: c.producerSettings(p), WriterKind: kind,
					Topic: w.topic, Faults: w.faults, Isolation: iso}
				f.Client, f.TxnProtocol = c.client()
				facts = append(facts, f)
			}
		}
	}
	c.facts = facts
	return facts
}

// writers are the processes that wrote records, and those the header lists; with neither, the
// header's default producer (process -1 is never listed).
func (c *Checker) writers() []int32 {
	set := map[int32]bool{}
	for id, p := range c.procs {
		if p.wrote {
			set[int32(id)] = true
		}
	}
	for n := range c.cfg.Processes {
		set[int32(n)] = true
	}
	if len(set) == 0 {
		set[-1] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func (c *Checker) touchedTopic(name string) bool {
	for _, p := range c.parts.ps[1:] {
		if p.needsFinal && p.topic == name {
			return true
		}
	}
	return false
}

// unchecked says why a family with no finding could not have had one.
func (c *Checker) unchecked(a guarantee.Anomaly) string {
	anyFinal := false
	for _, p := range c.parts.ps[1:] {
		anyFinal = anyFinal || p.final[isoRU].done() || p.final[isoRC].done()
	}
	switch a {
	case guarantee.LostWrite, guarantee.LostObserved:
		if !anyFinal {
			return "no final reads"
		}
	case guarantee.UnexpectedAck:
		if !c.isr.observed {
			return "no isr observations in the history"
		}
	case guarantee.MetadataLost:
		if !c.meta.observed {
			return "no isr observations with a leader epoch in the history"
		}
	case guarantee.EOSMissing, guarantee.EOSDuplicate:
		if len(c.eos.committed) == 0 && len(c.eos.uncertain) == 0 {
			return "no read-process-write ops"
		}
	case guarantee.PartialTransaction, guarantee.ZombieWrite, guarantee.MergedTransaction:
		if len(c.txns) == 0 {
			return "no transactions"
		}
	case guarantee.PhantomRead:
		if !c.phantomsJudged() {
			return "the history is not a Verity run's (its header names no scenario), so it need not record every writer"
		}
	case guarantee.G1c, guarantee.G1cProcess, guarantee.G1cRealtime, guarantee.PrecommittedRead:
		if c.reads == nil {
			return "no transaction read anything"
		}
	case guarantee.G0:
		if len(c.txns) < 2 {
			return "fewer than two transactions"
		}
	case guarantee.UncommittedRead:
		if !slices.ContainsFunc(c.txns, func(t txn) bool { return t.endT != 0 }) {
			return "no transaction says when its end was asked for (end_t)"
		}
	case guarantee.HangingTransaction:
		if len(c.strays) == 0 {
			return "no stray transactional record"
		}
	case guarantee.EffectDuplicate, guarantee.EffectMissing:
		if len(c.sinks.reads) == 0 {
			return "no sink reads"
		}
	case guarantee.OutboxLost, guarantee.OutboxDuplicate:
		if !slices.ContainsFunc(c.sinks.reads, func(r sinkReadObs) bool { in, _ := r.mode.Info(); return in.Relays }) {
			return "no sink with an outbox"
		}
	case guarantee.ShareLost, guarantee.ShareRedelivered, guarantee.ShareDoubleAcquire, guarantee.ShareOverDelivered, guarantee.ShareCountRegressed:
		switch {
		case c.share.seen == 0:
			return "no share group ops"
		case !c.share.on:
			return "the header states no share group"
		case a == guarantee.ShareLost && len(c.share.starts) == 0:
			return "no share partition start offset observed"
		}
	}
	return ""
}

// assumed lists the settings the judging took at Kafka's defaults because the header did not
// give them, for the producers and topics the run used.
func (c *Checker) assumed() []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, p := range c.writers() {
		for _, s := range c.producerSettings(p).Assumed {
			add("producer " + s)
		}
	}
	for tp := uint32(1); tp < uint32(len(c.parts.ps)); tp++ {
		if c.parts.ps[tp].needsFinal {
			for _, s := range c.topicSettings(tp).Assumed {
				add("topic " + s)
			}
		}
	}
	return out
}

func (c *Checker) name(v uint32) string { return c.vals.name(v) }

// example turns a finding into its results.json form, with the history's op indices.
func (c *Checker) example(f *finding) results.Example {
	e := results.Example{Value: c.name(f.v), Judgement: f.judgement, KnownIssue: f.known}
	for _, o := range f.ops {
		if o != none {
			e.Ops = append(e.Ops, c.opIndex(o))
		}
	}
	if f.cycle != 0 {
		e.Value = ""
		for _, s := range c.cycles[f.cycle-1].steps {
			e.Ops = append(e.Ops, c.opIndex(c.txnOp(s.from)))
			e.Cycle = append(e.Cycle, c.cycleStep(s))
		}
	}
	if e.Ops == nil {
		e.Ops = []int64{}
	}
	if f.tp != 0 {
		p := c.parts.ps[f.tp]
		part := p.part
		e.Topic, e.Partition = p.topic, &part
	}
	if f.off >= 0 {
		e.Offsets = append(e.Offsets, f.off)
	}
	if f.off2 >= 0 && (f.off2 != f.off || f.tp2 != f.tp) {
		e.Offsets = append(e.Offsets, f.off2)
	}
	if f.proc >= 0 {
		p := int(f.proc)
		e.Process = &p
	}
	e.Note = c.describe(f, e.Ops)
	return e
}

func opList(ops []int64) []string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = "op " + strconv.FormatInt(o, 10)
	}
	return s
}

// describe says in one sentence what the finding's ops show.
func (c *Checker) describe(f *finding, ops []int64) string {
	at := func(i int) string {
		if i < len(ops) {
			return "op " + strconv.FormatInt(ops[i], 10)
		}
		return "an op"
	}
	part := func(tp uint32) string {
		if tp == 0 {
			return "?"
		}
		return c.parts.ps[tp].String()
	}
	switch f.a {
	case guarantee.LostWrite:
		return fmt.Sprintf("%s written by %s, acknowledged by %s, absent from the final read %s of %s",
			c.name(f.v), at(0), at(1), at(2), part(f.tp))
	case guarantee.LostObserved:
		if f.note == noteChanged {
			return fmt.Sprintf("a consumer saw %s at %s offset %d (%s); the final read %s shows %s there",
				c.name(f.v), part(f.tp), f.off, at(0), at(1), c.name(f.v2))
		}
		return fmt.Sprintf("a consumer saw %s at %s offset %d (%s); the final read %s does not have it",
			c.name(f.v), part(f.tp), f.off, at(0), at(1))
	case guarantee.Duplicate:
		return fmt.Sprintf("%s at %s offset %d (%s) and at %s offset %d (%s)",
			c.name(f.v), part(f.tp), f.off, at(0), part(f.tp2), f.off2, at(1))
	case guarantee.Reorder:
		return fmt.Sprintf("%s was sent (%s) before %s (%s) but has the later offset: %d > %d in %s",
			c.name(f.v), at(0), c.name(f.v2), at(1), f.off, f.off2, part(f.tp))
	case guarantee.InconsistentOffset:
		return fmt.Sprintf("%s offset %d: %s reports %s, %s reports %s",
			part(f.tp), f.off, at(0), c.name(f.v), at(1), c.name(f.v2))
	case guarantee.AbortedRead:
		if f.txn == 0 && c.vals.at(f.v).kind() == kindSend {
			return fmt.Sprintf("the send of %s (%s) completed fail (%s), yet %s read it", c.name(f.v), at(0), at(1), at(2))
		}
		if f.iso == isoRU {
			return fmt.Sprintf("%s belongs to the transaction %s that did not commit (%s); the read_uncommitted consumer's read %s saw it",
				c.name(f.v), at(0), at(1), at(2))
		}
		return fmt.Sprintf("%s belongs to the transaction %s that did not commit (%s), yet the read_committed read %s saw it",
			c.name(f.v), at(0), at(1), at(2))
	case guarantee.PartialTransaction:
		return fmt.Sprintf("transaction %s (completed %s): %s is in the read_committed final log (%s), %s is not",
			at(0), at(1), c.name(f.v2), at(2), c.name(f.v))
	case guarantee.HangingTransaction:
		return fmt.Sprintf("%s wrote a transactional record outside any transaction the coordinator knows at %s offset %d; "+
			"the read_uncommitted final read went past it, the read_committed one stopped at offset %d (%s): its last stable offset never passed it",
			at(0), part(f.tp), f.off, f.off2, at(1))
	case guarantee.MergedTransaction:
		return fmt.Sprintf("transaction %s of process %d ended (%s) before transaction %s began, yet in %s nothing lies between its %s at offset %d "+
			"and the next one's %s at offset %d: no marker ended the first before the second's records (%s ended both)",
			at(0), f.proc, at(1), at(2), part(f.tp), c.name(f.v), f.off, c.name(f.v2), f.off2, at(3))
	case guarantee.ZombieWrite:
		return fmt.Sprintf("another instance took the transactional.id at %s; process %d's later transaction %s became visible (%s shows %s)",
			at(0), f.proc, at(1), at(len(ops)-1), c.name(f.v))
	case guarantee.EOSMissing:
		if f.note == noteOutputMissing {
			return fmt.Sprintf("the committed rpw %s processed %s, but its output %s is not in the read_committed final log",
				at(0), c.name(f.v), c.name(f.v2))
		}
		return fmt.Sprintf("input %s at %s offset %d is committed (%s) and within the processed range, but no committed rpw processed it",
			c.name(f.v), part(f.tp), f.off, at(1))
	case guarantee.EOSDuplicate:
		return fmt.Sprintf("input %s was processed by two committed rpws: %s and %s", c.name(f.v), at(0), at(2))
	case guarantee.NonmonotonicPoll:
		return fmt.Sprintf("process %d read %s offset %d (%s), then offset %d (%s)",
			f.proc, part(f.tp), f.off, at(0), f.off2, at(1))
	case guarantee.PollSkip:
		return fmt.Sprintf("process %d (%s) read %s offset %d (%s), then offset %d (%s), skipping %s at offset %d",
			f.proc, isoName(f.iso), part(f.tp), f.off, at(0), f.off2, at(1), c.name(f.v), f.skipped)
	case guarantee.G0, guarantee.G1c, guarantee.G1cProcess, guarantee.G1cRealtime:
		if f.cycle != 0 {
			return c.describeCycle(c.cycles[f.cycle-1])
		}
	case guarantee.PrecommittedRead:
		return fmt.Sprintf("transaction %s (%s) read %s at %s offset %d, a record it wrote itself, before it ended (%s)",
			at(0), isoName(f.iso), c.name(f.v), part(f.tp), f.off, at(1))
	case guarantee.UncommittedRead:
		return fmt.Sprintf("the %s read %s returned %s at %s offset %d, written by transaction %s, before that transaction's end was asked for (it completed at %s)",
			isoName(f.iso), at(1), c.name(f.v), part(f.tp), f.off, at(0), at(2))
	case guarantee.FutureRead:
		return fmt.Sprintf("%s read %s before any op that wrote it began: its first writer is %s", at(0), c.name(f.v), at(1))
	case guarantee.PhantomRead:
		return fmt.Sprintf("%s read %s, which no op of the history wrote", at(0), c.name(f.v))
	case guarantee.ResumeSkippedAhead, guarantee.ResumeRewoundFurther:
		return c.describeResume(f, part(f.tp))
	case guarantee.PollUnowned:
		return fmt.Sprintf("process %d's assignment (%s) does not give it %s, yet its poll %s returned records of it from offset %d",
			f.proc, at(0), part(f.tp), at(1), f.off)
	case guarantee.MetadataLost:
		if f.meta == 0 {
			break
		}
		e := c.meta.evidence[f.meta-1]
		if e.first.epoch == e.then.epoch {
			return fmt.Sprintf("%s leader epoch %d named leader %d (%s) and leader %d (%s): one epoch names one leader, so the record that made %d its leader was lost",
				part(f.tp), e.first.epoch, e.first.leader, at(0), e.then.leader, at(1), e.first.leader)
		}
		return fmt.Sprintf("%s was observed at leader epoch %d (%s), then at %d (%s), and never at %d or above again: the leader epoch went back",
			part(f.tp), e.first.epoch, at(0), e.then.epoch, at(1), e.first.epoch)
	case guarantee.UnexpectedAck:
		return fmt.Sprintf("ISR of %s below min ISR from %s through %s; %s was sent at %s and acknowledged at %s",
			part(f.tp), at(0), at(3), c.name(f.v), at(1), at(2))
	case guarantee.EffectDuplicate:
		var by []string
		for _, o := range f.ops[:2] {
			if o != none {
				by = append(by, "op "+strconv.FormatInt(c.opIndex(o), 10))
			}
		}
		applied := "no effect op recorded applying it (an unknown outcome that was applied)"
		if len(by) > 0 {
			applied = strings.Join(by, " and ") + " applied it"
		}
		return fmt.Sprintf("%s (from %s offset %d) was applied %d times by a %s sink: %s; the sink's final state is op %d",
			c.name(f.v), part(f.tp), f.off, f.skipped, c.sinks.modes[f.sink-1], applied, c.opIndex(f.ops[2]))
	case guarantee.EffectMissing:
		return fmt.Sprintf("%s at %s offset %d (%s) is below the position the %s sink committed, yet its final state (%s) has no effect of it",
			c.name(f.v), part(f.tp), f.off, at(0), c.sinks.modes[f.sink-1], at(1))
	case guarantee.OutboxLost:
		op := func(o uint32) string { return "op " + strconv.FormatInt(c.opIndex(o), 10) }
		written := "an effect whose outcome was unknown"
		if f.ops[0] != none {
			written = op(f.ops[0])
		}
		published := "no publish of it was recorded"
		if f.ops[2] != none {
			published = "its last publish is " + op(f.ops[2])
			if f.off >= 0 {
				published += fmt.Sprintf(", acknowledged at %s offset %d", part(f.tp), f.off)
			}
		}
		return fmt.Sprintf("the %s sink's final state (%s) holds the business row written by %s, yet no final read of its outbox topic has %s; %s",
			c.sinks.modes[f.sink-1], op(f.ops[1]), written, c.name(f.v), published)
	case guarantee.OutboxDuplicate:
		return fmt.Sprintf("the relay published %s at %s offset %d (%s) and again at %s offset %d (%s)",
			c.name(f.v), part(f.tp), f.off, at(0), part(f.tp2), f.off2, at(1))
	default:
		if f.a.OfShareGroups() {
			return c.describeShare(f, at)
		}
	}
	return strings.Join(opList(ops), ", ")
}
