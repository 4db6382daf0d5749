package verify

import (
	"encoding/json"
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
}

type sinkState struct {
	effects map[sinkEvent]*effectAt
	reads   []sinkReadObs
	modes   []sink.Mode // a finding's sink is an index into it, plus one
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
}

// sinkOp takes the ok completions of effect and sink-read ops.
func (c *Checker) sinkOp(op *history.Op, ord uint32) {
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
		c.sinks.reads = append(c.sinks.reads, sinkReadObs{ord: ord, sink: r.Sink, mode: mode, effects: r.Effects, committed: r.Committed})
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
			// judges it. The evidence is the final read that showed the record.
			c.parts.ps[tp].log.each(0, r.committed[key]-1, func(o int64, s slot) bool {
				if s.val == 0 {
					return true
				}
				if fin := c.vals.at(s.val).finalOrd; fin != none && r.effects[c.vals.name(s.val)] == 0 {
					c.find(finding{a: guarantee.EffectMissing, v: s.val, tp: tp, off: o, off2: -1, proc: -1, sink: idx,
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
