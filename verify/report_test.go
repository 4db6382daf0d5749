package verify

import (
	"slices"
	"testing"

	"github.com/verity-kafka/verity/verify/guarantee"
)

// A run with an acks=all and an acks=1 producer: one anomaly entry, judged forbidden for the
// first and permitted for the second, with the count split by rule and forbidden examples first.
func TestMixedJudgements(t *testing.T) {
	cfg := strict()
	cfg.Processes = map[string]guarantee.Producer{"2": {Acks: ptr(guarantee.Acks(1))}}
	h := newHB()
	h.send(2, rec("t", 0, "2-1"), OK, 0)
	h.send(2, rec("t", 0, "2-2"), OK, 1)
	h.send(1, rec("t", 0, "1-1"), OK, 2)
	h.final("t", 0, RU, 0, 0)
	r := h.check(cfg)
	lw := r.Anomalies[string(guarantee.LostWrite)]
	if lw.Count != 3 || lw.Forbidden != 1 || lw.Permitted || lw.Judgement != "forbidden" || len(lw.ByRule) != 2 {
		t.Fatalf("lost-write %+v", lw)
	}
	if lw.ByRule[0].Judgement != "forbidden" || lw.ByRule[0].Count != 1 || lw.ByRule[1].Count != 2 {
		t.Errorf("by rule %+v", lw.ByRule)
	}
	if lw.Examples[0].Value != "1-1" || lw.Examples[0].Judgement != "forbidden" {
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
		e, ok := r.Anomalies[string(a)]
		if !ok {
			t.Errorf("%s missing", a)
			continue
		}
		if e.Count != 0 || e.Why == "" {
			t.Errorf("%s: %+v", a, e)
		}
	}
	if e := r.Anomalies[string(guarantee.LostWrite)]; e.Permitted {
		t.Errorf("acks=all lost-write must show as forbidden: %+v", e)
	}
	if e := r.Anomalies[string(guarantee.UnexpectedAck)]; e.Unchecked == "" {
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
	ex := r.Anomalies[string(guarantee.LostWrite)].Examples
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
	c.Add(&h.ops[0])
	if a.Anomalies["lost-write"].Count != 1 || b.Anomalies["lost-write"].Count != 1 || b.Verdict != a.Verdict {
		t.Errorf("first %+v, second %+v", a.Anomalies["lost-write"], b.Anomalies["lost-write"])
	}
}
