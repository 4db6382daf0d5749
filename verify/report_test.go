package verify

import (
	"slices"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// A run with an acks=all and an acks=1 producer: one anomaly entry, judged forbidden for the
// first and permitted for the second, with the count split by rule and forbidden examples first.
func TestMixedJudgements(t *testing.T) {
	cfg := strict()
	cfg.Processes = map[int]kafkaconf.ProducerConfig{2: {Delivery: kafkaconf.Delivery{Acks: ptr(kafkaconf.AcksLeader)}}}
	h := newHB()
	h.send(2, rec("t", 0, "2-1"), OK, 0)
	h.send(2, rec("t", 0, "2-2"), OK, 1)
	h.send(1, rec("t", 0, "1-1"), OK, 2)
	h.final("t", 0, RU, 0, 0)
	r := h.check(cfg)
	lw := r.Anomalies[guarantee.LostWrite]
	if lw.Count != 3 || lw.Forbidden != 1 || lw.Judgement != guarantee.Forbidden || len(lw.ByRule) != 2 {
		t.Fatalf("lost-write %+v", lw)
	}
	if lw.ByRule[0].Judgement != guarantee.Forbidden || lw.ByRule[0].Count != 1 || lw.ByRule[1].Count != 2 {
		t.Errorf("by rule %+v", lw.ByRule)
	}
	if lw.Examples[0].Value != "1-1" || lw.Examples[0].Judgement != guarantee.Forbidden {
		t.Errorf("the forbidden example must come first: %+v", lw.Examples)
	}
	if r.Verdict != "fail" {
		t.Errorf("verdict %s", r.Verdict)
	}
}

func TestEmptyFamiliesShowTheGuaranteeUnderTest(t *testing.T) {
	h := newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
	r := h.check(strict())
	for _, a := range guarantee.Anomalies() {
		e, ok := r.Anomalies[a]
		if !ok {
			t.Errorf("%s missing", a)
			continue
		}
		if e.Count != 0 || e.Why == "" {
			t.Errorf("%s: %+v", a, e)
		}
	}
	if e := r.Anomalies[guarantee.LostWrite]; e.Judgement != guarantee.Forbidden {
		t.Errorf("acks=all lost-write must show as forbidden: %+v", e)
	}
	if e := r.Anomalies[guarantee.UnexpectedAck]; e.Unchecked == "" {
		t.Errorf("unexpected-ack without ISR events must say it was not checked: %+v", e)
	}
	if r.Verdict != "pass" || r.History.Ops != 6 {
		t.Errorf("verdict %s, ops %d", r.Verdict, r.History.Ops)
	}
}

// Examples name the history's own op indices, even when they do not run 0, 1, 2, ….
func TestExamplesUseHistoryIndices(t *testing.T) {
	h := newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.final("t", 0, RU, 0, 0)
	for i := range h.ops {
		h.ops[i].Index = int64(100 + 10*i)
	}
	r := h.check(strict())
	ex := r.Anomalies[guarantee.LostWrite].Examples
	if len(ex) != 1 || !slices.Equal(ex[0].Ops, []int64{100, 110, 130}) {
		t.Errorf("examples %+v", ex)
	}
}

// Results may be taken twice; ops added after are ignored.
func TestResultsTwice(t *testing.T) {
	h := newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.final("t", 0, RU, 0, 0)
	c := New(strict(), Options{})
	for i := range h.ops {
		c.Add(&h.ops[i])
	}
	a, b := c.Results(), c.Results()
	if a.Anomalies[guarantee.LostWrite].Count != 1 || b.Anomalies[guarantee.LostWrite].Count != 1 || b.Verdict != a.Verdict {
		t.Errorf("first %+v, second %+v", a.Anomalies[guarantee.LostWrite], b.Anomalies[guarantee.LostWrite])
	}
	// Were it taken, this late op would be counted and would put 1-1 at a second offset: a
	// duplicate.
	late := newHB()
	late.next = h.next
	late.send(1, rec("t", 0, "1-1"), OK, 7)
	for i := range late.ops {
		c.Add(&late.ops[i])
	}
	after := c.Results()
	if after.History.Ops != a.History.Ops || after.Anomalies[guarantee.Duplicate].Count != 0 ||
		after.Anomalies[guarantee.LostWrite].Count != 1 || after.Verdict != a.Verdict {
		t.Errorf("after a late op: ops %d (was %d), duplicate %+v, lost-write %+v, verdict %s (was %s)",
			after.History.Ops, a.History.Ops, after.Anomalies[guarantee.Duplicate], after.Anomalies[guarantee.LostWrite], after.Verdict, a.Verdict)
	}
}

// A header that states each topic and process (as a run writes it, with no defaults under
// "topic" and "producer") explains the families without findings by those settings, and
// assumes nothing; a header that leaves a setting out names it under assumed, and only it.
func TestWhyCitesTheRunsSettings(t *testing.T) {
	all := kafkaconf.AcksAll
	stated := history.Config{
		Processes: map[int]kafkaconf.ProducerConfig{1: {Delivery: kafkaconf.Delivery{Acks: &all, Idempotence: ptr(true), MaxInFlight: ptr(1), Retries: ptr(3)},
			AppResend: ptr(false)}},
		Topics: map[string]kafkaconf.TopicConfig{"t": {ReplicationFactor: ptr(3), MinInsyncReplicas: ptr(2), UncleanLeaderElection: ptr(false)}},
	}
	h := newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
	r := h.check(stated)
	lw := r.Anomalies[guarantee.LostWrite]
	if lw.Judgement != guarantee.Forbidden || !strings.Contains(lw.Why, "min.insync.replicas=2") ||
		strings.Contains(lw.Why, "min.insync.replicas=1") || strings.Contains(lw.Why, "replication.factor=1") {
		t.Errorf("lost-write without findings: %s: %s", lw.Judgement, lw.Why)
	}
	if len(r.Assumed) != 0 {
		t.Errorf("assumed %q, want nothing: the header states every setting", r.Assumed)
	}

	partial := stated.Clone()
	partial.Topics["t"] = kafkaconf.TopicConfig{ReplicationFactor: ptr(3), UncleanLeaderElection: ptr(false)}
	r = h.check(partial)
	if !slices.Equal(r.Assumed, []string{"topic min.insync.replicas=1"}) {
		t.Errorf("assumed %q, want only the topic's missing min ISR", r.Assumed)
	}
	if lw := r.Anomalies[guarantee.LostWrite]; !strings.Contains(lw.Why, "min.insync.replicas=1") {
		t.Errorf("judged at the assumed min ISR 1: %s", lw.Why)
	}
}
