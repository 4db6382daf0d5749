package verify

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify/results"
)

// Liveness cases the model-based properties (verify/histmodel, TestPropertyStuck) led to.

// stuckCount is r's finding count of family f.
func stuckCount(r *results.Results, f results.LivenessFamily) int {
	if r.Liveness == nil {
		return -1
	}
	return r.Liveness.Findings[f].Count
}

// member writes an ok subscribe or assign of process p with value v.
func (h *hb) member(p int, f string, v map[string]any) int64 {
	raw := history.Payload{Raw: json.RawMessage(mustJSON(v))}
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: f, Value: raw})
	return h.add(history.Op{Process: history.Client(p), Type: history.OK, F: f, Value: raw})
}

// TestLiveStuckSinkFromItsFirstInput: a sink whose first input waits StuckAfter and more
// before its effect is stuck, as one that had applied an input before would be.
func TestLiveStuckSinkFromItsFirstInput(t *testing.T) {
	for _, before := range []bool{true, false} {
		h := newHB()
		off := int64(0)
		if before {
			h.send(1, rec("t", 0, "e0"), history.OK, off)
			h.effect(7, "e0", off, true)
			off++
		}
		_, ack := h.send(1, rec("t", 0, "e1"), history.OK, off)
		h.wait(StuckAfter + 2*time.Second)
		eff := h.effect(7, "e1", off, true)
		cfg := strict()
		cfg.Sinks = map[string]history.SinkInfo{"s": {Mode: sink.UniqueKey, Topic: "t", Group: "sg", Processes: []int{7}}}
		r := h.check(cfg)
		if n := stuckCount(r, results.StuckSink); n != 1 {
			t.Errorf("an input applied before: %v: %d stuck-sink findings, want 1 (ack %d, effect %d; clients %+v)", before, n, ack, eff, r.Liveness.Clients)
		}
	}
}

// TestLiveStuckConsumerOnATransactionsPartition: a group whose partition only a transaction
// wrote is stuck when it reads the transaction's record StuckAfter and more after its commit.
// Fixed: a committed transaction's acknowledged offsets raised the partition's end without
// making the readers of its topic follow the partition (completeTxn called live.acked, not
// liveAcked), so a group stuck on a partition only transactions wrote was never reported.
func TestLiveStuckConsumerOnATransactionsPartition(t *testing.T) {
	for _, send := range []bool{true, false} {
		h := newHB()
		h.member(6, history.FSubscribe, map[string]any{"topics": []string{"t"}, "group": "g", "isolation": history.ReadCommitted})
		r0 := at(rec("t", 0, "x"), 0)
		var ack int64
		if send {
			_, ack = h.send(1, rec("t", 0, "x"), history.OK, 0)
		} else {
			_, ack = h.txn(3, "tx-3", history.IntentCommit, history.OK, r0)
		}
		h.wait(StuckAfter + 2*time.Second)
		h.add(history.Op{Process: history.Client(6), Type: history.Invoke, F: history.FPoll, Value: history.Payload{Poll: &history.Poll{Isolation: history.ReadCommitted, Group: "g"}}})
		read := h.add(history.Op{Process: history.Client(6), Type: history.OK, F: history.FPoll,
			Value: history.Payload{Poll: &history.Poll{Isolation: history.ReadCommitted, Group: "g", Records: []history.Record{r0}}}})
		cfg := strict()
		if !send {
			cfg.Processes = map[int]kafkaconf.ProducerConfig{3: {Transactional: ptr(true)}}
		}
		r := h.check(cfg)
		if n := stuckCount(r, results.StuckConsumer); n != 1 {
			t.Errorf("written by a send: %v: %d stuck-consumer findings, want 1 (ack %d, read %d; clients %+v)", send, n, ack, read, r.Liveness.Clients)
		}
	}
}

// TestLiveUnknownCommitThatCommitted: a processor's step whose commit went unanswered (info)
// but committed (the read_committed final read shows its output) read its input all the
// same: its stall ends there, not at the horizon.
func TestLiveUnknownCommitThatCommitted(t *testing.T) {
	h := newHB()
	h.member(4, history.FAssign, map[string]any{"topics": []string{"t"}, "partitions": map[string][]int32{"t": {0}}, "group": "rg",
		"isolation": history.ReadCommitted, "rebalance": true})
	x := at(rec("t", 0, "x"), 0)
	h.send(1, rec("t", 0, "x"), history.OK, 0)
	out := rec("out", 0, "y")
	h.rpw(4, "tx-4", history.Info, []history.Record{x}, []history.Record{out})
	h.wait(StuckAfter + 2*time.Second)
	h.finalBoth("t", 0, 0, 1, x)
	h.final("out", 0, history.ReadUncommitted, 0, 2, at(out, 0))
	h.final("out", 0, history.ReadCommitted, 0, 2, at(out, 0))
	cfg := strict()
	cfg.Processes = map[int]kafkaconf.ProducerConfig{4: {Transactional: ptr(true)}}
	r := h.check(cfg)
	for _, f := range results.StuckFamilies() {
		if n := stuckCount(r, f); n != 0 {
			t.Errorf("%d %s findings, want 0 (%+v)", n, f, r.Liveness.Findings[f].Examples)
		}
	}
}

// TestLiveStuckProcessorBeforeItsFirstStep: a processor group that never commits a step
// (its steps abort to the end) is a stuck processor: the header says the process is
// transactional, so its assign makes a processor group before any step commits.
func TestLiveStuckProcessorBeforeItsFirstStep(t *testing.T) {
	h := newHB()
	h.member(4, history.FAssign, map[string]any{"topics": []string{"t"}, "partitions": map[string][]int32{"t": {0}}, "group": "rg",
		"isolation": history.ReadCommitted, "rebalance": true})
	x := at(rec("t", 0, "x"), 0)
	h.send(1, rec("t", 0, "x"), history.OK, 0)
	h.wait(StuckAfter + 2*time.Second)
	h.rpw(4, "tx-4", history.Fail, []history.Record{x}, []history.Record{rec("out", 0, "y")})
	h.wait(StuckAfter + 2*time.Second)
	h.finalBoth("t", 0, 0, 1, x)
	cfg := strict()
	cfg.Processes = map[int]kafkaconf.ProducerConfig{4: {Transactional: ptr(true)}}
	r := h.check(cfg)
	if p, c := stuckCount(r, results.StuckProcessor), stuckCount(r, results.StuckConsumer); p != 1 || c != 0 {
		t.Errorf("%d stuck-processor and %d stuck-consumer findings, want 1 and 0 (%+v)", p, c, r.Liveness.Findings)
	}
}

// TestLiveStuckTimeWithoutAHeal: the stall a stuck finding reports shows the same stuck time
// in its client's stalls, with no fault healed too (stuck time then counts from the start).
func TestLiveStuckTimeWithoutAHeal(t *testing.T) {
	h := newHB()
	inv := h.sendInvoke(1, rec("t", 0, "x"))
	h.wait(StuckAfter + 2*time.Second)
	h.sendDone(1, inv, rec("t", 0, "x"), history.OK, 0, false)
	r := h.check(strict())
	f := r.Liveness.Findings[results.StuckProducer]
	if f.Count != 1 {
		t.Fatalf("%d stuck-producer findings, want 1", f.Count)
	}
	for _, c := range r.Liveness.Clients {
		for _, s := range c.Stalls {
			if s.FromMS == f.Examples[0].FromMS && s.StuckMS != f.Examples[0].StuckMS {
				t.Errorf("%s's stall shows %.0f ms stuck, its finding %.0f ms", c.Client, s.StuckMS, f.Examples[0].StuckMS)
			}
		}
	}
}
