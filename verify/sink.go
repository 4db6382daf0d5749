package verify

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// Sinks: a sink applies the records of an input topic to a store outside Kafka (history
// "effect" ops) and the run reads the store back at the end ("sink-read"). Two checks compare
// that final state with the input topic's log:
//
//   - effect-duplicate: an event (a record's value) applied more than once;
//   - effect-missing: a record below the position the sink committed (its group's offset, or
//     the offset its store holds) whose event was never applied.
//
// The evidence is the effect ops that applied a duplicate (the first two), or the op that
// showed the missing record at its offset, and the sink-read op.
//
// A sink in a mode that relays (outbox) also publishes each effect to its outbox topic
// ("publish" ops; the value is sink.OutboxValue of the event). Two more checks:
//
//   - outbox-lost: an event whose business row the final state holds, absent from every final
//     read of the outbox topic (judged only when the relay drained the outbox and the topic's
//     final reads are complete);
//   - outbox-duplicate: an outbox value at two positions of the outbox topic, found where a
//     value at two positions would otherwise be a duplicate.

// sinkEvent is one event of one sink.
type sinkEvent struct {
	sink string
	v    uint32
}

// effectAt is where a sink read an event and the first two effect ops that applied it.
type effectAt struct {
	tp      uint32
	off     int64
	applied [2]uint32
	n       int
}

type sinkReadObs struct {
	ord       uint32
	sink      string
	mode      sink.Mode
	effects   map[string]int
	committed map[string]int64
	unsent    *int
}

type sinkState struct {
	effects map[sinkEvent]*effectAt
	reads   []sinkReadObs
	modes   []sink.Mode // a finding's sink is an index into it, plus one
	// published is the last publish op of each outbox value.
	published map[uint32]uint32
	// unknown says why an outbox's publishes could not be judged.
	unknown []string
}

// sinkEffectValue is what the checker reads of an effect's ok completion.
type sinkEffectValue struct {
	Sink      string `json:"sink"`
	Event     string `json:"event"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Applied   *bool  `json:"applied"`
}

// Mode is read as text: a mode this checker does not know makes the sink's duplicates unknown
// rather than the read unreadable.
type sinkReadValue struct {
	Sink      string           `json:"sink"`
	Mode      string           `json:"mode"`
	Effects   map[string]int   `json:"effects"`
	Committed map[string]int64 `json:"committed"`
	Unsent    *int             `json:"unsent"`
}

// publishValue is what the checker reads of a publish op.
type publishValue struct {
	Value     string `json:"value"`
	Topic     string `json:"topic"`
	Partition *int32 `json:"partition"`
	Offset    *int64 `json:"offset"`
}

// sinkOp takes the completions of publish ops and the ok completions of effect and sink-read
// ops.
func (c *Checker) sinkOp(op *history.Op, ord uint32) {
	if op.F == history.FPublish {
		c.publishOp(op, ord)
		return
	}
	if op.Type != history.OK || len(op.Value.Raw) == 0 {
		return
	}
	switch op.F {
	case history.FEffect:
		var ev sinkEffectValue
		if err := json.Unmarshal(op.Value.Raw, &ev); err != nil || ev.Applied == nil {
			c.log.Debug("effect completion unreadable, ignored", "i", op.Index, "err", err)
			return
		}
		if c.liveOn {
			c.liveEffect(ev, op.Time, ord)
		}
		if !*ev.Applied {
			return
		}
		if c.sinks.effects == nil {
			c.sinks.effects = map[sinkEvent]*effectAt{}
		}
		k := sinkEvent{sink: ev.Sink, v: c.vals.intern(ev.Event)}
		e := c.sinks.effects[k]
		if e == nil {
			e = &effectAt{tp: c.parts.id(ev.Topic, ev.Partition), off: ev.Offset, applied: [2]uint32{none, none}}
			c.sinks.effects[k] = e
		}
		if e.n < len(e.applied) {
			e.applied[e.n] = ord
		}
		e.n++
	case history.FSinkRead:
		var r sinkReadValue
		if err := json.Unmarshal(op.Value.Raw, &r); err != nil {
			c.log.Debug("sink-read completion unreadable, ignored", "i", op.Index, "err", err)
			return
		}
		mode := sink.Mode(r.Mode)
		if s, ok := c.cfg.Sinks[r.Sink]; ok {
			mode = s.Mode
		}
		c.sinks.reads = append(c.sinks.reads, sinkReadObs{ord: ord, sink: r.Sink, mode: mode, effects: r.Effects,
			committed: r.Committed, unsent: r.Unsent})
	}
}

// publishOp takes a relay's publish: an acknowledged one places its value in the outbox topic,
// which then needs a final read like any partition written to; an unknown one is found by the
// final read if it was written.
func (c *Checker) publishOp(op *history.Op, ord uint32) {
	var pv publishValue
	if len(op.Value.Raw) == 0 || json.Unmarshal(op.Value.Raw, &pv) != nil || pv.Value == "" {
		c.log.Debug("publish completion without a value, ignored", "i", op.Index)
		return
	}
	v := c.vals.intern(pv.Value)
	c.vals.at(v).flags |= fElsewise
	if c.sinks.published == nil {
		c.sinks.published = map[uint32]uint32{}
	}
	c.sinks.published[v] = ord
	if op.Type != history.OK || pv.Partition == nil || pv.Offset == nil || *pv.Offset < 0 {
		return
	}
	tp := c.parts.id(pv.Topic, *pv.Partition)
	c.parts.ps[tp].needsFinal = true
	c.place(tp, *pv.Offset, v, ord, srcAck)
}

// outboxSink names the sink whose relay publishes to topic, if any.
func (c *Checker) outboxSink(topic string) (string, bool) {
	for _, name := range slices.Sorted(maps.Keys(c.cfg.Sinks)) {
		if si := c.cfg.Sinks[name]; si.Outbox == topic && topic != "" {
			return name, true
		}
	}
	return "", false
}

// duplicateFamily is the family of a value found at two positions: in a sink's outbox topic it
// is the relay's republish, not a producer's duplicate.
func (c *Checker) duplicateFamily(tp uint32) (guarantee.Anomaly, uint8) {
	if name, ok := c.outboxSink(c.parts.ps[tp].topic); ok {
		return guarantee.OutboxDuplicate, c.sinks.sinkIndex(c.cfg.Sinks[name].Mode)
	}
	return guarantee.Duplicate, 0
}

// checkOutbox finds the events whose business row the final state r holds and that no final
// read of the sink's outbox topic showed.
func (c *Checker) checkOutbox(r sinkReadObs, idx uint8) {
	topic := c.cfg.Sinks[r.sink].Outbox
	switch {
	case topic == "":
		c.sinks.unknown = append(c.sinks.unknown, fmt.Sprintf("sink %s (%s): the header names no outbox topic: its publishes were not checked", r.sink, r.mode))
		return
	case r.unsent == nil:
		c.sinks.unknown = append(c.sinks.unknown, fmt.Sprintf("sink %s (%s): its final state (op %d) does not say how many outbox rows were left unsent: its publishes were not checked", r.sink, r.mode, c.opIndex(r.ord)))
		return
	case *r.unsent > 0:
		c.sinks.unknown = append(c.sinks.unknown, fmt.Sprintf("sink %s (%s): its relay left %d outbox rows unsent (op %d): whether they would reach %s is not known", r.sink, r.mode, *r.unsent, c.opIndex(r.ord), topic))
		return
	}
	read := false
	var first uint32 // a partition of the topic, to judge a finding by its settings and faults
	for tp, p := range c.parts.ps[1:] {
		if p.topic != topic {
			continue
		}
		if first == 0 {
			first = uint32(tp + 1)
		}
		for _, fc := range p.final {
			if fc.done() && (fc.incomplete || !fc.complete()) {
				return // the final reads' own unknown reason says so
			}
			read = read || fc.done()
		}
	}
	if !read {
		c.sinks.unknown = append(c.sinks.unknown, fmt.Sprintf("sink %s (%s): no final read of its outbox topic %s: its publishes were not checked", r.sink, r.mode, topic))
		return
	}
	for _, event := range slices.Sorted(maps.Keys(r.effects)) {
		v := c.vals.intern(sink.OutboxValue(r.sink, event))
		if c.vals.at(v).has(fFinalAny) {
			continue
		}
		// The partition is where the relay's publish was acknowledged, if it was.
		f := finding{a: guarantee.OutboxLost, v: v, tp: first, off: -1, off2: -1, proc: -1, sink: idx, ops: [4]uint32{none, r.ord, none, none}}
		if st := c.vals.at(v); st.tp != 0 && st.off >= 0 {
			f.tp, f.off = st.tp, st.off
		}
		if e := c.sinks.effects[sinkEvent{r.sink, c.vals.intern(event)}]; e != nil {
			f.ops[0] = e.applied[0]
		}
		if p, ok := c.sinks.published[v]; ok {
			f.ops[2] = p
		}
		c.find(f)
	}
}

// sinkIndex is mode's index in the modes findings refer to, plus one.
func (s *sinkState) sinkIndex(m sink.Mode) uint8 {
	i := slices.Index(s.modes, m)
	if i < 0 {
		s.modes = append(s.modes, m)
		i = len(s.modes) - 1
	}
	return uint8(i + 1)
}

// checkSinks compares every sink's final state with the input topics' logs.
func (c *Checker) checkSinks() {
	for _, r := range c.sinks.reads {
		idx := c.sinks.sinkIndex(r.mode)
		if info, _ := r.mode.Info(); info.Relays {
			c.checkOutbox(r, idx)
		}
		for _, event := range slices.Sorted(maps.Keys(r.effects)) {
			n := r.effects[event]
			if n <= 1 {
				continue
			}
			v := c.vals.intern(event)
			if info, _ := r.mode.Info(); info.OffsetsInStore && n <= c.offsetsHolding(v, r.committed) {
				continue // the log holds the value at as many offsets: each was an input of its own
			}
			f := finding{a: guarantee.EffectDuplicate, v: v, off: -1, off2: -1, proc: -1, sink: idx,
				skipped: int64(n), ops: [4]uint32{none, none, r.ord, none}}
			if e := c.sinks.effects[sinkEvent{r.sink, f.v}]; e != nil {
				f.tp, f.off, f.ops[0], f.ops[1] = e.tp, e.off, e.applied[0], e.applied[1]
			}
			c.find(f)
		}
		for _, key := range slices.Sorted(maps.Keys(r.committed)) {
			tp, ok := c.partitionNamed(key)
			if !ok {
				continue
			}
			// Only records a final read showed are inputs: an acknowledged record the log lost
			// (acks=1, an unclean election) was never there for the sink to read; lost-write
			// judges it. Where a truncation put another record at its offset, that record is the
			// input. The evidence is the final read that showed the record.
			part := c.parts.ps[tp]
			part.log.each(0, r.committed[key]-1, func(o int64, s slot) bool {
				v := s.val
				if now, ok := part.finalAt[o]; ok {
					v = now
				}
				if v == 0 {
					return true
				}
				if fin := c.vals.at(v).finalOrd; fin != none && r.effects[c.vals.name(v)] == 0 {
					c.find(finding{a: guarantee.EffectMissing, v: v, tp: tp, off: o, off2: -1, proc: -1, sink: idx,
						ops: [4]uint32{fin, r.ord, none, none}})
				}
				return true
			})
		}
	}
}

// offsetsHolding counts the offsets below the committed positions at which the log holds v: a
// sink that keys its effects by offset (offsets-in-db) applies each of them.
func (c *Checker) offsetsHolding(v uint32, committed map[string]int64) int {
	n := 0
	for key, next := range committed {
		tp, ok := c.partitionNamed(key)
		if !ok {
			continue
		}
		c.parts.ps[tp].log.each(0, next-1, func(_ int64, s slot) bool {
			if s.val == v {
				n++
			}
			return true
		})
	}
	return n
}

// sinksUnread names the sinks the header lists whose final state the history does not have.
func (c *Checker) sinksUnread() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(c.cfg.Sinks)) {
		if !slices.ContainsFunc(c.sinks.reads, func(r sinkReadObs) bool { return r.sink == name }) {
			out = append(out, name)
		}
	}
	return out
}

// partitionNamed is the id of the partition "topic-partition" names, if the history has it.
func (c *Checker) partitionNamed(key string) (uint32, bool) {
	i := strings.LastIndexByte(key, '-')
	if i <= 0 {
		return 0, false
	}
	part, err := strconv.ParseInt(key[i+1:], 10, 32)
	if err != nil {
		return 0, false
	}
	id, ok := c.parts.ids[tpKey{key[:i], int32(part)}]
	return id, ok
}

// sinkFacts are the circumstances of the run's sinks: each sink read's mode, with the faults
// that took effect anywhere; a run without a sink has one of no known mode.
func (c *Checker) sinkFacts() []guarantee.Facts {
	facts := []guarantee.Facts{{Faults: c.faults.all()}}
	if len(c.sinks.reads) > 0 {
		facts = facts[:0]
	}
	for _, r := range c.sinks.reads {
		facts = append(facts, guarantee.Facts{Sink: r.mode, Faults: c.faults.all()})
	}
	return facts
}
