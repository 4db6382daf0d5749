package verify

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// effect writes a sink's effect op for value v read at t-0 offset off; it returns the ok's index.
func (h *hb) effect(p int, v string, off int64, applied bool) int64 {
	in, _ := json.Marshal(map[string]any{"sink": "s", "event": v, "topic": "t", "partition": 0, "offset": off})
	out, _ := json.Marshal(map[string]any{"sink": "s", "event": v, "topic": "t", "partition": 0, "offset": off, "applied": applied})
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FEffect, Value: history.Payload{Raw: in}})
	return h.add(history.Op{Process: history.Client(p), Type: history.OK, F: history.FEffect, Value: history.Payload{Raw: out}})
}

// sinkRead writes the sink's final state.
func (h *hb) sinkRead(mode sink.Mode, effects map[string]int, committed map[string]int64) int64 {
	in, _ := json.Marshal(map[string]any{"sink": "s"})
	out, _ := json.Marshal(map[string]any{"sink": "s", "mode": mode, "store": "postgres", "effects": effects, "committed": committed})
	h.add(history.Op{Process: history.Client(98), Type: history.Invoke, F: history.FSinkRead, Value: history.Payload{Raw: in}})
	return h.add(history.Op{Process: history.Client(98), Type: history.OK, F: history.FSinkRead, Value: history.Payload{Raw: out}})
}

func TestSinks(t *testing.T) {
	with := func(m sink.Mode) func() history.Config {
		return func() history.Config {
			c := strict()
			c.Sinks = map[string]history.SinkInfo{"s": {Mode: m, Topic: "t", Processes: []int{2}}}
			return c
		}
	}
	// Three records on t-0, written and read back.
	input := func(h *hb) {
		for i, v := range []string{"1-1", "1-2", "1-3"} {
			h.send(1, rec("t", 0, v), OK, int64(i))
		}
		h.finalBoth("t", 0, 0, 3, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-2"), 1), at(rec("t", 0, "1-3"), 2))
	}
	// 1-1 and 1-2 acknowledged at offsets 0 and 1; the final read (ops 4, 5) shows 1-9 at 1;
	// the sink applied 1-1 alone and committed past 1-9.
	replacedUnapplied := func(h *hb) {
		h.send(1, rec("t", 0, "1-1"), OK, 0)
		h.send(1, rec("t", 0, "1-2"), OK, 1)
		h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-9"), 1))
		h.effect(2, "1-1", 0, true)
		h.sinkRead(sink.OffsetsInDB, map[string]int{"1-1": 1}, map[string]int64{"t-0": 2})
	}
	// The sink applies 1-1, crashes before committing it, and applies it again.
	replayed := func(h *hb) (first, second int64) {
		first = h.effect(2, "1-1", 0, true)
		h.op(2, history.FCrash)
		second = h.effect(2, "1-1", 0, true)
		h.effect(2, "1-2", 1, true)
		h.effect(2, "1-3", 2, true)
		return first, second
	}
	runCases(t, []tcase{
		{
			name: "naive: an input applied twice after a crash is permitted",
			cfg:  with(sink.Naive),
			build: func(h *hb) {
				input(h)
				replayed(h)
				h.sinkRead(sink.Naive, map[string]int{"1-1": 2, "1-2": 1, "1-3": 1}, map[string]int64{"t-0": 3})
			},
			want:    map[guarantee.Anomaly]want{guarantee.EffectDuplicate: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "unique-key: the same store state is forbidden",
			cfg:  with(sink.UniqueKey),
			build: func(h *hb) {
				input(h)
				replayed(h)
				h.sinkRead(sink.UniqueKey, map[string]int{"1-1": 2, "1-2": 1, "1-3": 1}, map[string]int64{"t-0": 3})
			},
			want:    map[guarantee.Anomaly]want{guarantee.EffectDuplicate: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "a record below the committed position without its effect is missing",
			cfg:  with(sink.OffsetsInDB),
			build: func(h *hb) {
				input(h)
				h.effect(2, "1-1", 0, true)
				h.effect(2, "1-3", 2, true)
				h.sinkRead(sink.OffsetsInDB, map[string]int{"1-1": 1, "1-3": 1}, map[string]int64{"t-0": 3})
			},
			want:    map[guarantee.Anomaly]want{guarantee.EffectMissing: {count: 1}},
			verdict: results.Fail,
		},
		{
			// 1-2 was acknowledged at offset 1; the leader died and a clean failover cut it (acks=1
			// lets the leader acknowledge alone), and 1-9 took its offset. The sink's position is
			// past it, so 1-9 was below the high watermark when the sink read there: a clean
			// failover cannot have replaced it since, and its effect must be in the store.
			name: "acks=1, a clean failover: the record that replaced a lost one, without its effect",
			cfg: func() history.Config {
				c := acks1()
				c.Sinks = map[string]history.SinkInfo{"s": {Mode: sink.OffsetsInDB, Topic: "t", Processes: []int{2}}}
				return c
			},
			build: replacedUnapplied,
			want: map[guarantee.Anomaly]want{guarantee.EffectMissing: {count: 1, ops: []int64{5}},
				guarantee.LostWrite: {count: 1, permitted: true}, guarantee.InconsistentOffset: {count: 1, permitted: true}},
			verdict: results.Fail,
		},
		{
			name: "unclean election: the record that replaced a lost one, without its effect, is permitted",
			cfg: func() history.Config {
				c := unclean()
				c.Sinks = map[string]history.SinkInfo{"s": {Mode: sink.OffsetsInDB, Topic: "t", Processes: []int{2}}}
				return c
			},
			build: replacedUnapplied,
			want: map[guarantee.Anomaly]want{guarantee.EffectMissing: {count: 1, permitted: true, ops: []int64{5}},
				guarantee.LostWrite: {count: 1, permitted: true}, guarantee.InconsistentOffset: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "power loss on every replica: the record that replaced a lost one, without its effect, is permitted",
			cfg:  with(sink.OffsetsInDB),
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.send(1, rec("t", 0, "1-2"), OK, 1)
				h.nemesisEvent("power-loss", `{"nodes":[1,2,3]}`, OK)
				h.nemesisEvent("start", `{"nodes":[1,2,3],"fault":"power-loss"}`, OK)
				h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-9"), 1)) // op 9 shows 1-9
				h.effect(2, "1-1", 0, true)
				h.sinkRead(sink.OffsetsInDB, map[string]int{"1-1": 1}, map[string]int64{"t-0": 2})
			},
			want: map[guarantee.Anomaly]want{guarantee.EffectMissing: {count: 1, permitted: true, ops: []int64{9}},
				guarantee.LostWrite: {count: 1, permitted: true}, guarantee.InconsistentOffset: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		// Near misses.
		{
			name: "records past the committed position are not yet due",
			cfg:  with(sink.Inbox),
			build: func(h *hb) {
				input(h)
				h.effect(2, "1-1", 0, true)
				h.sinkRead(sink.Inbox, map[string]int{"1-1": 1}, map[string]int64{"t-0": 1})
			},
			verdict: results.Pass,
		},
		{
			name: "a repeat the store absorbed is no duplicate",
			cfg:  with(sink.UniqueKey),
			build: func(h *hb) {
				input(h)
				h.effect(2, "1-1", 0, true)
				h.effect(2, "1-1", 0, false)
				h.effect(2, "1-2", 1, true)
				h.effect(2, "1-3", 2, true)
				h.sinkRead(sink.UniqueKey, map[string]int{"1-1": 1, "1-2": 1, "1-3": 1}, map[string]int64{"t-0": 3})
			},
			verdict: results.Pass,
		},
		{
			name: "a duplicate of a sink whose mode the header does not give is not judged",
			build: func(h *hb) {
				input(h)
				replayed(h)
				h.sinkRead("", map[string]int{"1-1": 2, "1-2": 1, "1-3": 1}, map[string]int64{"t-0": 3})
			},
			want:    map[guarantee.Anomaly]want{guarantee.EffectDuplicate: {count: 1, permitted: true}},
			verdict: results.Unknown,
		},
	})
	// The evidence: both effect ops that applied the input, and the final state.
	h := newHB()
	input(h)
	first, second := replayed(h)
	read := h.sinkRead(sink.Naive, map[string]int{"1-1": 2, "1-2": 1, "1-3": 1}, map[string]int64{"t-0": 3})
	r := h.check(with(sink.Naive)())
	ex := r.Anomalies[guarantee.EffectDuplicate].Examples
	if len(ex) != 1 || !slices.Equal(ex[0].Ops, []int64{first, second, read}) || ex[0].Value != "1-1" || *ex[0].Partition != 0 {
		t.Errorf("effect-duplicate evidence %+v: want ops %d, %d (the two applications) and %d (the final state)", ex, first, second, read)
	}
}

// Near misses the checker once got wrong: an acknowledged record the log lost is no input of
// the sink; a value the log holds at two offsets is two inputs for a sink that keys by offset;
// a sink whose final state was not read leaves the verdict unknown.
func TestSinkNearMisses(t *testing.T) {
	cfg := func(m sink.Mode) history.Config {
		c := strict()
		c.Sinks = map[string]history.SinkInfo{"s": {Mode: m, Topic: "t"}}
		return c
	}
	// 1-2 was acknowledged at offset 1, then the log there holds 1-9 (a truncation): the sink
	// read and applied 1-9.
	h := newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.send(1, rec("t", 0, "1-2"), OK, 1)
	h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-9"), 1))
	h.effect(2, "1-1", 0, true)
	h.effect(2, "1-9", 1, true)
	h.sinkRead(sink.Naive, map[string]int{"1-1": 1, "1-9": 1}, map[string]int64{"t-0": 2})
	if got := h.check(cfg(sink.Naive)).Anomalies[guarantee.EffectMissing]; got.Count != 0 {
		t.Errorf("a record the log lost was taken for a missing input: %+v", got.Examples)
	}

	// The log holds 1-1 at offsets 0 and 1 (a producer's duplicate): offsets-in-db applies both.
	h = newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-1"), 1))
	h.effect(2, "1-1", 0, true)
	h.effect(2, "1-1", 1, true)
	h.sinkRead(sink.OffsetsInDB, map[string]int{"1-1": 2}, map[string]int64{"t-0": 2})
	if got := h.check(cfg(sink.OffsetsInDB)).Anomalies[guarantee.EffectDuplicate]; got.Count != 0 {
		t.Errorf("two inputs with one value, each applied once, taken for a duplicate: %+v", got.Examples)
	}
	// The same store state from a sink that keys by event id is a duplicate.
	h = newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
	h.sinkRead(sink.UniqueKey, map[string]int{"1-1": 2}, map[string]int64{"t-0": 1})
	if got := h.check(cfg(sink.UniqueKey)).Anomalies[guarantee.EffectDuplicate]; got.Count != 1 || got.Forbidden != 1 {
		t.Errorf("unique-key applying one input twice: %+v", got)
	}

	// The header names a sink; the history has no read of it.
	h = newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
	r := h.check(cfg(sink.Naive))
	if r.Verdict != results.Unknown || !strings.Contains(strings.Join(r.UnknownReasons, ";"), "sink(s) s was not read") {
		t.Errorf("a sink never read: verdict %s, reasons %v", r.Verdict, r.UnknownReasons)
	}
}

// publish writes a relay's publish of sink s's event: ok at o-0 offset off, or info (off < 0).
func (h *hb) publish(p int, event string, off int64) int64 {
	v := sink.OutboxValue("s", event)
	in, _ := json.Marshal(map[string]any{"sink": "s", "event": event, "value": v, "topic": "o"})
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FPublish, Value: history.Payload{Raw: in}})
	if off < 0 {
		return h.add(history.Op{Process: history.Client(p), Type: history.Info, F: history.FPublish, Value: history.Payload{Raw: in}, Error: "timed out"})
	}
	out, _ := json.Marshal(map[string]any{"sink": "s", "event": event, "value": v, "topic": "o", "partition": 0, "offset": off})
	return h.add(history.Op{Process: history.Client(p), Type: history.OK, F: history.FPublish, Value: history.Payload{Raw: out}})
}

// outboxRead writes an outbox sink's final state with unsent rows left.
func (h *hb) outboxRead(effects map[string]int, committed map[string]int64, unsent int) int64 {
	in, _ := json.Marshal(map[string]any{"sink": "s"})
	out, _ := json.Marshal(map[string]any{"sink": "s", "mode": sink.Outbox, "store": "postgres", "effects": effects,
		"committed": committed, "unsent": unsent})
	h.add(history.Op{Process: history.Client(98), Type: history.Invoke, F: history.FSinkRead, Value: history.Payload{Raw: in}})
	return h.add(history.Op{Process: history.Client(98), Type: history.OK, F: history.FSinkRead, Value: history.Payload{Raw: out}})
}

func TestOutbox(t *testing.T) {
	cfg := func() history.Config {
		c := strict()
		c.Sinks = map[string]history.SinkInfo{"s": {Mode: sink.Outbox, Topic: "t", Outbox: "o", Processes: []int{2}, Relay: new(3)}}
		return c
	}
	ov := func(event string, off int64) history.Record {
		return at(rec("o", 0, sink.OutboxValue("s", event)), off)
	}
	// Three inputs on t-0, each applied once (a business row and an outbox row).
	input := func(h *hb) {
		for i, v := range []string{"1-1", "1-2", "1-3"} {
			h.send(1, rec("t", 0, v), OK, int64(i))
		}
		h.finalBoth("t", 0, 0, 3, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-2"), 1), at(rec("t", 0, "1-3"), 2))
		for i, v := range []string{"1-1", "1-2", "1-3"} {
			h.effect(2, v, int64(i), true)
		}
	}
	once := map[string]int{"1-1": 1, "1-2": 1, "1-3": 1}
	committed := map[string]int64{"t-0": 3}
	runCases(t, []tcase{
		{
			name: "a relay crash between publish and mark publishes again: permitted, and no producer duplicate",
			cfg:  cfg,
			build: func(h *hb) {
				input(h)
				h.publish(3, "1-1", 0)
				h.publish(3, "1-2", 1)
				h.op(3, history.FCrash)
				h.publish(3, "1-2", 2)
				h.publish(3, "1-3", 3)
				h.finalBoth("o", 0, 0, 4, ov("1-1", 0), ov("1-2", 1), ov("1-2", 2), ov("1-3", 3))
				h.outboxRead(once, committed, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.OutboxDuplicate: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "a business row whose event never reached the outbox topic is lost",
			cfg:  cfg,
			build: func(h *hb) {
				input(h)
				h.publish(3, "1-1", 0)
				h.publish(3, "1-2", 1)
				h.finalBoth("o", 0, 0, 2, ov("1-1", 0), ov("1-2", 1))
				h.outboxRead(once, committed, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.OutboxLost: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "an acknowledged publish the outbox topic lost is lost",
			cfg:  cfg,
			build: func(h *hb) {
				input(h)
				h.publish(3, "1-1", 0)
				h.publish(3, "1-2", 1)
				h.publish(3, "1-3", 2)
				h.finalBoth("o", 0, 0, 2, ov("1-1", 0), ov("1-2", 1))
				h.outboxRead(once, committed, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.OutboxLost: {count: 1}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "an unknown publish the final read shows is published",
			cfg:  cfg,
			build: func(h *hb) {
				input(h)
				h.publish(3, "1-1", 0)
				h.publish(3, "1-2", 1)
				h.publish(3, "1-3", -1)
				h.finalBoth("o", 0, 0, 3, ov("1-1", 0), ov("1-2", 1), ov("1-3", 2))
				h.outboxRead(once, committed, 0)
			},
			verdict: results.Pass,
		},
		{
			name: "rows the relay left unsent are not judged lost: unknown",
			cfg:  cfg,
			build: func(h *hb) {
				input(h)
				h.publish(3, "1-1", 0)
				h.finalBoth("o", 0, 0, 1, ov("1-1", 0))
				h.outboxRead(once, committed, 2)
			},
			verdict: results.Unknown,
		},
	})

	// The evidence of a loss: the effect that wrote the business row, the final state, the last
	// publish; of a republish: both publishes.
	h := newHB()
	input(h)
	h.publish(3, "1-1", 0)
	h.publish(3, "1-2", 1)
	last := h.publish(3, "1-3", -1)
	h.finalBoth("o", 0, 0, 2, ov("1-1", 0), ov("1-2", 1))
	read := h.outboxRead(once, committed, 0)
	r := h.check(cfg())
	ex := r.Anomalies[guarantee.OutboxLost].Examples
	if len(ex) != 1 || ex[0].Value != sink.OutboxValue("s", "1-3") || !slices.Contains(ex[0].Ops, read) || !slices.Contains(ex[0].Ops, last) || len(ex[0].Ops) != 3 {
		t.Errorf("outbox-lost evidence %+v: want the effect, the final state %d and the last publish %d", ex, read, last)
	}
	h = newHB()
	input(h)
	first := h.publish(3, "1-1", 0)
	again := h.publish(3, "1-1", 1)
	h.publish(3, "1-2", 2)
	h.publish(3, "1-3", 3)
	h.finalBoth("o", 0, 0, 4, ov("1-1", 0), ov("1-1", 1), ov("1-2", 2), ov("1-3", 3))
	h.outboxRead(once, committed, 0)
	r = h.check(cfg())
	ex = r.Anomalies[guarantee.OutboxDuplicate].Examples
	if len(ex) != 1 || !slices.Equal(ex[0].Ops, []int64{first, again}) {
		t.Errorf("outbox-duplicate evidence %+v: want the publishes %d and %d", ex, first, again)
	}
	if d := r.Anomalies[guarantee.Duplicate]; d.Count != 0 {
		t.Errorf("a republish taken for a producer's duplicate: %+v", d)
	}
}
